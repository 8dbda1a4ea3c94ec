// The one coordinate form (static/js/geometry.js): points in the project's convention, screenshots with their
// pixel size and extent. Run by tests/serving/test_js_units.py (node --test).
import { test } from "node:test";
import assert from "node:assert/strict";
import { boxOf, boxToPx, elementAt, fractionToModel, inBox, isEmptyBox, pixelAt, toFraction, toModel, toPx }
  from "../../static/js/geometry.js";

const relative = { width: 1920, height: 1080, extent: [1000, 1000] };
const pixels = { width: 1280, height: 800, extent: [1280, 800] };
const resized = { width: 1920, height: 1080, extent: [1932, 1092] };  // a smart-resized extent

test("a point in the convention lands on its pixel", () => {
  assert.deepEqual(toPx(relative, [500, 250]), [960, 270]);
  assert.deepEqual(toPx(pixels, [17, 33]), [17, 33]);
  assert.deepEqual(toPx(resized, [1932, 1092]), [1920, 1080]);
});

test("pixels become integer points, ties to even as the grammar rounds", () => {
  // 0.5 → 0 and 2.5 → 2, 1.5 → 2 and 3.5 → 4 (traces.grammar.model_number: Python's round(), half to even).
  assert.deepEqual(toModel({ width: 1000, height: 1000, extent: [1000, 1000] }, [0.5, 2.5]), [0, 2]);
  assert.deepEqual(toModel({ width: 1000, height: 1000, extent: [1000, 1000] }, [1.5, 3.5]), [2, 4]);
  assert.deepEqual(toModel(pixels, [10.5, 799.49]), [10, 799]);
  assert.deepEqual(toModel(pixels, [11.5, 0.51]), [12, 1]);
  assert.deepEqual(toModel(relative, [960, 270]), [500, 250]);
  // 1 px of a 1920-px screen is 0.52 of relative-1000: 0.52 → 1
  assert.deepEqual(toModel(relative, [1, 0]), [1, 0]);
});

test("a placed point survives the round trip within half a unit", () => {
  for (const shot of [relative, pixels, resized]) {
    for (const p of [[0, 0], [1, 1], [333, 777], [shot.extent[0], shot.extent[1]]]) {
      const back = toModel(shot, toPx(shot, p));
      assert.deepEqual(back, p, `${JSON.stringify(shot)} ${p}`);
    }
  }
});

test("fractions of the image, both ways", () => {
  assert.deepEqual(toFraction(relative, [250, 500]), [0.25, 0.5]);
  assert.deepEqual(fractionToModel(relative, [0.25, 0.5]), [250, 500]);
  assert.deepEqual(fractionToModel(pixels, [0.5, 0.5]), [640, 400]);
});

test("the pixel under the pointer is measured on the transformed layer and clamped to the image", () => {
  const rect = { left: 100, top: 50, width: 640, height: 400 };  // a 1280 × 800 shot at half size
  assert.deepEqual(pixelAt(rect, pixels, 420, 250), [640, 400]);
  assert.deepEqual(pixelAt(rect, pixels, 0, 0), [0, 0]);
  assert.deepEqual(pixelAt(rect, pixels, 5000, 5000), [1280, 800]);
  const zoomed = { left: -540, top: -350, width: 2560, height: 1600 };  // the same layer at zoom 4
  assert.deepEqual(pixelAt(zoomed, pixels, 100, 50), [320, 200]);
});

test("boxes: corners in any order, empty boxes, containment", () => {
  assert.deepEqual(boxOf([30, 40], [10, 20]), [10, 20, 30, 40]);
  assert.equal(isEmptyBox([10, 20, 10, 40]), true);
  assert.equal(isEmptyBox([10, 20, 11, 40]), false);
  assert.equal(inBox([10, 20, 30, 40], [10, 40]), true);
  assert.equal(inBox([10, 20, 30, 40], [31, 30]), false);
  assert.equal(inBox(undefined, [0, 0]), false);
  assert.deepEqual(boxToPx(relative, [0, 0, 500, 1000]), [0, 0, 960, 1080]);
});

test("the element under a pixel is the innermost one", () => {
  const elements = [{ box: [0, 0, 1000, 1000] }, { box: [100, 100, 300, 300] }, { box: [150, 150, 200, 200] }];
  assert.equal(elementAt(elements, relative, toPx(relative, [175, 175])), 2);
  assert.equal(elementAt(elements, relative, toPx(relative, [120, 120])), 1);
  assert.equal(elementAt(elements, relative, toPx(relative, [900, 900])), 0);
  assert.equal(elementAt(elements.slice(1), relative, toPx(relative, [900, 900])), null);
  assert.equal(elementAt(undefined, relative, [0, 0]), null);
});

test("a pixel becomes the point the server's grammar computes from it", async () => {
  const { GRAMMAR_POINTS } = await import("./served.mjs");
  assert.ok(GRAMMAR_POINTS.length > 100);
  for (const { shot, px, point } of GRAMMAR_POINTS) assert.deepEqual(toModel(shot, px), point, JSON.stringify({ shot, px }));
});
