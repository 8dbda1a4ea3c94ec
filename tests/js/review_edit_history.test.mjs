// Undo and redo of a review page's edit form (static/js/review/edit_history.js createFormHistory) on a stand-in
// document: typing in a field is one step per pause, a verdict chosen or an action edited is one step; an undo puts
// back the fields, the slots' actions and their element boxes, and the buttons and Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y
// step through it while the form is open (inside a text field the browser's own undo runs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createFormHistory } from "../../static/js/review/edit_history.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";

function form({ buttons = true } = {}) {
  const doc = standInDocument();
  const fields = {
    verdict: doc.make("select", { name: "verdict", value: "error" }),
    comment: doc.make("textarea", { name: "comment", value: "" }),
    tau: doc.make("input", { name: "tau", type: "number", value: "3" }),
    // Sent with the form, but the slots' own (their actions are put back by restore): not a field of the history.
    action: doc.make("input", { name: "corrected_action", type: "hidden", value: "click(…)" }),
    box: doc.make("input", { id: "edit-corrected_box", name: "corrected_box", type: "hidden", value: "[1,2,3,4]", disabled: true }),
    check: doc.make("input", { name: "agree", type: "checkbox", value: "on" }),
  };
  const details = doc.make("details", { id: "edit-accept", open: true }, ...Object.values(fields));
  const undo = doc.make("button", { id: "edit-undo" }), redo = doc.make("button", { id: "edit-redo" });
  doc.body.append(details);
  if (buttons) doc.body.append(undo, redo);
  let actions = { corrected: { type: "click", args: { start_box: [1, 2] } }, reflection: null };
  const restored = [];
  const parts = {
    details,
    actions: () => structuredClone(actions),
    boxInputs: () => [fields.box],
    restore: (back) => {
      actions = back;
      restored.push(back);
      history.recordEdit(null);  // the slots' redraw records an edit: not while an undo restores
    },
  };
  const history = createFormHistory(parts);
  const type = (field, value) => { field.value = value; field.dispatchEvent(new Event("input")); };
  const press = (key, extra = {}, target = doc.body) => {
    const event = new Event("keydown", { key, code: `Key${key.toUpperCase()}`, ctrlKey: true, metaKey: false, altKey: false, shiftKey: false, ...extra });
    target.dispatchEvent(event);
    return event.defaultPrevented;
  };
  const setActions = (next) => { actions = next; };
  return { doc, details, fields, undo, redo, history, restored, type, press, setActions, actions: () => actions };
}

test("typing in one field is one step; an undo puts the field back, a redo puts the typing back", () => {
  const { fields, undo, redo, type } = form();
  assert.equal(window.reviewHistory().past, 0);
  type(fields.comment, "w");
  type(fields.comment, "wrong point");
  assert.deepEqual(window.reviewHistory(), { past: 1, future: 0 });
  assert.deepEqual([undo.disabled, redo.disabled], [false, true]);
  undo.click();
  assert.equal(fields.comment.value, "");
  assert.deepEqual(window.reviewHistory(), { past: 0, future: 1 });
  assert.deepEqual([undo.disabled, redo.disabled], [true, false]);
  redo.click();
  assert.equal(fields.comment.value, "wrong point");
  assert.deepEqual([undo.disabled, redo.disabled], [false, true]);
  type(fields.tau, "4");  // another field: another step
  assert.equal(window.reviewHistory().past, 2);
  fields.check.dispatchEvent(new Event("change"));  // a checkbox's change is no step of its own (its input event is)
  assert.equal(window.reviewHistory().past, 2);
});

test("a verdict chosen and an action edited are steps; an undo puts back the actions and the element box", () => {
  const { fields, history, restored, setActions, type, undo, redo } = form();
  fields.verdict.value = "no_error";
  fields.verdict.dispatchEvent(new Event("change"));
  assert.equal(window.reviewHistory().past, 1);
  // The slots: a point placed and the element box taken off.
  setActions({ corrected: { type: "click", args: { start_box: [5, 6] } }, reflection: null });
  [fields.box.value, fields.box.disabled] = ["", false];
  history.recordEdit(null);
  assert.equal(window.reviewHistory().past, 2);
  history.recordEdit(null);  // nothing changed since: no step
  assert.equal(window.reviewHistory().past, 2);
  undo.click();
  assert.deepEqual(restored, [{ corrected: { type: "click", args: { start_box: [1, 2] } }, reflection: null }]);
  assert.deepEqual([fields.box.value, fields.box.disabled], ["[1,2,3,4]", true]);
  assert.equal(fields.verdict.value, "no_error");
  assert.deepEqual(window.reviewHistory(), { past: 1, future: 1 });  // the restore's own redraw recorded nothing
  undo.click();
  assert.equal(fields.verdict.value, "error");
  undo.click();  // nothing further back
  assert.deepEqual(window.reviewHistory(), { past: 0, future: 2 });
  redo.click();
  redo.click();
  assert.deepEqual(restored.at(-1), { corrected: { type: "click", args: { start_box: [5, 6] } }, reflection: null });
  assert.deepEqual([fields.box.value, fields.box.disabled], ["", false]);
  undo.click();
  assert.deepEqual(window.reviewHistory(), { past: 1, future: 1 });
  type(fields.comment, "new");  // an edit after undoing clears what could be redone
  assert.deepEqual(window.reviewHistory(), { past: 2, future: 0 });
  assert.equal(redo.disabled, true);
  assert.equal(fields.action.value, "click(…)");  // the hidden field is the slots', never put back here
});

test("Ctrl+Z, Ctrl+Shift+Z and Ctrl+Y step the history while the form is open; not in a text field, not closed", () => {
  const { details, fields, type, press } = form({ buttons: false });
  type(fields.comment, "first");
  fields.verdict.value = "no_error";
  fields.verdict.dispatchEvent(new Event("change"));
  assert.equal(press("z", {}, fields.comment), false);  // the browser's own text undo
  assert.equal(press("z"), true);
  assert.equal(fields.verdict.value, "error");
  assert.equal(press("z", {}, fields.check), true);  // a checkbox holds no text
  assert.equal(fields.comment.value, "");
  assert.equal(press("z", { shiftKey: true }), true);
  assert.equal(fields.comment.value, "first");
  assert.equal(press("y"), true);
  assert.equal(fields.verdict.value, "no_error");
  assert.equal(press("x"), false);
  details.open = false;
  assert.equal(press("z"), false);
  assert.equal(fields.verdict.value, "no_error");
  assert.deepEqual(window.reviewHistory(), { past: 2, future: 0 });
});
