// The workspace's stage (static/js/workspace/stage.js createStage) on a stand-in document with the real steps and
// stand-ins for the modules it calls: the screenshot panes with their overlays (the recorded action, the correction,
// the alternatives), where a click places the correction's point or snaps its box to a recorded element, a box drawn
// with Shift+drag, the one zoom of every pane, the strip of every screen, and stepping (a far step read first).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createStage } from "../../static/js/workspace/stage.js";
import { createSteps } from "../../static/js/workspace/steps.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { pickFields } from "../../static/js/workspace/autosave.js";
import * as Editor from "../../static/js/action_editor.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";

const shot = (i) => ({ url: `/shots/${i}.png`, thumb: `/thumbs/${i}.png`, width: 1000, height: 500, extent: [1000, 1000] });
const click = (x, y) => ({ type: "click", args: { start_box: [x, y] }, style: "box" });
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };
// Steps 1 to 3 come with the page (step 2 without a screenshot); step 4 is read when asked for; the final screen kept.
const STEP = (index) => ({ index, shot: index === 2 ? null : shot(index), actions: [click(100 * index, 100)],
  elements: index === 3 ? [{ box: [100, 200, 300, 600] }] : [] });

function workspace({ current = 3, fields = {}, corrected = null, strip = null, editable = true } = {}) {
  const doc = standInDocument();
  const m = doc.make;
  const root = m("div", { id: "ws" });
  doc.body.append(root, m("div", { id: "ws-stage" }), m("div", { id: "ws-strip" }), m("p", { id: "ws-place-hint" }),
    m("button", { id: "ws-zoom-level" }), m("button", { id: "ws-zoom-fit" }),
    m("div", { class: "ws-side" }, m("div", { class: "ws-panel" }, m("h2", { id: "ws-step-num" }))));
  const observed = { resize: [], seen: [], images: [] };
  globalThis.ResizeObserver = class { constructor(fn) { this.fn = fn; observed.resize.push(this); } observe(node) { this.node = node; } };
  globalThis.IntersectionObserver = class { constructor(fn) { observed.seenFn = fn; } observe(node) { observed.seen.push(node); } unobserve(node) { observed.seen = observed.seen.filter((n) => n !== node); } };
  globalThis.Image = class { set src(url) { observed.images.push(url); } };
  const sent = [];
  globalThis.fetch = async (url, init) => {
    sent.push([init.method, url]);
    return { status: 200, json: async () => ({ steps: [STEP(4)] }) };
  };
  const steps = createSteps({ initial: [1, 2, 3].map(STEP), count: 4, finalShot: shot(5), size: 50, url: "/api/annotations/7/steps/",
    loaded: (first, last) => stage.stepsLoaded(first, last), failed: () => {} });
  const store = createWorkspaceState({ current, table: TABLE, form: pickFields({ verdict: "error", tau: 3, editor_state: { corrected }, ...fields }) });
  const calls = [];
  const record = (name) => (...args) => { calls.push([name, ...args]); };
  let dirty = false;
  const stage = createStage({
    page: { root, editable: () => editable, traceId: 11, strip },
    store, steps,
    editor: {
      slotAt: (i) => (i === 3 ? "corrected" : i === 4 ? "reflection" : null),
      pointArgsOf: (type) => Editor.pointArgs(TABLE, type),
      takesBox: (action) => Editor.pointArgs(TABLE, action.type).some((a) => a.name === "start_box"),
      snaps: (action) => action.type === "click",
      placePoint: record("placePoint"), setTargetBox: record("setTargetBox"), drawBox: record("drawBox"), clearBox: record("clearBox"),
    },
    draft: { dirty: () => dirty, save: record("save") },
    drawAlternatives: (index, draw) => { if (index === 3) draw(click(900, 900), "alt", { label: "1" }); },
    undoable: (label, change) => { calls.push(["undoable", label]); return change(); },
    hooks: { renderStep: () => { calls.push(["renderStep"]); stage.renderStage(); } },
  });
  const $ = (id) => doc.getElementById(id);
  /** The pane's frame and its zoom layer, laid out 500 × 250 px at (0, 0). */
  const layout = () => {
    for (const frame of $("ws-stage").querySelectorAll(".ws-frame")) {
      frame.clientWidth = 500;
      frame.rect = { left: 0, top: 0, width: 500, height: 250 };
      frame.querySelector(".ws-zoom").rect = { left: 0, top: 0, width: 500, height: 250 };
    }
  };
  const marks = (frame) => frame.querySelectorAll("g.mark").map((g) => g.className);
  return { doc, root, store, stage, steps, calls, sent, observed, $, layout, marks, setDirty: (on) => { dirty = on; } };
}

test("a screen's pane: its screenshot with the recorded action, the correction and the alternatives drawn over it", () => {
  const { stage, $, marks, doc } = workspace({ corrected: click(500, 500) });
  stage.renderStage();
  const [pane] = $("ws-stage").children;
  assert.equal(pane.querySelector("figcaption").textContent, "o₃ · step 3");
  const img = pane.querySelector("img");
  assert.deepEqual([img.src, img.alt, img.width, img.height], ["/shots/3.png", "screenshot of step 3", 1000, 500]);
  const frame = pane.querySelector(".ws-frame");
  assert.deepEqual([frame.classList.contains("placing"), frame.dataset.slot], [true, "corrected"]);
  assert.deepEqual(marks(frame), ["mark recorded", "mark alt", "mark fix"]);  // the correction on top
  assert.equal($("ws-place-hint").textContent, "\u00a0");  // placed: the hint keeps its room
  assert.equal(doc.querySelector(".ws-side").classList.contains("correcting"), true);
  assert.equal($("ws-zoom-level").textContent, "Fit");  // not laid out yet
});

test("a screen without a screenshot, the compare view, the screens after τ + 1 dimmed, the overlay turned off", async () => {
  const { stage, $, store, marks } = workspace({ current: 2 });
  stage.renderStage();
  assert.equal($("ws-stage").querySelector(".ws-missing").textContent, "No screenshot was recorded for this step.");
  store.set("compare", true);
  stage.renderStage();
  const panes = $("ws-stage").children;
  assert.deepEqual(panes.map((p) => p.querySelector("figcaption").textContent), ["o₂ · step 2", "o₃ · step 3"]);
  assert.deepEqual(marks(panes[1].querySelector(".ws-frame")), ["mark alt"]);  // o_i+1 beside: the recorded action is o_i's
  assert.equal($("ws-stage").classList.contains("compare"), true);
  assert.equal($("ws-place-hint").hidden, true);  // no correction on step 2
  store.set("current", 5);
  store.set("overlay", false);
  stage.renderStage();
  assert.equal($("ws-stage").classList.contains("dimmed"), true);
  assert.equal($("ws-stage").children[0].querySelector("figcaption").textContent, "o₅ · final screen");
  assert.deepEqual(marks($("ws-stage").querySelector(".ws-frame")), []);
});

test("a click places the correction's point in the convention; over a recorded element outside the box, a click's box snaps to it", () => {
  const { stage, $, layout, calls, store } = workspace({ corrected: { type: "click", args: {}, style: "box" } });
  stage.renderStage();
  layout();
  const frame = $("ws-stage").querySelector(".ws-frame");
  store.set("cursor", { slot: "corrected", px: [1, 1] });
  frame.dispatchEvent(new Event("click", { clientX: 400, clientY: 200 }));  // (800, 400) px: no element there
  assert.deepEqual(calls, [["placePoint", "corrected", [800, 800]]]);
  assert.equal(store.get("cursor"), null);  // a click ends a keyboard placement
  frame.dispatchEvent(new Event("click", { clientX: 100, clientY: 100 }));  // (200, 200) px: on the recorded element
  assert.deepEqual(calls.at(-1), ["setTargetBox", "corrected", [100, 200, 300, 600]]);
  store.get("form").editor_state.corrected.target_box = [100, 200, 300, 600];
  frame.dispatchEvent(new Event("click", { clientX: 100, clientY: 100 }));  // inside the box now: the point moves
  assert.deepEqual(calls.at(-1), ["placePoint", "corrected", [200, 400]]);
});

test("Shift+drag draws the element box; a drag without Shift pans the one zoom of every pane", async () => {
  const { stage, $, layout, calls, store } = workspace({ corrected: click(500, 500) });
  stage.renderStage();
  layout();
  const frame = $("ws-stage").querySelector(".ws-frame");
  const pointer = (type, x, y, extra = {}) => frame.dispatchEvent(new Event(type, { pointerId: 1, button: 0, clientX: x, clientY: y, ...extra }));
  pointer("pointerdown", 50, 50, { shiftKey: true });
  pointer("pointermove", 150, 100);
  assert.equal(frame.querySelector(".ws-box-draft").getAttribute("width"), "200");  // drawn as it is dragged
  pointer("pointerup", 200, 150);
  assert.deepEqual(calls, [["drawBox", "corrected", { ...SHOT3 }, [100, 100], [400, 300]]]);
  frame.dispatchEvent(new Event("click", { clientX: 200, clientY: 150 }));  // the click that ends the drag places nothing
  assert.equal(calls.length, 1);
  stage.zoomAt(0.5, 0.5, 2);
  pointer("pointerdown", 100, 100);
  pointer("pointermove", 150, 100);
  pointer("pointerup", 150, 100);
  assert.deepEqual(store.get("zoom"), { scale: 2, ox: -0.4, oy: -0.5 });
  assert.equal($("ws-stage").querySelector(".ws-zoom").style.transform, "translate(-40%, -50%) scale(2)");
  await new Promise((resolve) => setTimeout(resolve, 150));  // the zoom settles within this test
});
const SHOT3 = shot(3);

test("the zoom: one view for every pane, its level read on the first, 100 % the screenshot's own pixels", async () => {
  const { stage, $, layout, store, steps, observed } = workspace();
  await steps.loadAround(4);
  store.set("compare", true);
  stage.renderStage();
  layout();
  // Laid out, each pane's overlay is drawn again for its size on the screen; a notice without a new width does not.
  const overlay = () => $("ws-stage").querySelector(".ws-overlay");
  const before = overlay();
  observed.resize.at(-2).fn();
  const after = overlay();
  assert.notEqual(after, before);
  observed.resize.at(-2).fn();
  assert.equal(overlay(), after);
  stage.zoomAt(0.5, 0.5, 1.5);
  assert.deepEqual($("ws-stage").querySelectorAll(".ws-zoom").map((v) => v.style.transform), Array(2).fill("translate(-25%, -25%) scale(1.5)"));
  assert.equal($("ws-zoom-level").textContent, "75 %");
  assert.equal($("ws-zoom-fit").getAttribute("aria-pressed"), "false");
  assert.equal($("ws-stage").classList.contains("zoomed"), true);
  stage.zoomActual();
  assert.equal(store.get("zoom").scale, 2);
  assert.equal($("ws-zoom-level").textContent, "100 %");
  assert.deepEqual(window.wsZoom(), store.get("zoom"));
  stage.zoomReset();
  assert.deepEqual(store.get("zoom"), { scale: 1, ox: 0, oy: 0 });
  await new Promise((resolve) => setTimeout(resolve, 150));  // settled: the overlays redrawn at their size on screen
});

test("the keyboard cursor is drawn on its slot's screen and kept in view when zoomed; the hover outlines an element", () => {
  const { stage, $, layout, store } = workspace({ corrected: click(500, 500) });
  store.set("zoom", { scale: 2, ox: 0, oy: 0 });
  store.set("cursor", { slot: "corrected", px: [900, 400], element: 0, anchor: [100, 100] });
  stage.keepCursorInView();
  assert.deepEqual(store.get("zoom"), { scale: 2, ox: -1, oy: -1 });  // centred on it, as far as the image goes
  stage.renderStage();
  layout();
  const frame = $("ws-stage").querySelector(".ws-frame");
  assert.ok(frame.querySelector("g.ws-cursor"));
  assert.ok(frame.querySelector(".ws-element-hover"), "the element the cursor jumped to is outlined");
  assert.ok(frame.querySelector(".ws-box-draft"), "the box being drawn from the keyboard");
  stage.showCursorLoupe();
  assert.equal(frame.querySelector(".ws-loupe").hidden, false);
  // The hint labels: on the recorded elements (the typed part dimmed), or the view's nine cells.
  store.set("cursor", { slot: "corrected", px: [500, 250], hints: { kind: "elements", items: [{ label: "as", element: 0 }, { label: "d", element: 0 }], typed: "a" } });
  stage.renderStage();
  const labels = $("ws-stage").querySelectorAll(".ws-hint");
  assert.deepEqual(labels.map((g) => [g.dataset.label, g.dataset.element, g.querySelector(".ws-hint-typed").textContent, g.textContent]), [["as", "0", "A", "AS"]]);
  store.set("cursor", { slot: "corrected", px: [500, 250], hints: { kind: "cells", items: [{ label: "1", at: [0.25, 0.25], range: [[0, 0.5], [0, 0.5]] }], typed: "" } });
  stage.renderStage();
  assert.equal($("ws-stage").querySelectorAll(".ws-hint-cell").length, 1);
  assert.equal($("ws-stage").querySelector(".ws-hint").dataset.label, "1");
  store.set("cursor", null);
  stage.renderStage();
  layout();
  const again = $("ws-stage").querySelector(".ws-frame");
  again.dispatchEvent(new Event("pointermove", { pointerId: 1, clientX: 100, clientY: 100 }));
  assert.ok(again.querySelector(".ws-element-hover"), "the element under the pointer is outlined");
  assert.equal(again.querySelector(".ws-loupe").hidden, false);
  again.dispatchEvent(new Event("pointerleave", { pointerId: 1 }));
  assert.equal(again.querySelector(".ws-loupe").hidden, true);
  assert.equal(again.querySelector(".ws-element-hover"), null);
});

test("the strip: a button for every screen with its thumbnail, the marks the server gave, τ and the screen shown", async () => {
  const { stage, $, store, observed, sent } = workspace({ current: 1, strip: { without_shot: [2], off_screen: [3], gaps: { 3: { missing_before: 2, missing_before_words: "2 steps" } } } });
  stage.renderStrip();
  const strip = $("ws-strip");
  const thumbs = strip.querySelectorAll("button.ws-thumb");
  assert.deepEqual(thumbs.map((b) => b.querySelector(".ws-thumb-num").textContent), ["1", "2", "3", "4", "end"]);
  assert.deepEqual(thumbs.map((b) => (b.querySelector("img") ? b.querySelector("img").src : b.querySelector(".ws-thumb-missing") ? "—" : null)),
    ["/thumbs/1.png", "—", "/thumbs/3.png", null, "/thumbs/5.png"]);
  assert.equal(strip.querySelector(".ws-gap-mark").textContent, "⋯ 2");
  assert.ok(thumbs[2].querySelector(".ws-off-screen-mark"));
  assert.deepEqual(thumbs.map((b) => [b.classList.contains("tau"), b.classList.contains("after-tau"), b.getAttribute("aria-current")]),
    [[false, false, "step"], [false, false, null], [true, false, null], [false, true, null], [false, true, null]]);
  assert.equal(strip.style["--ws-thumb-aspect"], "2");  // every box the first screenshot's shape, filled or not
  assert.deepEqual(observed.seen, [thumbs[3]]);  // step 4's thumbnail waits for its window
  observed.seenFn([{ isIntersecting: true, target: thumbs[3] }]);
  await settle();
  assert.deepEqual(sent, [["GET", "/api/annotations/7/steps/?first=1&last=4"]]);
  assert.equal(thumbs[3].querySelector("img").src, "/thumbs/4.png");
  thumbs[1].click();
  assert.equal(store.get("current"), 2);
  stage.renderStrip();
  assert.deepEqual(thumbs.map((b) => b.getAttribute("aria-current")), [null, "step", null, null, null]);
});

test("stepping: saved first when moving, the step drawn and the neighbours' screenshots read ahead; a far step read first", async () => {
  const { stage, store, calls, observed, setDirty, root, sent } = workspace({ current: 1 });
  setDirty(true);
  stage.goTo(3);
  assert.equal(store.get("current"), 3);
  assert.deepEqual(calls.slice(0, 2), [["save"], ["renderStep"]]);
  assert.deepEqual(observed.images, ["/shots/5.png"]);  // the screens beside with a screenshot here: o₄ is not yet
  stage.goTo(99);  // clamped to the last screen: the final one
  assert.equal(store.get("current"), 5);
  stage.goTo(4);  // its window is read first
  assert.equal(root.dataset.loadingStep, "4");
  assert.equal(store.get("current"), 5);
  await settle();
  assert.equal(store.get("current"), 4);
  assert.equal(root.dataset.loadingStep, undefined);
  assert.equal(sent.length, 1);
  document.dispatchEvent(new Event("workspace:goto", { detail: { index: 1 } }));
  assert.equal(store.get("current"), 1);
});

test("each drawing tells pre-scoring the step shown; a point outside its box says so and offers to clear the box", () => {
  const { stage, $, doc, calls } = workspace({ corrected: { ...click(50, 50), target_box: [100, 200, 300, 600] } });
  const told = [];
  doc.addEventListener("workspace:step", (event) => told.push([event.detail.traceId, event.detail.index, event.detail.stepCount]));
  stage.renderStage();
  stage.announceStep();
  assert.deepEqual(told, [[11, 3, 4]]);
  assert.equal($("ws-place-hint").classList.contains("ws-place-warning"), true);
  $("ws-hint-clear-box").click();
  assert.deepEqual(calls, [["undoable", "Cleared the element box"], ["clearBox", "corrected"]]);
  const readOnly = workspace({ editable: false, corrected: click(1, 1) });
  readOnly.stage.renderStage();
  assert.equal(readOnly.$("ws-stage").querySelector(".ws-frame").classList.contains("placing"), false);
  assert.equal(readOnly.$("ws-place-hint").hidden, true);
});
