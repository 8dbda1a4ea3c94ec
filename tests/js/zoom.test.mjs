// The viewer's zoom arithmetic (static/js/zoom.js), shared by the workspace and the review page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { clamp, FIT, MAX, transform, zoomAt } from "../../static/js/zoom.js";

test("zooming keeps the point under the pointer in place", () => {
  const view = zoomAt(FIT, 0.25, 0.75, 2);
  assert.equal(view.scale, 2);
  // The image point under (0.25, 0.75) is still there: (u - ox) / scale is unchanged.
  assert.equal((0.25 - view.ox) / view.scale, 0.25);
  assert.equal((0.75 - view.oy) / view.scale, 0.75);
});

test("the view never zooms out past the fit or in past the maximum, nor pans past the image's edges", () => {
  assert.deepEqual(zoomAt(FIT, 0.5, 0.5, 0.5), { scale: 1, ox: 0, oy: 0 });
  assert.equal(zoomAt(FIT, 0.5, 0.5, 1000).scale, MAX);
  assert.deepEqual(clamp(2, 0.3, -5), { scale: 2, ox: 0, oy: -1 });
  assert.equal(transform({ scale: 2, ox: -0.5, oy: 0 }), "translate(-50%, 0%) scale(2)");
});
