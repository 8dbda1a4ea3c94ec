// The viewer's zoom arithmetic (static/js/zoom.js), shared by the workspace and the review page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { actualSize, BUTTON_STEP, clamp, FIT, levelText, MAX, percentOf, transform, wheelFactor, WHEEL_STEP, zoomAt } from "../../static/js/zoom.js";

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

test("a wheel notch zooms by at most a quarter: three notches from fit stay under 2×", () => {
  let view = FIT;
  for (let i = 0; i < 3; i++) view = zoomAt(view, 0.5, 0.5, wheelFactor(-240, 0));
  assert.ok(Math.abs(view.scale - WHEEL_STEP ** 3) < 1e-9);
  assert.equal(wheelFactor(10, 1), 1 / WHEEL_STEP);  // ten lines down: still a quarter
  assert.ok(wheelFactor(-4, 0) > 1 && wheelFactor(-4, 0) < 1.01);  // a trackpad's small delta: a small step
});

test("100 % is the screenshot's own pixels, fit is separate", () => {
  // A 1920-pixel screenshot in a 960-pixel frame: fitted it is at 50 %; 1:1 is twice the fit.
  assert.equal(percentOf(FIT, 960, 1920), 50);
  assert.equal(actualSize(FIT, 960, 1920).scale, 2);
  assert.equal(percentOf(actualSize(FIT, 960, 1920), 960, 1920), 100);
  // A phone screenshot smaller than its frame stays fitted (never zoomed below the fit).
  assert.equal(actualSize(FIT, 960, 720).scale, 1);
  assert.equal(percentOf({ scale: 1, ox: 0, oy: 0 }, 0, 720), null);
});

test("the level button's words: the percentage of the screenshot's pixels, Fit while unmeasured", () => {
  assert.equal(levelText(FIT, 775, 1920), "40 %");
  assert.equal(levelText(actualSize(FIT, 775, 1920), 775, 1920), "100 %");
  assert.equal(levelText(FIT, 0, 1920), "Fit");
  // A button press is a bigger step than a wheel notch, both ways.
  assert.ok(BUTTON_STEP > WHEEL_STEP);
  assert.equal(zoomAt(FIT, 0.5, 0.5, BUTTON_STEP).scale, BUTTON_STEP);
});
