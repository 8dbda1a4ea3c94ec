// The review page's one zoom for every screenshot (static/js/review/zoom.js createReviewZoom) on a stand-in document:
// the buttons' steps move every frame's layer alike, the level reads the screenshot's own pixels on the frame last
// zoomed, and the marks' labels are measured again once a zoom settles.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createReviewZoom } from "../../static/js/review/zoom.js";
import { Event, settle, standInDocument } from "./stand_in_dom.mjs";

/** Two frames (o_τ, o_τ+1), each a .zoom-layer holding its screenshot, ``width`` px wide on the screen. */
function page(widths = [960, 480], naturalWidth = 1920) {
  const doc = standInDocument();
  const frames = widths.map((width) => {
    const img = doc.make("img", { naturalWidth });
    const frame = doc.make("div", { class: "shot-frame", clientWidth: width }, doc.make("div", { class: "zoom-layer" }, img));
    frame.rect = { left: 0, top: 0, width, height: width / 2 };
    doc.body.append(frame);
    return frame;
  });
  const levelButton = doc.make("button"), fitButton = doc.make("button");
  const relabelled = [];
  const zoom = createReviewZoom({ frames, levelButton, fitButton, relabel: (frame) => relabelled.push(frames.indexOf(frame)) });
  const layers = frames.map((frame) => frame.querySelector(".zoom-layer"));
  return { doc, frames, layers, levelButton, fitButton, relabelled, zoom };
}

test("fitted at the start: the level is the first frame's share of the screenshot's pixels, Fit pressed", () => {
  const { levelButton, fitButton, zoom } = page();
  assert.equal(zoom.any, true);
  assert.deepEqual(zoom.view(), { scale: 1, ox: 0, oy: 0 });
  assert.equal(levelButton.textContent, "50 %");
  assert.equal(fitButton.getAttribute("aria-pressed"), "true");
});

test("a button's step zooms every frame alike about the centre; the labels are measured again once, when it settles", async () => {
  const { frames, layers, levelButton, fitButton, relabelled, zoom } = page();
  zoom.zoomIn();
  zoom.zoomIn();
  const view = zoom.view();
  assert.equal(view.scale, 2.25);
  assert.ok(Math.abs(view.ox - (0.5 - 0.5 * 2.25)) < 1e-9 && Math.abs(view.oy - view.ox) < 1e-9, JSON.stringify(view));
  for (const layer of layers) {
    assert.equal(layer.style.transform, `translate(${view.ox * 100}%, ${view.oy * 100}%) scale(2.25)`);
    assert.equal(layer.style["--zoom"], "2.25");  // marks keep their size on screen
  }
  assert.deepEqual(frames.map((f) => f.classList.contains("zoomed")), [true, true]);
  assert.equal(levelButton.textContent, "113 %");
  assert.equal(fitButton.getAttribute("aria-pressed"), "false");
  assert.deepEqual(relabelled, []);
  await settle(150);
  assert.deepEqual(relabelled, [0, 1]);  // two steps, one measuring

  zoom.view().scale = 7;  // a copy: the page's view is not changed through it
  assert.equal(zoom.view().scale, 2.25);
  zoom.zoomOut();
  assert.equal(zoom.view().scale, 1.5);
  zoom.fit();
  assert.deepEqual(zoom.view(), { scale: 1, ox: 0, oy: 0 });
  assert.deepEqual(frames.map((f) => f.classList.contains("zoomed")), [false, false]);
  assert.equal(layers[1].style.transform, "translate(0%, 0%) scale(1)");
  assert.equal(fitButton.getAttribute("aria-pressed"), "true");
});

test("100 % shows the screenshot's own pixels, measured on the frame last zoomed", () => {
  const { frames, levelButton, zoom } = page();
  zoom.actualSize();
  assert.equal(zoom.view().scale, 2);  // 1920 px in 960
  assert.equal(levelButton.textContent, "100 %");
  // A wheel notch over the second frame (480 px wide): from then on the level and 100 % are read on it.
  frames[1].dispatchEvent(new Event("wheel", { clientX: 240, clientY: 120, deltaY: 0, deltaMode: 0 }));
  assert.equal(levelButton.textContent, "50 %");  // scale 2 of a 480-px fit of 1920 px
  zoom.actualSize();
  assert.equal(zoom.view().scale, 4);
  assert.equal(levelButton.textContent, "100 %");
});

test("before any screenshot has loaded the level says Fit and 100 % waits; a loaded image shows the level", () => {
  const { frames, levelButton, zoom } = page([960, 480], 0);
  assert.equal(levelButton.textContent, "Fit");
  zoom.actualSize();
  assert.deepEqual(zoom.view(), { scale: 1, ox: 0, oy: 0 });
  const img = frames[1].querySelector("img");
  img.naturalWidth = 960;
  img.dispatchEvent(new Event("load"));
  assert.equal(levelButton.textContent, "50 %");  // the first frame has no image yet: the second is read
  frames[1].hidden = true;
  window.dispatchEvent(new Event("resize"));
  assert.equal(levelButton.textContent, "Fit");  // a hidden frame is not measured
});

test("a page without screenshots or level buttons: nothing to zoom, and the steps break nothing", () => {
  standInDocument();
  const zoom = createReviewZoom({ frames: [], levelButton: null, fitButton: null, relabel: () => assert.fail("no frame") });
  assert.equal(zoom.any, false);
  zoom.zoomIn();
  zoom.actualSize();
  assert.equal(zoom.view().scale, 1.5);
});
