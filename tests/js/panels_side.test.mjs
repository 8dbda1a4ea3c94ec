// The side of the workspace (static/js/workspace/panels.js createPanels) on a stand-in document with the real steps
// (workspace/steps.js) and stand-ins for the other modules: the step's text and notes, the verdict and the fields
// each verdict shows, where the correction and the post-reflection are written (or why none can be), the starting
// points of a correction, the verdict set undoably, and submit / skip with the server's answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createPanels } from "../../static/js/workspace/panels.js";
import { createSteps } from "../../static/js/workspace/steps.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { pickFields } from "../../static/js/workspace/autosave.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";
import { ERRORS } from "./served.mjs";

const click = (x, y) => ({ type: "click", args: { start_box: [x, y] }, style: "box" });
const STEPS = [
  { index: 1, thought: "Open the menu", action_text: "click(start_box='(1,1)')", actions: [click(1, 1)] },
  { index: 2, thought: "", action_text: "", actions: [], missing_before: 2, missing_before_words: "2 steps", parse_error: "no action", off_screen: "(1200, 40)" },
  { index: 3, thought: "Press Save", action_text: "click(start_box='(3,3)')", actions: [click(3, 3)],
    human_edit: { raw: "Thought: press Submit\nAction: click(start_box='(4,4)')", thought: "press Submit", action: click(4, 4) } },
  { index: 4, thought: "Done", action_text: "finished()", actions: [] },
];
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };

function workspace({ editable = true, current = 1, fields = {}, saved = true, respond = () => [200, {}] } = {}) {
  const doc = standInDocument();
  const m = doc.make;
  const ids = ["ws-step-num", "ws-step-label", "ws-step-recorded", "ws-step-tags", "ws-thought", "ws-action", "ws-gap", "ws-parse-error",
    "ws-off-screen", "ws-human", "ws-human-text", "ws-announce", "ws-verdict-text", "ws-unusable-wrap", "ws-reflection-missing",
    "ws-no-reflection-wrap", "ws-reflection-body", "ws-goto", "ws-goto-text", "ws-submit-errors", "ws-status-pill", "ws-save",
    "ws-undo", "ws-redo", "ws-returned", "ws-banner"];
  const root = m("div", { id: "ws", data: { editable: editable ? "1" : "0", queueUrl: "/queue/" } }, ...ids.map((id) => m("div", { id })));
  const category = m("select", { id: "f-error_category", data: { field: "error_category" } });
  const thought = m("textarea", { id: "f-corrected_thought", data: { field: "corrected_thought" } });
  const reason = m("textarea", { id: "f-unusable_reason", data: { field: "unusable_reason" } });
  root.append(
    m("div", { id: "ws-verdict-panel" }, m("div", { class: "ws-verdict" }, ...["error", "no_error", "unusable"].map((v) => m("button", { data: { verdict: v } })))),
    m("div", { id: "ws-error-fields" }, category), m("div", { id: "ws-unusable" }, reason),
    m("div", { id: "ws-correction" }, m("span", { class: "ws-tau" }), thought, m("div", { class: "ws-action-editor", data: { slot: "corrected" } }, m("select")), m("div", { data: { starts: "corrected" } })),
    m("div", { id: "ws-reflection" }, m("span", { class: "ws-tau" })),
    m("button", { id: "ws-submit" }), m("button", { id: "ws-skip" }), m("div", { id: "ws-next", hidden: true }, m("button")),
  );
  doc.body.append(root);
  window.location = { href: "/annotations/7/" };
  const sent = [];
  globalThis.fetch = async (url, init) => {
    const body = init.body === undefined ? undefined : JSON.parse(init.body);
    sent.push([init.method, url, body]);
    const [status, data] = respond(url, body);
    return { status, json: async () => data };
  };
  const store = createWorkspaceState({ current, version: 6, form: pickFields({ verdict: null, tau: null, ...fields }) });
  const steps = createSteps({ initial: STEPS, count: 4, finalShot: { url: "/final.png" }, size: 50, url: "/api/annotations/7/steps/", loaded: () => {}, failed: () => {} });
  const calls = [];
  const record = (name) => (...args) => { calls.push(args.length ? [name, ...args] : name); };
  const draft = {
    saveAll: async () => saved, save: async () => calls.push("save"), edited: record("edited"), banner: record("banner"), leaseEnded: record("leaseEnded"),
    forgetLocalCopy: record("forgetLocalCopy"), setSaveState: record("setSaveState"), conflict: record("conflict"), sessionExpired: record("sessionExpired"),
  };
  const undone = [];
  const panels = createPanels({
    page: { root, annotationId: "7", traceId: 11, editable: () => root.dataset.editable === "1", verdictAnswers: { no_error: { tau: null, error_category: "", corrected_thought: "" }, unusable: { tau: null } } },
    store, steps,
    // o_τ+1 is the next screen, but none after step 4 (the final screen was not kept there, say); the server records
    // its own reason after step 2 (the source dropped the steps after it).
    editor: {
      reflectionScreen: (tau) => (tau && tau < 4 ? tau + 1 : null),
      serverNoReflectionReason: (tau) => (tau === 2 ? "The source dropped the screens after step 2." : ""),
      renderEditor: record("renderEditor"), checkAction: record("checkAction"), changed: record("changed"),
    },
    draft, stage: { renderStrip: record("renderStrip"), renderStage: record("renderStage"), announceStep: record("announceStep") },
    // As undo.js: the change first, then its words (a function reads the form it made).
    undoable: (label, change) => { const done = change(); undone.push(typeof label === "function" ? label() : label); return done; },
    fitThought: record("fitThought"),
  });
  const $ = (id) => doc.getElementById(id);
  const verdictButton = (v) => root.querySelector(`[data-verdict=${v}]`);
  return { doc, root, store, panels, calls, undone, sent, $, verdictButton, form: () => store.get("form"), category, thought, reason };
}

test("a step's panel: its name, recorded thought and action, τ's tags and the notes the source left", () => {
  const { panels, $, store, calls } = workspace({ current: 2, fields: { verdict: "error", tau: 1 } });
  panels.renderAll();
  assert.deepEqual(calls.slice(0, 2), ["renderStrip", "renderStage"]);
  assert.equal($("ws-step-num").textContent, "Step 2 of 4");
  assert.equal($("ws-thought").textContent, "(no thought recorded)");
  assert.equal($("ws-action").textContent, "(no action)");
  assert.equal($("ws-step-tags").textContent, "o₂ · post-reflection");
  assert.equal($("ws-gap").textContent, "The source dropped 2 steps right before this one: the screen before it is not the previous step's result.");
  assert.equal($("ws-gap").title, $("ws-gap").textContent);
  assert.equal($("ws-parse-error").textContent, "Does not parse: no action");
  assert.equal($("ws-off-screen").textContent, "Off the screen: (1200, 40)");
  assert.equal($("ws-human").hidden, true);
  assert.equal($("ws-announce").textContent, "Step 2 of 4. Action: none recorded. The post-reflection is written on this screen. First error at step 1 (τ).");
  store.set("current", 3);
  panels.renderAll();
  assert.equal($("ws-step-tags").textContent, "after τ");
  assert.equal($("ws-human-text").textContent, "Thought: press Submit\nAction: click(start_box='(4,4)')");
  assert.equal($("ws-gap").hidden, true);
  store.set("current", 5);  // the final screen: no step, nothing recorded
  panels.renderAll();
  assert.equal($("ws-step-num").textContent, "Final screen (after step 4)");
  assert.equal($("ws-step-recorded").hidden, true);
  assert.equal($("ws-thought").textContent, "—");
});

test("the verdict shows its fields; the correction and the post-reflection are written on their screens, or why not is said", () => {
  const { panels, $, store, verdictButton, calls, category, form } = workspace({ current: 3, fields: { verdict: "error", tau: 3, error_category: "wrong element" } });
  panels.renderPanels();
  assert.equal(verdictButton("error").classList.contains("active"), true);
  assert.equal($("ws-verdict-text").textContent, "First error at step 3 (τ).");
  assert.deepEqual([$("ws-error-fields").hidden, $("ws-unusable-wrap").hidden], [false, true]);
  assert.equal(category.value, "wrong element");
  assert.deepEqual([$("ws-correction").hidden, $("ws-reflection").hidden, $("ws-goto").hidden], [false, true, true]);
  assert.deepEqual(calls.filter((c) => c[0] === "renderEditor"), [["renderEditor", "corrected"]]);
  store.set("current", 4);
  calls.length = 0;
  panels.renderPanels();
  assert.deepEqual([$("ws-correction").hidden, $("ws-reflection").hidden], [true, false]);
  assert.deepEqual(calls.filter((c) => c[0] === "renderEditor"), [["renderEditor", "reflection"]]);
  store.set("current", 1);
  panels.renderPanels();
  assert.equal($("ws-goto").hidden, false);
  assert.equal($("ws-goto-text").textContent, "τ = 3. Press t to go to the correction, then → for the post-reflection.");
  // τ at step 2: the server records why no post-reflection can be given, beside the correction.
  form().tau = 2;
  store.set("current", 2);
  panels.renderPanels();
  assert.deepEqual([$("ws-correction").hidden, $("ws-reflection").hidden, $("ws-reflection-body").hidden, $("ws-no-reflection-wrap").hidden], [false, false, true, true]);
  assert.equal($("ws-reflection-missing").textContent, "The source dropped the screens after step 2. The annotation will record this as the reason.");
  assert.deepEqual($("ws").querySelectorAll(".ws-tau").map((n) => n.textContent), ["2", "2"]);
});

test("a verdict set with a button is undoable: an error at the screen shown, checked; the fields it keeps empty emptied", () => {
  const { verdictButton, form, undone, calls, store, doc, reason } = workspace({ current: 3, fields: { corrected_thought: "typed" } });
  verdictButton("error").click();
  assert.deepEqual([form().verdict, form().tau], ["error", 3]);
  assert.deepEqual(undone, ["Marked the first error at step 3"]);
  assert.deepEqual(calls.filter((c) => c === "edited" || c[0] === "checkAction"), ["edited", ["checkAction", "corrected"], ["checkAction", "reflection"]]);
  verdictButton("no_error").click();
  assert.deepEqual([form().verdict, form().tau, form().corrected_thought], ["no_error", null, ""]);
  assert.equal(undone.at(-1), "Marked No error");
  verdictButton("unusable").click();
  assert.equal(doc.activeElement, reason);  // the reason is asked for at once
  store.set("current", 5);
  calls.length = 0;
  verdictButton("error").click();  // the final screen is not a step
  assert.deepEqual(calls, [["banner", "error", "The final screen is not a step: mark τ on a step."]]);
  assert.equal(form().verdict, "unusable");
});

test("a field typed in is recorded as one step of its own; read only, no verdict can be set", () => {
  const { thought, form, calls } = workspace({ fields: { verdict: "error", tau: 3 } });
  thought.value = "Press Submit, not Save";
  thought.dispatchEvent(new Event("input"));
  assert.equal(form().corrected_thought, "Press Submit, not Save");
  assert.deepEqual(calls, [["edited", "field:corrected_thought"]]);
  const readOnly = workspace({ editable: false, current: 3 });
  readOnly.panels.renderPanels();
  assert.equal(readOnly.verdictButton("error").disabled, true);
  assert.equal(readOnly.panels.setVerdict("error"), false);
  assert.equal(readOnly.form().verdict, null);
});

test("a correction starts from the human-edited reply, the model's or the recorded action, each undoably", () => {
  const { doc, root, form, undone, calls, panels } = workspace({ current: 3, fields: { verdict: "error", tau: 3, corrected_thought: "" } });
  const starts = () => root.querySelector("[data-starts=corrected]").children;
  panels.renderStarts();
  assert.deepEqual(starts().map((b) => [b.className, b.textContent]), [
    ["ws-start human", "Start from the human-edited reply s"], ["ws-start", "Start from the recorded action"],
  ]);  // the first start is the one s takes
  doc.dispatchEvent(new Event("prescore:starts", { detail: { traceId: 99, starts: { 3: { thought: "x", action: click(9, 9) } } } }));
  assert.equal(starts().length, 2);  // another trace's
  doc.dispatchEvent(new Event("prescore:starts", { detail: { traceId: 11, starts: { 3: { thought: "Submit saves it", action: click(5, 5) } } } }));
  assert.deepEqual(starts().map((b) => b.className), ["ws-start human", "ws-start model", "ws-start"]);
  starts()[1].click();
  assert.deepEqual([form().corrected_thought, form().editor_state.corrected], ["Submit saves it", click(5, 5)]);
  assert.deepEqual(undone, ["Started the correction from the model's reply"]);
  assert.deepEqual(calls.at(-1), ["changed", "corrected"]);
  starts()[0].click();
  assert.deepEqual([form().corrected_thought, form().editor_state.corrected], ["press Submit", click(4, 4)]);
  form().corrected_thought = "";
  starts()[2].click();
  assert.deepEqual([form().corrected_thought, form().editor_state.corrected], ["Press Save", click(3, 3)]);
  form().editor_state.corrected.args.start_box[0] = 0;  // a copy: the step's recorded action is unchanged
  assert.deepEqual(STEPS[2].actions[0], click(3, 3));
});

test("submit saves first, then sends the version; accepted, the page turns read only and offers the next trace", async () => {
  const { panels, sent, calls, $, root, doc } = workspace({ fields: { verdict: "no_error" }, respond: () => [200, { status: "submitted", status_display: "Submitted", editable: false }] });
  await panels.submit();
  assert.deepEqual(sent, [["POST", "/api/annotations/7/submit/", { version: 6 }]]);
  assert.ok(calls.includes("leaseEnded") && calls.includes("forgetLocalCopy"));
  assert.equal($("ws-status-pill").textContent, "Submitted");
  assert.equal($("ws-status-pill").className, "pill submitted");
  assert.equal(root.dataset.editable, "0");
  assert.deepEqual(["ws-save", "ws-skip", "ws-submit", "ws-undo", "ws-redo"].map((id) => $(id).hidden), [true, true, true, true, true]);
  assert.equal($("ws-next").hidden, false);
  assert.equal(doc.activeElement, $("ws-next").querySelector("button"));
  await panels.submit();  // read only now: nothing more is sent
  assert.equal(sent.length, 1);
});

test("a refused submit marks each problem where it is fixed; a conflict, a lost login and an unsaved draft are handed on", async () => {
  let answer = [400, { detail: "Not complete.", errors: { verdict: "Choose a verdict.", corrected_thought: "Write the corrected thought." }, kind: "invalid" }];
  const { panels, $, root, calls, thought } = workspace({ current: 3, fields: { verdict: "error", tau: 3 }, respond: () => answer });
  await panels.submit();
  assert.equal($("ws-submit-errors").hidden, false);
  assert.deepEqual($("ws-submit-errors").querySelectorAll("li").map((li) => li.textContent), ["Choose a verdict.", "Write the corrected thought."]);
  const verdictBox = root.querySelector("#ws-verdict-panel .ws-verdict");
  assert.deepEqual([verdictBox.classList.contains("ws-invalid"), thought.getAttribute("aria-invalid")], [true, "true"]);
  assert.equal(verdictBox.scrolledTo, true);  // the first problem is brought into view, its first control focused
  thought.dispatchEvent(new Event("input"));
  assert.equal(thought.classList.contains("ws-invalid"), false);
  answer = [409, { detail: "Changed elsewhere.", current: { version: 7 } }];
  await panels.submit();
  assert.deepEqual(calls.at(-1)[0], "conflict");
  const signedOut = ERRORS.answers.find((a) => a.signed_out);
  answer = [signedOut.status, signedOut.data];
  await panels.submit();
  assert.equal(calls.at(-1), "sessionExpired");
  const unsaved = workspace({ saved: false });
  await unsaved.panels.submit();
  assert.deepEqual(unsaved.calls, [["banner", "error", "Save the draft first (see the status above), then submit."]]);
  assert.equal(unsaved.sent.length, 0);
});

test("skip asks first; confirmed, the trace goes back and the queue says so; a refusal is said", async () => {
  let answer = [200, {}];
  const { $, calls, sent } = workspace({ respond: () => answer });
  $("ws-skip").click();
  const [, kind, words, actions] = calls.at(-1);
  assert.deepEqual([kind, words], ["conflict", "Skip this trace? It goes back to the pool and is not offered to you again; your draft is kept."]);
  assert.deepEqual(actions.map(([label]) => label), ["Skip it", "Keep working"]);
  await actions[0][1]();
  assert.deepEqual(sent, [["POST", "/api/annotations/7/skip/", undefined]]);
  assert.equal(window.location.href, "/queue/?skipped=7");
  answer = [409, { detail: "Already submitted." }];
  await actions[0][1]();
  assert.deepEqual(calls.at(-1), ["banner", "error", "Not skipped: Already submitted."]);
  actions[1][1]();
  assert.deepEqual(calls.at(-1), ["banner", "", ""]);
});
