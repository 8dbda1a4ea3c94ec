// The lead's edit form on a review page (static/js/review/edit_form.js) on a stand-in document, against the action
// table as the server serves it: the error fields and the editors beside the screenshots follow the verdict and the
// form's opening; each slot's action is edited in the structured editor or placed by a click on its screenshot,
// checked by the server (once per pause, the latest answer kept), and sent only once the lead gave it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEditSlots, createVerdictFields } from "../../static/js/review/edit_form.js";
import { Event, fakeFetch, settle, standInDocument } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";

const CHECK_WAIT = 150;  // the form waits 120 ms after an edit before asking the server

test("the error fields and the editors beside the screenshots show for the error verdict while the form is open", () => {
  const doc = standInDocument();
  const details = doc.make("details", { id: "edit-accept", open: false });
  const verdictSelect = doc.make("select", { value: "no_error" });
  const errorFields = doc.make("div", { data: { forVerdict: "error" } });
  const beside = [doc.make("div", { data: { editBeside: "" } }), doc.make("div", { data: { editBeside: "" } })];
  doc.body.append(details, verdictSelect, errorFields, ...beside);
  const fields = createVerdictFields({ details, verdictSelect, errorFields });
  const shown = () => beside.map((node) => !node.hidden);
  assert.deepEqual(shown(), [false, false]);
  details.open = true;
  details.dispatchEvent(new Event("toggle"));
  assert.deepEqual(shown(), [false, false]);  // open, but no error verdict
  verdictSelect.value = "error";
  verdictSelect.dispatchEvent(new Event("change"));
  assert.equal(errorFields.hidden, false);
  assert.deepEqual(shown(), [true, true]);
  details.open = false;
  details.dispatchEvent(new Event("toggle"));
  assert.deepEqual(shown(), [false, false]);
  // A value put back by an undo shows once the page asks.
  details.open = true;
  verdictSelect.value = "no_error";
  fields.refresh();
  assert.equal(errorFields.hidden, true);
  assert.deepEqual(shown(), [false, false]);
});

test("without the verdict select (a page that asks only for the correction) the editors show while the form is open", () => {
  const doc = standInDocument();
  const details = doc.make("details", { open: true });
  const beside = doc.make("div", { data: { editBeside: "" } });
  doc.body.append(details, beside);
  createVerdictFields({ details, verdictSelect: null, errorFields: null }).refresh();
  assert.equal(beside.hidden, false);
  createVerdictFields({ details: null, verdictSelect: null, errorFields: null });
  assert.equal(beside.hidden, true);
});

const SERVED_CLICK = { type: "click", args: { start_box: [100, 200] }, style: "box", target_box: [80, 180, 120, 220] };

/** A review page's edit form over a served corrected click and no post-reflection action; the server's checks are
    answered by ``answer`` (the canonical text of the action checked, by default). */
function form({ answer, slots = {} } = {}) {
  const doc = standInDocument();
  const details = doc.make("details", { id: "edit-accept", open: true });
  const frames = {};
  for (const slot of ["corrected", "reflection"]) {
    details.append(
      doc.make("div", { data: { reviewSlot: slot } }),
      doc.make("input", { id: `edit-${slot}_action`, name: `${slot}_action`, type: "hidden" }),
      doc.make("input", { id: `edit-${slot}_box`, name: `${slot}_box`, type: "hidden", value: slot === "corrected" ? "[80,180,120,220]" : "", disabled: true }),
      doc.make("span", { data: { legend: slot } }, "served legend"),
    );
    const layer = doc.make("div", { class: "zoom-layer" });
    layer.rect = { left: 10, top: 20, width: 500, height: 250 };
    frames[slot] = doc.make("div", { class: "shot-frame" }, layer);
  }
  doc.body.append(details, frames.corrected, frames.reflection);
  const sent = fakeFetch(answer || ((method, url, body) => [200, { canonical: body.action ? `${body.action.type}(…)` : "", errors: [], valid: true }]));
  const calls = [];
  const screens = { corrected: { width: 1000, height: 500, extent: [1000, 1000] }, reflection: null };
  let tau = 3;
  const editData = {
    check_url: "/api/reviews/7/check/", table_url: "/api/actions/table/", platform: "desktop", tau: 3, screens,
    slots: {
      corrected: { action: SERVED_CLICK, canonical: "click(start_box='(100,200)')", ...slots.corrected },
      reflection: { action: null, canonical: "", ...slots.reflection },
    },
  };
  const edit = createEditSlots({ editData, formTau: () => tau, hooks: {
    drawEdited: (slot) => calls.push(["draw", slot]),
    recordEdit: (group) => calls.push(["record", group]),
    placingScreen: (slot) => screens[slot],
  } });
  edit.placeOn(frames.corrected, "corrected");
  edit.placeOn(frames.reflection, "reflection");
  const host = (slot) => doc.querySelector(`[data-review-slot="${slot}"]`);
  const field = (slot) => doc.getElementById(`edit-${slot}_action`);
  const setTau = (value) => { tau = value; };
  return { doc, details, frames, sent, calls, edit, host, field, setTau, editData };
}

test("loaded, the table draws both editors and the served action is checked quietly; nothing is sent for it", async () => {
  const { sent, calls, edit, host, field, doc } = form();
  assert.deepEqual(edit.names, ["corrected", "reflection"]);
  assert.deepEqual([field("corrected").disabled, field("reflection").disabled], [true, true]);  // not the lead's
  edit.tableLoaded(TABLE);
  const select = host("corrected").querySelector("select.ws-type");
  assert.equal(select.children.find((option) => option.selected).value, "click");
  assert.equal(host("corrected").querySelector("[data-point='corrected-start_box']").textContent, "(100, 200)");
  assert.equal(host("corrected").querySelector("[data-canonical]").textContent, "click(start_box='(100,200)')");
  assert.equal(host("reflection").querySelector("select.ws-type").children.some((option) => option.selected), false);
  await settle(CHECK_WAIT);
  assert.deepEqual(sent, [["POST", "/api/reviews/7/check/", { slot: "corrected", action: SERVED_CLICK, tau: 3 }]]);
  assert.deepEqual(calls, [["record", "arg:corrected"]]);  // no mark redrawn: the annotator's stays
  assert.equal(field("corrected").value, "click(…)");
  assert.equal(field("corrected").disabled, true);
  assert.equal(doc.querySelector("[data-legend=corrected]").textContent, "served legend");
  assert.equal(host("corrected").querySelector("[data-canonical]").textContent, "click(…)");
  assert.equal(host("corrected").querySelector("[data-errors] li.ok").textContent, "✓ valid");
  assert.deepEqual(edit.actions(), { corrected: SERVED_CLICK, reflection: null });
  assert.notEqual(edit.actions().corrected, SERVED_CLICK);  // a copy: the page's data is never edited
});

test("a type chosen in the editor is the lead's: the field is sent, the mark and the legend name the checked action", async () => {
  const { sent, calls, edit, host, field, doc } = form();
  edit.tableLoaded(TABLE);
  await settle(CHECK_WAIT);
  calls.length = 0;
  const select = host("reflection").querySelector("select.ws-type");
  select.value = "hotkey";
  select.dispatchEvent(new Event("change"));
  assert.equal(field("reflection").disabled, false);
  assert.deepEqual(calls, [["record", null], ["draw", "reflection"]]);
  assert.ok(host("reflection").querySelector("[data-arg=key]"), "the hotkey's key field is drawn");
  await settle(CHECK_WAIT);
  assert.deepEqual(sent.at(-1), ["POST", "/api/reviews/7/check/", { slot: "reflection", action: { type: "hotkey", args: {}, style: "box" }, tau: 3 }]);
  assert.equal(field("reflection").value, "hotkey(…)");
  assert.equal(doc.querySelector("[data-legend=reflection]").textContent, "hotkey(…)");
  assert.deepEqual(calls.at(-1), ["draw", "reflection"]);
  // Typing the key: recorded as one group, not redrawn while typed, checked once the typing pauses.
  calls.length = 0;
  const key = host("reflection").querySelector("[data-arg=key]");
  for (const value of ["c", "ct", "ctrl c"]) { key.value = value; key.dispatchEvent(new Event("input")); }
  assert.deepEqual(calls, Array(3).fill(["record", "arg:reflection"]));
  await settle(CHECK_WAIT);
  assert.equal(sent.length, 3);
  assert.deepEqual(sent.at(-1)[2].action, { type: "hotkey", args: { key: "ctrl c" }, style: "box" });
  // No type: no action.
  const again = host("reflection").querySelector("select.ws-type");
  again.value = "";
  again.dispatchEvent(new Event("change"));
  assert.equal(edit.actions().reflection, null);
  await settle(CHECK_WAIT);
  assert.deepEqual(sent.at(-1)[2], { slot: "reflection", action: null, tau: 3 });
});

test("a click on the screenshot places the point in the project's convention; not while the form is closed or the screen is another τ's", async () => {
  const { sent, frames, edit, details, field, host } = form();
  edit.tableLoaded(TABLE);
  await settle(CHECK_WAIT);
  // 135 px right and 145 px down of the layer's corner (10, 20) on a 500 × 250 layer: a quarter across, half down.
  frames.corrected.dispatchEvent(new Event("click", { clientX: 135, clientY: 145 }));
  assert.deepEqual(edit.actions().corrected.args.start_box, [250, 500]);
  assert.equal(field("corrected").disabled, false);
  assert.equal(host("corrected").querySelector("[data-point='corrected-start_box']").textContent, "(250, 500)");
  await settle(CHECK_WAIT);
  assert.deepEqual(sent.at(-1)[2], { slot: "corrected", action: { ...SERVED_CLICK, args: { start_box: [250, 500] } }, tau: 3 });
  details.open = false;
  frames.corrected.dispatchEvent(new Event("click", { clientX: 10, clientY: 20 }));
  details.open = true;
  frames.reflection.dispatchEvent(new Event("click", { clientX: 10, clientY: 20 }));  // no action, no screen
  assert.deepEqual(edit.actions(), { corrected: { ...SERVED_CLICK, args: { start_box: [250, 500] } }, reflection: null });
  await settle(CHECK_WAIT);
  assert.equal(sent.length, 2, JSON.stringify(sent));
  edit.placeOn(null, "corrected");  // a page without that screenshot
});

test("a drag's two points are placed one click after the other, the third click starting again", async () => {
  const { frames, edit, host, sent } = form();
  edit.tableLoaded(TABLE);
  const select = host("corrected").querySelector("select.ws-type");
  select.value = "drag";
  select.dispatchEvent(new Event("change"));
  const click = (x, y) => frames.corrected.dispatchEvent(new Event("click", { clientX: x, clientY: y }));
  click(10, 20);
  click(510, 270);
  assert.deepEqual(edit.actions().corrected.args, { start_box: [0, 0], end_box: [1000, 1000] });
  click(260, 145);
  assert.deepEqual(edit.actions().corrected.args, { start_box: [500, 500] });
  await settle(CHECK_WAIT);
  // One check, once the edits pause: the served action's was still waiting, and gave way to them.
  assert.deepEqual(sent.map(([, , body]) => body.action), [{ type: "drag", args: { start_box: [500, 500] }, style: "box" }]);
});

test("only the latest check's answer is shown; a refused check leaves the field as it was", async () => {
  const pending = [];
  const { edit, field, host } = form({ answer: () => new Promise((resolve) => pending.push(resolve)) });
  edit.tableLoaded(TABLE);
  await settle(CHECK_WAIT);
  const select = host("corrected").querySelector("select.ws-type");
  select.value = "left_double";
  select.dispatchEvent(new Event("change"));
  await settle(CHECK_WAIT);
  assert.equal(pending.length, 2);
  pending[1]([200, { canonical: "left_double(…)", errors: ["start_box: required"], valid: false }]);
  await settle();
  pending[0]([200, { canonical: "click(…)", errors: [], valid: true }]);  // the served action's, answered late
  await settle();
  assert.equal(field("corrected").value, "left_double(…)");
  assert.equal(host("corrected").querySelector("[data-errors] li").textContent, "start_box: required");
  select.value = "click";
  host("corrected").querySelector("select.ws-type").value = "click";
  host("corrected").querySelector("select.ws-type").dispatchEvent(new Event("change"));
  await settle(CHECK_WAIT);
  pending[2]([400, { detail: "no", kind: "invalid" }]);
  await settle();
  assert.equal(field("corrected").value, "left_double(…)");
});

test("the stored element box can be taken off: the box input is emptied and sent", async () => {
  const { edit, host, doc, field } = form();
  edit.tableLoaded(TABLE);
  assert.equal(host("corrected").querySelector("[data-box=corrected]").textContent, "[80, 180, 120, 220]");
  host("corrected").querySelector("[data-clear-box=corrected]").click();
  assert.equal(edit.actions().corrected.target_box, undefined);
  const box = doc.getElementById("edit-corrected_box");
  assert.deepEqual([box.value, box.disabled, field("corrected").disabled], ["", false, false]);
  assert.equal(host("corrected").querySelector("[data-box=corrected]"), null);
  assert.deepEqual(edit.boxInputs(), [box, doc.getElementById("edit-reflection_box")]);
  await settle(CHECK_WAIT);
});

test("an optional point can be cleared; an undo back to the served action sends nothing of the lead's", async () => {
  const { edit, host, field, calls } = form({ slots: { reflection: { action: { type: "type", args: { content: "hi", start_box: [5, 5] }, style: "box" }, canonical: "type(…)" } } });
  edit.tableLoaded(TABLE);
  const clear = host("reflection").querySelectorAll("button").find((b) => b.textContent === "clear");
  clear.click();
  assert.deepEqual(edit.actions().reflection.args, { content: "hi" });
  assert.equal(field("reflection").disabled, false);
  const content = host("reflection").querySelector("[data-arg=content]");
  content.value = "";
  content.dispatchEvent(new Event("input"));
  assert.deepEqual(edit.actions().reflection.args, { content: "" }, "an emptied required text stays, for the server to refuse");
  calls.length = 0;
  edit.restore({ corrected: { ...SERVED_CLICK }, reflection: { type: "type", args: { content: "hi", start_box: [5, 5] }, style: "box" } });
  assert.deepEqual([field("corrected").disabled, field("reflection").disabled], [true, true]);
  assert.deepEqual(calls.filter(([what]) => what === "draw"), [["draw", "corrected"], ["draw", "reflection"]]);
  edit.restore({ corrected: { type: "wait", args: {}, style: "box" }, reflection: null });
  assert.deepEqual([field("corrected").disabled, field("reflection").disabled], [false, false]);
  await settle(CHECK_WAIT);
});

test("an action the lead gave in a refused edit shown again stays given", async () => {
  const { field, edit } = form({ slots: { corrected: { given: true } } });
  assert.equal(field("corrected").disabled, false);
  edit.restore({ corrected: { ...SERVED_CLICK }, reflection: null });
  assert.equal(field("corrected").disabled, false);
  await settle(CHECK_WAIT);
});
