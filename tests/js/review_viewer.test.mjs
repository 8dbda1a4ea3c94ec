// The whole trace on a review page (static/js/review/viewer.js createViewer) on a stand-in document: the strip's
// numbered buttons, the screen shown with its title, thought, action and marks, the windows of screens read from the
// server when the page lacks them (each once, the final screen with the last step's), and what a refused window says.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createViewer } from "../../static/js/review/viewer.js";
import { fakeFetch, settle, standInDocument } from "./stand_in_dom.mjs";

/** The server's screen of step ``index`` (annotation.review.selectors), ``fields`` over it. */
const screen = (index, fields = {}) => ({
  index, title: index === 11 ? "Final screen" : `Step ${index}`, image: `/shots/${index}.png`, thumb: `/thumbs/${index}.png`,
  size: { width: 1000, height: 500, extent: [1000, 1000] }, thought: `thought ${index}`, action: `click(${index})`,
  markers: [{ kind: "original", label: "original", type: "click", text: `click(${index})`, extent: [1000, 1000], start: [index, index] }],
  ...fields,
});

/** A ten-step trace with its final screen and τ at 3; the page carries steps 1 to 5. */
function page({ data = {}, answer = (_, url) => [200, { screens: served(url) }] } = {}) {
  const doc = standInDocument();
  const strip = doc.make("div", { id: "viewer-strip", clientWidth: 300 });
  const frame = doc.make("div", { id: "viewer-frame" }, doc.make("img", { id: "viewer-image" }));
  doc.body.append(strip, frame, ...["viewer-title", "viewer-thought", "viewer-action"].map((id) => doc.make("p", { id })));
  const sent = fakeFetch(answer);
  const drawn = [];
  const viewer = createViewer({
    data: { step_count: 10, has_final: true, tau: 3, window: 4, steps_url: "/api/reviews/7/steps/", screens: [1, 2, 3, 4, 5].map((i) => screen(i, i === 3 ? { is_tau: true } : {})), ...data },
    strip, frame, drawMarkers: (node, markers) => drawn.push([node, markers.map((m) => m.text)]),
  });
  const text = (id) => doc.getElementById(id).textContent;
  const shownNow = () => ({ title: text("viewer-title"), thought: text("viewer-thought"), action: text("viewer-action"), hidden: frame.hidden });
  return { doc, strip, frame, sent, drawn, viewer, shownNow, image: doc.getElementById("viewer-image") };
}

/** The screens of the window ``url`` asks for. */
function served(url) {
  const query = new URL(url, "http://studio").searchParams;
  const screens = [];
  for (let i = Number(query.get("first")); i <= Number(query.get("last")); i++) screens.push(screen(i));
  if (Number(query.get("last")) === 10) screens.push(screen(11));
  return screens;
}

test("the strip has a numbered button for every screen, τ's marked; it opens on τ's screen without asking the server", async () => {
  const { strip, frame, sent, drawn, viewer, shownNow, image } = page();
  await settle();
  assert.equal(viewer.stepCount, 10);
  assert.equal(viewer.total, 11);
  assert.deepEqual(strip.children.map((b) => b.textContent), ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "end"]);
  assert.equal(strip.style["--viewer-thumb-aspect"], "2");  // every box the first screen's shape, filled or not
  assert.deepEqual(strip.children.map((b) => b.title).slice(-2), ["step 10", "final screen"]);
  assert.deepEqual(strip.children.map((b) => b.classList.contains("tau")), [false, false, true, ...Array(8).fill(false)]);
  // Thumbnails for the screens the page carries.
  assert.deepEqual(strip.children.map((b) => (b.querySelector("img") ? b.querySelector("img").src : null)).slice(0, 7),
    ["/thumbs/1.png", "/thumbs/2.png", "/thumbs/3.png", "/thumbs/4.png", "/thumbs/5.png", null, null]);
  assert.equal(strip.children[2].getAttribute("aria-current"), "step");
  assert.equal(strip.children[2].className, "viewer-thumb tau current");
  assert.deepEqual(shownNow(), { title: "Step 3 (τ)", thought: "thought 3", action: "click(3)", hidden: false });
  assert.equal(image.src, "/shots/3.png");
  assert.equal(image.alt, "Screenshot of Step 3");
  assert.deepEqual(drawn.at(-1), [frame, ["click(3)"]]);
  assert.deepEqual(sent, []);  // steps 1 to 5 are here: half a window either side of step 3
  assert.equal(viewer.screenAt(0).title, "Step 1");
  assert.equal(viewer.screenAt(null), undefined);
  assert.equal(viewer.screenAt(8), undefined);
});

test("a screen the page lacks is read with its window, once, and the final screen with the last step's", async () => {
  const { strip, frame, sent, viewer, shownNow } = page();
  strip.children[7].offsetLeft = 700;
  strip.children[7].offsetWidth = 60;
  const shown = viewer.showScreen(7);
  viewer.loadAround(7);  // asked again while the windows are on their way: not read twice
  assert.deepEqual(shownNow(), { title: "step 8 — loading…", thought: "", action: "", hidden: true });
  assert.equal(strip.children[7].getAttribute("aria-current"), "step");
  assert.equal(strip.children[2].getAttribute("aria-current"), null);
  assert.equal(strip.children[2].className, "viewer-thumb tau");
  assert.equal(strip.scrollLeft, 550);  // the strip scrolls to the button: its middle
  await shown;
  assert.deepEqual(sent, [["GET", "/api/reviews/7/steps/?first=5&last=8", undefined], ["GET", "/api/reviews/7/steps/?first=9&last=10", undefined]]);
  assert.deepEqual(shownNow(), { title: "Step 8", thought: "thought 8", action: "click(8)", hidden: false });
  assert.equal(strip.children[10].querySelector("img").src, "/thumbs/11.png");
  assert.equal(viewer.screenAt(10).title, "Final screen");
  assert.equal(frame.hidden, false);
  // The step keys: the next screen is here already; the first and last hold at the ends.
  await viewer.step(3);
  assert.equal(shownNow().title, "Final screen");
  await viewer.step(1);
  assert.equal(shownNow().title, "Final screen");
  await viewer.step(-20);
  assert.equal(shownNow().title, "Step 1");
  assert.equal(sent.length, 2);
  // A click on a thumbnail shows its screen.
  strip.children[4].click();
  await settle();
  assert.equal(shownNow().title, "Step 5");
});

test("a refused window says why under the screen's name, and going to it again asks again", async () => {
  const answers = [[500, { detail: "database down", kind: "internal" }], [0, {}]];
  const { sent, viewer, shownNow, drawn, frame } = page({ answer: (_, url) => answers.shift() || [200, { screens: served(url) }] });
  await viewer.showScreen(5);
  assert.deepEqual(shownNow(), { title: "step 6 — could not be loaded (database down): go to it again to retry", thought: "", action: "", hidden: true });
  assert.deepEqual(drawn.at(-1), [frame, []]);
  await viewer.showScreen(5);
  assert.equal(shownNow().title, "step 6 — could not be loaded (status offline): go to it again to retry");
  await viewer.showScreen(5);
  assert.equal(shownNow().title, "Step 6");
  assert.deepEqual(sent.map(([, url]) => url), Array(3).fill("/api/reviews/7/steps/?first=5&last=8"));
});

test("a screen shown while another is being read stays shown; a screen without a screenshot says so", async () => {
  let release;
  const { viewer, shownNow } = page({
    data: { screens: [screen(1, { image: undefined, thumb: undefined }), screen(2), screen(3)] },
    answer: (_, url) => new Promise((resolve) => { release = () => resolve([200, { screens: served(url) }]); }),
  });
  await settle();
  const far = viewer.showScreen(8);
  viewer.showScreen(0);
  release();
  await far;
  assert.deepEqual(shownNow(), { title: "Step 1 — no screenshot", thought: "thought 1", action: "click(1)", hidden: true });
});

test("a page without the viewer's data has no screens", async () => {
  const doc = standInDocument();
  const strip = doc.make("div");
  const viewer = createViewer({ data: null, strip, frame: null, drawMarkers: () => assert.fail("nothing to draw") });
  await viewer.showScreen(3);
  assert.equal(viewer.total, 0);
  assert.deepEqual(strip.children, []);
});
