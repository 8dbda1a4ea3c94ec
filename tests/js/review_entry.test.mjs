// The review page's entry module (static/js/review.js, run as it loads) on a stand-in document laid out as
// frontend_templates/review/detail.html lays it out: the page's data blocks reach the modules (the marks drawn over
// o_τ and o_τ+1, the viewer's screens), the zoom's buttons and keys reach the one zoom, j / k the viewer, the edit form
// reads the action table on load and has the served action checked, the τ typed moves the screens at the top, the
// form's undo puts an edit back, and a live event rebuilds the queue.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Event, fakeFetch, settle, standInDocument } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";

const SIZE = { width: 1000, height: 500, extent: [1000, 1000] };
const mark = (kind, start) => ({ kind, label: kind, type: "click", text: `${kind} click`, extent: [1000, 1000], start });
const screen = (index) => ({ index, title: `Step ${index}`, image: `/shots/${index}.png`, thumb: `/thumbs/${index}.png`,
  size: SIZE, thought: `thought ${index}`, action: `click(${index})`, markers: [mark("original", [index, index])] });
const SERVED_CLICK = { type: "click", args: { start_box: [100, 200] }, style: "box" };

const doc = standInDocument();
const m = doc.make;
const data = (id, value) => m("script", { id }, JSON.stringify(value));
/** A screenshot's frame (its zoom layer and image), ``width`` px wide on the screen. */
const frame = (fields, width = 500) => {
  const layer = m("div", { class: "zoom-layer" }, m("img", { naturalWidth: 1000, id: fields.imageId || "" }));
  layer.rect = { left: 0, top: 0, width, height: width / 2 };
  const node = m("div", { class: "shot-frame", clientWidth: width, ...fields }, layer);
  node.rect = { left: 0, top: 0, width, height: width / 2 };
  return node;
};
const errorFrame = frame({ data: { markers: "error-markers" } });
const reflectionFrame = frame({ data: { markers: "reflection-markers" } });
const viewerFrame = frame({ id: "viewer-frame", imageId: "viewer-image" });
const zoomButtons = ["review-zoom-in", "review-zoom-out", "review-zoom-level", "review-zoom-fit"].map((id) => m("button", { id }));
const details = m("details", { id: "edit-accept", open: true });
const verdict = m("select", { id: "edit-verdict", name: "verdict", value: "error" });
const errorFields = m("div", { id: "edit-error-fields" });
// A refused edit shown again: the form keeps the τ the lead typed (4), not the annotator's (3).
const tauInput = m("input", { id: "edit-tau", name: "tau", value: "4" });
details.append(verdict, errorFields, tauInput, m("button", { id: "edit-undo" }), m("button", { id: "edit-redo" }));
for (const slot of ["corrected", "reflection"]) {
  details.append(m("div", { data: { reviewSlot: slot } }), m("input", { id: `edit-${slot}_action`, name: `${slot}_action`, type: "hidden" }),
    m("span", { data: { legend: slot } }, "served legend"), m("span", { data: { tauScreen: slot } }));
}
const queueBody = m("tbody", { data: { role: "queue-body" } });
doc.body.append(
  ...zoomButtons, errorFrame, reflectionFrame,
  m("nav", { id: "viewer-strip", clientWidth: 300 }), viewerFrame, ...["viewer-title", "viewer-thought", "viewer-action"].map((id) => m("p", { id })),
  details, m("section", { class: "review-section", data: { projectId: "3" } }, queueBody),
  data("error-markers", [mark("original", [250, 500]), mark("corrected", [100, 200])]),
  data("reflection-markers", [mark("reflection", [750, 250])]),
  data("trace-viewer-data", { step_count: 6, has_final: false, tau: 3, window: 10, steps_url: "/api/reviews/7/steps/", screens: [1, 2, 3, 4, 5, 6].map(screen) }),
  data("review-edit-data", {
    check_url: "/api/reviews/7/check/", table_url: "/api/actions/table/", platform: "desktop", tau: 3,
    screens: { corrected: SIZE, reflection: SIZE },
    slots: { corrected: { action: SERVED_CLICK, canonical: "click(start_box='(100,200)')" }, reflection: { action: null, canonical: "" } },
  }),
);
// The action table is answered once a test lets it (``serveTable``): what the page does before it comes is seen.
let serveTable;
const tableServed = new Promise((resolve) => { serveTable = resolve; });
const sent = fakeFetch(async (method, url, body) => {
  if (url === "/api/actions/table/") { await tableServed; return [200, TABLE]; }
  if (url === "/api/reviews/7/check/") return [200, { canonical: body.action ? `${body.action.type}(checked)` : "", errors: [], valid: true }];
  if (url.startsWith("/api/reviews/?")) return [200, { results: [] }];
  return [404, {}];
});

await import("../../static/js/review.js");

/** The marks drawn in ``node``'s zoom layer: each one's title. */
const marksIn = (node) => node.querySelectorAll(".marker").map((n) => n.title);
const press = (key, code) => {
  const event = new Event("keydown", { key, code, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false });
  doc.body.dispatchEvent(event);
  return event.defaultPrevented;
};

test("the marks in the page's data blocks are drawn over their screenshots; the viewer opens on τ's screen", () => {
  assert.deepEqual(marksIn(errorFrame), ["original: original click", "corrected: corrected click"]);
  assert.deepEqual(marksIn(reflectionFrame), ["reflection: reflection click"]);
  assert.deepEqual(doc.getElementById("viewer-strip").children.map((b) => b.textContent), ["1", "2", "3", "4", "5", "6"]);
  assert.equal(doc.getElementById("viewer-title").textContent, "Step 3");
  assert.equal(doc.getElementById("viewer-image").src, "/shots/3.png");
  assert.deepEqual(marksIn(viewerFrame), ["original: original click"]);
});

test("on load the edit form reads the action table, then has the served action checked and shows the screens of the τ typed", async () => {
  assert.deepEqual(sent, [["GET", "/api/actions/table/", undefined]]);
  assert.equal(details.dataset.tauShown, undefined);
  serveTable();
  await settle();
  assert.equal(details.dataset.ready, "1");
  assert.equal(details.dataset.tauShown, "4");
  assert.equal(doc.querySelector("[data-tau-screen=corrected]").textContent, "step 4");
  assert.equal(errorFrame.querySelector("img").src, "/shots/4.png");
  await settle(150);
  assert.deepEqual(sent.slice(1), [["POST", "/api/reviews/7/check/", { slot: "corrected", action: SERVED_CLICK, tau: 4 }]]);
  assert.equal(doc.getElementById("edit-corrected_action").value, "click(checked)");
  // The editors were drawn from the table into their slots.
  assert.ok(doc.querySelector("[data-review-slot=corrected]").childElementCount > 0);
});

test("the zoom's buttons and keys move every screenshot alike; j and k step the viewer", async () => {
  assert.equal(window.reviewZoom().scale, 1);
  zoomButtons[0].click();
  const zoomed = window.reviewZoom().scale;
  assert.ok(zoomed > 1, String(zoomed));
  assert.equal(press("-", "Minus"), true);
  assert.ok(window.reviewZoom().scale < zoomed);
  zoomButtons[3].click();
  assert.equal(window.reviewZoom().scale, 1);
  assert.equal(press("+", "Equal"), true);
  assert.ok(window.reviewZoom().scale > 1);
  zoomButtons[3].click();
  press("j", "KeyJ");
  await settle();
  assert.equal(doc.getElementById("viewer-title").textContent, "Step 4");
  await window.reviewShowScreen(0);
  assert.equal(doc.getElementById("viewer-title").textContent, "Step 1");
  assert.deepEqual(sent.filter(([, url]) => url.startsWith("/api/reviews/7/steps/")), []);  // the page carries every screen
});

test("a τ typed shows its screens at the top; a changed τ has both actions checked again, and undo puts it back", async () => {
  sent.length = 0;
  tauInput.value = "5";
  tauInput.dispatchEvent(new Event("input"));
  await settle();
  assert.equal(details.dataset.tauShown, "5");
  tauInput.dispatchEvent(new Event("change"));
  await settle(150);
  assert.deepEqual(sent.map(([method, url, body]) => [method, url, body.slot, body.tau]),
    [["POST", "/api/reviews/7/check/", "corrected", 5], ["POST", "/api/reviews/7/check/", "reflection", 5]]);
  const undo = doc.getElementById("edit-undo");
  assert.equal(undo.disabled, false);
  undo.click();
  assert.equal(tauInput.value, "4");
  await settle();
  assert.equal(details.dataset.tauShown, "4");  // the undo's restore has the screens follow the τ put back
});

test("a live event about an annotation rebuilds the queue", async () => {
  sent.length = 0;
  doc.dispatchEvent(new Event("studio:live", { detail: { type: "annotation", id: 7 } }));
  await settle();
  assert.deepEqual(sent, [["GET", "/api/reviews/?status=submitted&project=3", undefined]]);
  assert.equal(queueBody.textContent, "Nothing waiting for review.");
});
