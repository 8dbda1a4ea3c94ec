// The screens at the top of a review page follow the τ typed in the edit form (static/js/review/edit_tau.js
// createTauScreens), on a stand-in document with a stand-in viewer: the new o_τ and o_τ+1 with their names, images,
// the recorded action and thought; the action edited drawn where the annotator's was; a click places points only on
// the screens of the τ typed; back on the annotator's τ the served marks and word diff come back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createTauScreens } from "../../static/js/review/edit_tau.js";
import { settle, standInDocument } from "./stand_in_dom.mjs";

const SIZE = { width: 1000, height: 500, extent: [1000, 1000] };  // a screen's size as the server gives it
const mark = (kind, label, start) => ({ kind, label, type: "click", text: `${kind}(…)`, extent: [1000, 1000], start });
const SERVED = {
  "error-markers": [mark("original", "original", [1, 1]), mark("corrected", "corrected", [2, 2])],
  "reflection-markers": [mark("reflection", "post-reflection", [3, 3])],
};

function page({ given = {}, loaded = () => Promise.resolve("") } = {}) {
  const doc = standInDocument();
  const frame = (markers) => doc.make("div", { class: "shot-frame", data: { markers } }, doc.make("img", { src: "/served.png" }));
  const frames = { corrected: frame("error-markers"), reflection: frame("reflection-markers") };
  const before = doc.make("p", { id: "diff-before" }, "click ", doc.make("del", {}, "Save"));
  const after = doc.make("p", { id: "diff-after" }, "click ", doc.make("ins", {}, "Submit"));
  doc.body.append(
    doc.make("details", { id: "edit-accept" }), frames.corrected, frames.reflection, before, after,
    doc.make("span", { data: { tauScreen: "corrected" } }, "step 3"), doc.make("span", { data: { tauScreen: "reflection" } }, "step 4"),
    doc.make("span", { data: { legend: "original" } }, "click(start_box='(1,1)')"),
  );
  // Steps 1 to 10 and the final screen; step 8's has no screenshot.
  const screens = Array.from({ length: 11 }, (_, i) => ({
    index: i + 1, title: `Step ${i + 1}`, image: i === 7 ? undefined : `/shots/${i + 1}.png`, size: SIZE,
    thought: `thought ${i + 1}`, action: `action ${i + 1}`, markers: [mark("original", "recorded", [i, i])],
  }));
  const asked = [];
  const viewer = {
    total: 11, stepCount: 10,
    screenAt: (position) => (position === null ? undefined : screens[position]),
    loadAround: (position) => { asked.push(position); return loaded(position); },
  };
  const slots = {
    corrected: { action: { type: "click", args: { start_box: [40, 50] }, style: "box" }, given: !!given.corrected, placed: 1, field: { value: "click(start_box='(40,50)')" } },
    reflection: { action: null, given: !!given.reflection, placed: 0, field: { value: "" } },
  };
  let typed = 3;
  const drawn = [];
  const tau = createTauScreens({
    editData: { tau: 3, screens: { corrected: { ...SIZE }, reflection: { ...SIZE } } },
    viewer, slots, formTau: () => typed, readMarks: (id) => SERVED[id],
    drawMarkers: (node, markers) => drawn.push([Object.keys(frames).find((k) => frames[k] === node), markers.map((m) => [m.label, m.start])]),
  });
  const type = (value) => { typed = value; };
  const text = (selector) => doc.querySelector(selector).textContent;
  return { doc, frames, before, after, slots, tau, drawn, asked, type, text };
}

test("on the annotator's τ an untouched slot keeps the served marks; the lead's action is drawn in place of the annotator's", () => {
  const { tau, drawn, slots } = page();
  tau.drawEdited("corrected");
  assert.deepEqual(drawn.pop(), ["corrected", [["original", [1, 1]], ["corrected", [2, 2]]]]);
  slots.corrected.given = true;
  tau.drawEdited("corrected");
  assert.deepEqual(drawn.pop(), ["corrected", [["original", [1, 1]], ["corrected (edited)", [40, 50]]]]);
  slots.reflection.given = true;
  tau.drawEdited("reflection");  // no action yet: the annotator's mark goes, nothing replaces it
  assert.deepEqual(drawn.pop(), ["reflection", []]);
  assert.deepEqual(tau.placingScreen("corrected"), SIZE);
});

test("another τ typed shows its screens, names, action and thoughts, with the recorded marks and no served action", async () => {
  const { doc, frames, before, after, slots, tau, drawn, asked, type, text } = page();
  type(5);
  assert.equal(tau.placingScreen("corrected"), null);  // not until its screens are shown
  await tau.followTau();
  assert.deepEqual(asked, [4, 5]);
  assert.deepEqual([text("[data-tau-screen=corrected]"), text("[data-tau-screen=reflection]")], ["step 5", "step 6"]);
  const img = frames.corrected.querySelector("img");
  assert.deepEqual([img.src, img.width, img.height, img.alt], ["/shots/5.png", 1000, 500, "Screenshot of step 5"]);
  assert.equal(frames.reflection.querySelector("img").src, "/shots/6.png");
  assert.equal(text("[data-legend=original]"), "action 5");
  assert.equal(before.textContent, "thought 5");
  assert.equal(after.textContent, "click Submit");  // the lead's side, plain
  assert.deepEqual(after.children, []);
  assert.equal(doc.getElementById("edit-accept").dataset.tauShown, "5");
  assert.deepEqual([slots.corrected.placed, slots.reflection.placed], [0, 0]);
  // The recorded action of step 5 is marked as the original; the annotator's action belongs to τ 3, not drawn here.
  assert.deepEqual(drawn, [["corrected", [["original", [4, 4]]]], ["reflection", []]]);
  assert.deepEqual(tau.placingScreen("corrected"), SIZE);
  // An action the lead gave is drawn on any τ.
  slots.corrected.given = true;
  tau.drawEdited("corrected");
  assert.deepEqual(drawn.at(-1), ["corrected", [["original", [4, 4]], ["corrected (edited)", [40, 50]]]]);
});

test("back on the annotator's τ the served word diff comes back as it was", async () => {
  const { before, after, tau, type, text, drawn } = page();
  const served = [...before.childNodes];
  type(4);
  await tau.followTau();
  type(3);
  await tau.followTau();
  assert.deepEqual(before.childNodes, served);
  assert.equal(after.children[0].tagName, "INS");
  assert.equal(text("[data-tau-screen=corrected]"), "step 3");
  assert.deepEqual(drawn.slice(-2), [["corrected", [["original", [1, 1]], ["corrected", [2, 2]]]], ["reflection", [["post-reflection", [3, 3]]]]]);
});

test("the last step's τ: the final screen is o_τ+1; past it there is no o_τ+1, and a step without a screenshot hides its frame", async () => {
  const { frames, tau, type, text } = page();
  type(10);
  await tau.followTau();
  assert.equal(text("[data-tau-screen=reflection]"), "final screen");
  assert.equal(frames.reflection.hidden, false);
  type(11);
  await tau.followTau();
  assert.equal(text("[data-tau-screen=reflection]"), "none");
  assert.equal(frames.reflection.hidden, true);
  assert.equal(tau.placingScreen("reflection"), null);
  type(8);
  await tau.followTau();
  assert.equal(frames.corrected.hidden, true);  // step 8 has no screenshot
  assert.equal(frames.reflection.hidden, false);
});

test("nothing is done for the τ shown, an empty τ, or a τ typed over while its screens were read", async () => {
  const waiting = [];
  const { tau, type, asked, drawn, text } = page({ loaded: () => new Promise((resolve) => waiting.push(resolve)) });
  await tau.followTau();
  type(null);
  await tau.followTau();
  assert.deepEqual(asked, []);
  type(6);
  const following = tau.followTau();
  type(7);  // typed on before step 6's screens came
  assert.deepEqual(asked, [5, 6]);
  waiting.forEach((resolve) => resolve(""));
  await following;
  await settle();
  assert.equal(text("[data-tau-screen=corrected]"), "step 3");
  assert.deepEqual(drawn, []);
});
