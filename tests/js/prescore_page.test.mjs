// Pre-scoring in the workspace as it runs on a page (static/js/prescore.js's start, run as the module loads where there
// is a document), on a stand-in document and fetch: each `workspace:step` the workspace dispatches draws the suspicion
// strip, the step's badges, the model's line and its ghost in the step's overlay, from the trace's suggestions (asked
// once per trace); the model's starts are announced once per trace; a blind project, a trace without scores and a
// failed answer hide the box.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CustomEvent, standInDocument } from "./stand_in_dom.mjs";

const doc = standInDocument();
const m = doc.make;
const box = m("section", { id: "prescore", hidden: true },
  m("span", { id: "prescore-source" }), m("div", { id: "prescore-flags" }), m("p", { id: "prescore-model" }));
const strip = m("div", { id: "suspicion-strip" });
doc.body.append(box, strip);

const suggestions = {
  scorers: {
    rules: {
      suggested_tau: 2,
      steps: [
        { index: 1, suspicion: 0.1, flags: [] },
        { index: 2, suspicion: 0.7, flags: [{ code: "off_screen", label: "point off the screen", message: "x > width" }] },
      ],
    },
    qwen2vl: {
      model_name: "ui-tars-2b",
      suggested_tau: 3,
      steps: [
        { index: 2, suspicion: 0.4, agrees: true, loglik_mean: -0.51234, model_action: "drag(…)",
          model_points: [[500, 500], [250, 750]], model_start: "Thought: Drag it.\nAction: drag(…)" },
        { index: 3, suspicion: 0.9, agrees: false, loglik_mean: null, model_action: "", model_points: [] },
      ],
    },
  },
};
// Each trace's answer: [ok, data], a promise of one (answered when the test says), or "offline" (fetch rejects).
const answers = {
  7: [true, suggestions],
  8: [true, { hidden: true }],
  9: [true, { scorers: {} }],
  10: [false, { detail: "No such trace." }],
  11: "offline",
};
const asked = [];
globalThis.fetch = async (url, init) => {
  asked.push([url, init.credentials]);
  const answer = await answers[url.split("/")[3]];
  if (answer === "offline") throw new TypeError("fetch failed");
  const [ok, data] = answer;
  return { ok, json: async () => data };
};
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };

const heard = { starts: [], goto: [] };
doc.addEventListener("prescore:starts", (event) => heard.starts.push(event.detail));
doc.addEventListener("workspace:goto", (event) => heard.goto.push(event.detail));
await import("../../static/js/prescore.js");

const shot = { width: 1920, height: 1080, extent: [1000, 1000] };
const overlay = () => Object.assign(doc.createElementNS("http://www.w3.org/2000/svg", "svg"), { viewBox: { baseVal: { width: 2000 } } });
const step = async (detail) => { doc.dispatchEvent(new CustomEvent("workspace:step", { detail })); await settle(); };

test("a step of a scored trace: the strip, its cells' suspicion and the first error, and where a cell leads", async () => {
  await step({ traceId: 7, index: 2, stepCount: 4, svg: overlay(), shot });
  assert.deepEqual(asked, [["/api/traces/7/suggestions/", "same-origin"]]);
  assert.equal(box.hidden, false);
  assert.equal(doc.getElementById("prescore-source").textContent, "rules · qwen2vl: ui-tars-2b");
  const cells = strip.children;
  assert.deepEqual(cells.map((c) => c.className), ["cell", "cell current", "cell first-error", "cell unscored"]);
  assert.deepEqual(cells.map((c) => c.getAttribute("role")), ["listitem", "listitem", "listitem", "listitem"]);
  assert.equal(cells[2].title, "step 3: suspicion 0.90 (suggested first error)");
  assert.equal(cells[2].getAttribute("aria-label"), cells[2].title);
  assert.equal(cells[1].style.opacity, String(0.12 + 0.88 * 0.7));
  assert.equal(cells[3].style.opacity, undefined);  // an unscored step keeps the stylesheet's
  cells[3].click();
  assert.deepEqual(heard.goto, [{ index: 4 }]);
});

test("the step's badges are the rules' flags in the server's words, and the model's line under them", async () => {
  await step({ traceId: 7, index: 2, stepCount: 4, svg: overlay(), shot });
  const badges = doc.getElementById("prescore-flags").children;
  assert.deepEqual(badges.map((b) => [b.className, b.textContent, b.title]), [["prescore-flag", "point off the screen", "x > width"]]);
  assert.equal(doc.getElementById("prescore-model").textContent,
    "Model's own action: drag(…) (agrees) · mean log-likelihood of the recorded reply -0.512");
  // The suggested first error's step says so first.
  await step({ traceId: 7, index: 3, stepCount: 4, svg: overlay(), shot });
  assert.deepEqual(doc.getElementById("prescore-flags").children.map((b) => [b.className, b.textContent]),
    [["prescore-flag first-error", "suggested first error"]]);
  assert.equal(doc.getElementById("prescore-model").textContent, "Model's own action: — (differs)");
  await step({ traceId: 7, index: 4, stepCount: 4, svg: overlay(), shot });
  assert.deepEqual(doc.getElementById("prescore-flags").children, []);
  assert.equal(doc.getElementById("prescore-model").textContent, "");
});

test("the model's ghost: its points on the step's screenshot, sized to the overlay, and redrawn, not added to", async () => {
  const svg = overlay();
  await step({ traceId: 7, index: 2, stepCount: 4, svg, shot });
  await step({ traceId: 7, index: 2, stepCount: 4, svg, shot });
  const ghosts = svg.querySelectorAll(".prescore-ghost");
  assert.equal(ghosts.length, 1);
  const [circle, line, text] = ghosts[0].children;
  assert.deepEqual([circle.tagName, circle.attributes.cx, circle.attributes.cy, circle.attributes.r], ["CIRCLE", "960", "540", "32"]);
  assert.deepEqual([line.attributes.x1, line.attributes.y1, line.attributes.x2, line.attributes.y2], ["960", "540", "480", "810"]);
  assert.deepEqual([text.textContent, text.attributes.x, text.attributes["font-size"]], ["model", "1000", "32"]);
  // A step without the model's points takes the ghost away; an overlay without a viewBox draws at its own scale.
  await step({ traceId: 7, index: 3, stepCount: 4, svg, shot });
  assert.equal(svg.querySelectorAll(".prescore-ghost").length, 0);
  const plain = doc.createElementNS("http://www.w3.org/2000/svg", "svg");
  await step({ traceId: 7, index: 2, stepCount: 4, svg: plain, shot });
  assert.equal(plain.querySelector("circle").attributes.r, "16");
  await step({ traceId: 7, index: 2, stepCount: 4, svg: null, shot });  // no overlay yet: nothing to draw into
});

test("the trace's suggestions are asked once, and its model starts announced once", async () => {
  assert.equal(asked.filter(([url]) => url.includes("/7/")).length, 1);
  assert.deepEqual(heard.starts, [{ traceId: "7", starts: { 2: "Thought: Drag it.\nAction: drag(…)" } }]);
});

test("two steps of a trace whose answer is on its way ask for it once", async () => {
  let answer;
  answers[12] = new Promise((resolve) => { answer = resolve; });
  doc.dispatchEvent(new CustomEvent("workspace:step", { detail: { traceId: 12, index: 1, stepCount: 2, shot } }));
  doc.dispatchEvent(new CustomEvent("workspace:step", { detail: { traceId: 12, index: 2, stepCount: 2, shot } }));
  await settle();
  answer([true, { scorers: { rules: { suggested_tau: null, steps: [{ index: 1, suspicion: 0.5, flags: [] }] } } }]);
  await settle();
  assert.equal(asked.filter(([url]) => url.includes("/12/")).length, 1);
  assert.deepEqual(strip.children.map((c) => c.className), ["cell", "cell unscored current"]);
  assert.deepEqual(heard.starts.at(-1), { traceId: "12", starts: {} });
});

test("a blind project, a trace without scores, a refused or failed answer hide the box; no trace, no question", async () => {
  for (const traceId of [8, 9, 10, 11]) {
    await step({ traceId: 7, index: 1, stepCount: 4, shot });
    assert.equal(box.hidden, false);
    await step({ traceId, index: 1, stepCount: 4, shot });
    assert.equal(box.hidden, true, traceId);
  }
  const before = asked.length;
  await step({ index: 1 });
  doc.dispatchEvent(new CustomEvent("workspace:step", {}));
  await settle();
  assert.equal(asked.length, before);
});
