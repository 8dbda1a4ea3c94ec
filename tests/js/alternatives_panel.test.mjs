// The on-policy alternatives in the workspace (static/js/workspace/alternatives.js createAlternatives) on a stand-in
// document, against answers shaped as annotation/alternatives/api.py gives them: the list with its marks and
// buttons, the sampling job's status (polled while it runs), asking the model at τ, marking one wrong, taking one as
// the correction (the served thought and the action, undoable), and what a refusal or a blind project does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createAlternatives } from "../../static/js/workspace/alternatives.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { pickFields } from "../../static/js/workspace/autosave.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";
import { ERRORS } from "./served.mjs";

const URL = "/api/annotations/7/alternatives/";
const click = (x, y) => ({ type: "click", args: { start_box: [x, y] }, style: "box" });
const job = (fields = {}) => ({ id: 3, status: "succeeded", step: 4, model_name: "ckpt-7", weights_hash: "ab", settings: { k: 3 }, reused: false, message: "", ...fields });
const rows = (marks = {}) => [
  { id: 31, number: 1, parsed: true, mark: marks[1] || "", reply: "click(start_box='(10,20)')", actions: [click(10, 20)] },
  { id: 32, number: 2, parsed: true, mark: marks[2] || "", reply: "click(start_box='(10,20)')", actions: [click(10, 20)] },
  { id: 33, number: 3, parsed: false, mark: "", text: "I would press OK" },
];
const answer = (fields = {}) => ({ annotation: 7, convention: "relative-1000", job: job(), alternatives: rows(), model: { configured: true, problem: "" }, ...fields });
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };

/** The alternatives of a workspace whose form has a first error at ``tau``; the server answers with ``respond``. */
function panel({ respond, tau = 4, editable = true } = {}) {
  const doc = standInDocument();
  doc.body.append(...["ws-alts-ask", "ws-alts-status"].map((id) => doc.make("div", { id })));
  const box = doc.make("div", { id: "ws-alts", hidden: true }, doc.make("ol", { id: "ws-alts-list" }));
  doc.body.append(box);
  const sent = [], banners = [], started = [], undone = [], timers = [];
  let redraws = 0, expired = 0;
  globalThis.fetch = async (url, init) => {
    const request = [init.method, url, init.body === undefined ? undefined : JSON.parse(init.body)];
    sent.push(request);
    const [status, data] = respond(...request);
    return { status, json: async () => data };
  };
  globalThis.setTimeout = (fn, ms) => { timers.push([fn, ms]); return timers.length; };
  const store = createWorkspaceState({ form: pickFields({ verdict: "error", tau, corrected_thought: "mine" }) });
  const alternatives = createAlternatives({
    page: { annotationId: "7", editable: () => editable }, store,
    draft: { banner: (kind, message) => banners.push([kind, message]), sessionExpired: () => { expired++; } },
    editor: { startSlot: (slot, action) => started.push([slot, action]) },
    undoable: (label, change) => { undone.push(typeof label === "function" ? label() : label); return change(); },
    hooks: { redrawOverlays: () => { redraws++; } },
  });
  const $ = (id) => doc.getElementById(id);
  const items = () => $("ws-alts-list").children;
  return { doc, box, store, alternatives, sent, banners, started, undone, timers, $, items, redraws: () => redraws, expired: () => expired };
}
const realSetTimeout = setTimeout;
test.afterEach(() => { globalThis.setTimeout = realSetTimeout; });

test("loaded, the replies are listed with their marks; the parsed ones are drawn at their step, alike ones as one", async () => {
  const { alternatives, box, sent, $, items, redraws, timers } = panel({ respond: () => [200, answer()] });
  await alternatives.load();
  assert.deepEqual(sent, [["GET", URL, undefined]]);
  assert.equal(box.hidden, false);
  assert.equal(redraws(), 1);
  assert.deepEqual(timers, []);  // the job is done: no polling
  const ask = $("ws-alts-ask").querySelector("#ws-alts-ask-btn");
  assert.deepEqual([ask.textContent, ask.disabled], ["Ask the model again (3)", false]);
  assert.equal($("ws-alts-status").textContent, "3 alternatives · step 4 · ckpt-7");
  assert.deepEqual(items().map((li) => [li.dataset.alt, li.className]), [["1", "ws-alt"], ["2", "ws-alt"], ["3", "ws-alt unparsed"]]);
  assert.deepEqual(items().map((li) => li.querySelector(".ws-alt-text").textContent), ["click(start_box='(10,20)')", "click(start_box='(10,20)')", "I would press OK"]);
  assert.equal(items()[2].querySelector("[data-alt-mark]").textContent, "not an action: text only");
  assert.equal(items()[2].querySelector("button"), null);
  assert.equal(items()[0].querySelector("[data-alt-take]").textContent, "Take Alt+1");
  const drawn = [];
  alternatives.drawAlternatives(4, (action, tone, extra) => drawn.push([action, tone, extra.label]));
  assert.deepEqual(drawn, [[click(10, 20), "alt", "1,2"]]);
  alternatives.drawAlternatives(5, () => assert.fail("sampled at step 4 only"));
});

test("pointing at a reply makes it the hot one: marked in the list and redrawn, once", async () => {
  const { alternatives, items, redraws } = panel({ respond: () => [200, answer()] });
  await alternatives.load();
  items()[1].dispatchEvent(new Event("mouseenter"));
  assert.equal(alternatives.hotAlternative(), 2);
  assert.deepEqual(items().map((li) => li.classList.contains("hot")), [false, true, false]);
  assert.equal(redraws(), 2);
  items()[1].dispatchEvent(new Event("focusin"));
  assert.equal(redraws(), 2);
});

test("taking one marks it taken and starts the correction from it and its served thought, undoably", async () => {
  const { alternatives, items, sent, started, undone, store } = panel({
    respond: (method) => (method === "GET" ? [200, answer()] : [200, { ...answer({ alternatives: rows({ 1: "taken" }) }), starting_point: { thought: "The OK button closes it.", action: "click(…)" } }]),
  });
  await alternatives.load();
  items()[0].querySelector("[data-alt-take]").click();
  await settle();
  assert.deepEqual(sent.at(-1), ["POST", `${URL}31/mark/`, { verdict: "taken" }]);
  assert.deepEqual(undone, ["Took alternative 1 as the correction"]);
  assert.equal(store.get("form").corrected_thought, "The OK button closes it.");
  assert.deepEqual(started, [["corrected", click(10, 20)]]);
  assert.equal(items()[0].className, "ws-alt taken");
  assert.equal(items()[0].querySelector("[data-alt-mark]").textContent, "taken");
  started[0][1].args.start_box[0] = 99;  // the editor's copy: the list's action is not changed through it
  assert.deepEqual(rows()[0].actions[0], click(10, 20));
});

test("taking one sampled at another step than τ says to ask again at τ; nothing is sent", async () => {
  const { alternatives, sent, banners, started } = panel({ respond: () => [200, answer()], tau: 3 });
  await alternatives.load();
  await alternatives.takeAlternative(1);
  await alternatives.takeAlternative(3);  // text only: nothing to take
  await alternatives.takeAlternative(9);
  assert.deepEqual(banners, [["error", "The alternatives are for step 4; τ is 3: ask again at τ."]]);
  assert.equal(sent.length, 1);
  assert.deepEqual(started, []);
});

test("a reply marked wrong can be unmarked; a refused mark says why, a lost login asks to log in", async () => {
  let markAnswer = [200, answer({ alternatives: rows({ 2: "wrong" }) })];
  const { alternatives, items, sent, banners, expired } = panel({ respond: (method) => (method === "GET" ? [200, answer()] : markAnswer) });
  await alternatives.load();
  items()[1].querySelector("[data-alt-wrong]").click();
  await settle();
  assert.deepEqual(sent.at(-1), ["POST", `${URL}32/mark/`, { verdict: "wrong" }]);
  const wrong = items()[1].querySelector("[data-alt-wrong]");
  assert.deepEqual([items()[1].className, wrong.textContent], ["ws-alt wrong", "Not wrong"]);
  markAnswer = [400, { detail: "verdict: not one of taken, wrong", kind: "invalid" }];
  wrong.click();
  await settle();
  assert.deepEqual(sent.at(-1)[2], { verdict: "" });
  assert.deepEqual(banners, [["error", "Alternative 2 not marked: verdict: not one of taken, wrong"]]);
  const signedOut = ERRORS.answers.find((a) => a.signed_out);
  markAnswer = [signedOut.status, signedOut.data];
  assert.equal(await alternatives.markAlternative(1, "wrong"), null);
  assert.equal(expired(), 1);
});

test("asking the model samples at τ; the running job is polled and its status shown; a refusal is said", async () => {
  let askAnswer = [202, { ...answer({ alternatives: [] }), job: job({ status: "queued", weights_hash: "" }) }];
  const { alternatives, $, sent, timers, banners, items } = panel({ respond: (method) => (method === "GET" ? [200, answer({ job: null, alternatives: [] })] : askAnswer) });
  await alternatives.load();
  const ask = $("ws-alts-ask-btn");
  assert.equal(ask.textContent, "Ask the model");
  assert.equal($("ws-alts-status").textContent, "");
  ask.click();
  await settle();
  assert.deepEqual(sent.at(-1), ["POST", URL, { step: 4 }]);
  assert.equal($("ws-alts-status").textContent, "Sampling at step 4… (queued)");
  assert.equal($("ws-alts-ask-btn").disabled, true);
  assert.deepEqual(timers.map(([, ms]) => ms), [1500]);
  timers[0][0]();  // the poll: the job is done
  await settle();
  assert.equal(sent.at(-1)[0], "GET");
  assert.equal(items().length, 0);
  askAnswer = [409, { detail: "A job is already sampling at this step.", kind: "conflict" }];
  $("ws-alts-ask-btn").click();
  await settle();
  assert.deepEqual(banners, [["error", "No alternatives: A job is already sampling at this step."]]);
});

test("a failed job says why; without a model the block says what is missing, or hides when nothing was sampled", async () => {
  const failed = panel({ respond: () => [200, answer({ job: job({ status: "failed", message: "model not loaded" }), alternatives: [] })] });
  await failed.alternatives.load();
  assert.equal(failed.$("ws-alts-status").textContent, "failed: model not loaded");
  const unset = panel({ respond: () => [200, answer({ model: { configured: false, problem: "ALTERNATIVES_MODEL_DIR is not set." } })] });
  await unset.alternatives.load();
  assert.equal(unset.$("ws-alts-problem").textContent, "ALTERNATIVES_MODEL_DIR is not set.");
  assert.equal(unset.$("ws-alts-ask-btn"), null);
  const nothing = panel({ respond: () => [200, answer({ model: { configured: false, problem: "x" }, job: null, alternatives: [] })] });
  await nothing.alternatives.load();
  assert.equal(nothing.box.hidden, true);
  const reused = panel({ respond: () => [200, answer({ job: job({ reused: true, message: "3 alternatives re-used" }) })] });
  await reused.alternatives.load();
  assert.equal(reused.$("ws-alts-status").textContent, "3 alternatives re-used · step 4 · ckpt-7 (stored)");
});

test("read only, the replies are listed without a way to ask, take or mark; a blind project hides them", async () => {
  const readOnly = panel({ respond: () => [200, answer()], editable: false });
  await readOnly.alternatives.load();
  assert.equal(readOnly.$("ws-alts-ask-btn"), null);
  assert.equal(readOnly.items().length, 3);
  assert.equal(readOnly.$("ws-alts-list").querySelector("button"), null);
  assert.equal(await readOnly.alternatives.markAlternative(1, "wrong"), null);
  assert.equal(readOnly.sent.length, 1);
  const blind = panel({ respond: () => [403, { detail: "Blind project.", kind: "forbidden" }] });
  await blind.alternatives.load();
  assert.equal(blind.box.hidden, true);
  blind.alternatives.drawAlternatives(4, () => assert.fail("hidden"));
});
