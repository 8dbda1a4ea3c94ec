// Undo and redo in the workspace (static/js/workspace/undo.js createUndo) on a stand-in document: every change the
// draft records is a step (typing in one field one step per pause); an undo puts the form back, redraws, has the
// actions checked and saves; a destructive change shows a banner naming what it discarded, whose undo goes back to
// before it; Ctrl+Z works from the page, and from the field a destructive change focused; nothing while read only or
// in a conflict.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createUndo } from "../../static/js/workspace/undo.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { pickFields } from "../../static/js/workspace/autosave.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";

function workspace({ editable = true, buttons = true } = {}) {
  const doc = standInDocument();
  const undoButton = doc.make("button", { id: "ws-undo" }), redoButton = doc.make("button", { id: "ws-redo" });
  const note = doc.make("div", { id: "ws-undo-note", hidden: true });
  const help = doc.make("div", { id: "ws-help", hidden: true });
  const reason = doc.make("textarea", { id: "f-unusable_reason" });
  doc.body.append(note, help, reason);
  if (buttons) doc.body.append(undoButton, redoButton);
  const store = createWorkspaceState({ form: pickFields({ verdict: "error", tau: 3, corrected_thought: "click OK", error_category: "wrong element" }) });
  const calls = [];
  const undo = createUndo({
    page: { editable: () => editable }, store,
    draft: { edited: () => calls.push("edited"), save: () => calls.push("save"), setSaveState: (kind, text) => calls.push([kind, text]) },
    hooks: { renderAll: () => calls.push("renderAll"), checkActions: () => calls.push("checkActions") },
  });
  const form = () => store.get("form");
  const press = (key, extra = {}, target = doc.body) => {
    const event = new Event("keydown", { key, code: `Key${key.toUpperCase()}`, ctrlKey: true, metaKey: false, altKey: false, shiftKey: false, ...extra });
    target.dispatchEvent(event);
    return event.defaultPrevented;
  };
  return { doc, store, undo, calls, form, press, undoButton, redoButton, note, help, reason };
}

test("each recorded change is a step; an undo puts the form back, redraws, checks and saves; a redo goes forward", () => {
  const { undo, calls, form, store, undoButton, redoButton } = workspace();
  assert.deepEqual([undoButton.disabled, redoButton.disabled], [true, true]);
  undo.recordChange(null);  // nothing changed: no step
  assert.equal(window.wsHistory().past, 0);
  form().corrected_thought = "click O";
  undo.recordChange("field:corrected_thought");
  form().corrected_thought = "click OK button";
  undo.recordChange("field:corrected_thought");
  assert.deepEqual(window.wsHistory(), { past: 1, future: 0 });  // typing in one field: one step
  assert.deepEqual([undoButton.disabled, redoButton.disabled], [false, true]);
  store.set("cursor", { slot: "corrected" });
  undoButton.click();
  assert.equal(form().corrected_thought, "click OK");
  assert.equal(store.get("cursor"), null);
  assert.deepEqual(calls, ["renderAll", "checkActions", "edited", ["dirty", "Undone — saving…"], "save"]);
  assert.deepEqual([undoButton.disabled, redoButton.disabled], [true, false]);
  calls.length = 0;
  redoButton.click();
  assert.equal(form().corrected_thought, "click OK button");
  assert.deepEqual(calls[3], ["dirty", "Redone — saving…"]);
  undo.undo();
  undo.undo();  // nothing further back
  assert.deepEqual(window.wsHistory(), { past: 0, future: 1 });
});

test("what the server derived joins the last step; a replaced form starts the history again", () => {
  const { undo, form } = workspace();
  form().verdict = "no_error";
  undo.recordChange(null);
  form().tau = null;  // the server's rule: no τ without an error
  undo.foldChange();
  undo.undo();
  assert.deepEqual([form().verdict, form().tau], ["error", 3]);
  undo.resetHistory();
  assert.deepEqual(window.wsHistory(), { past: 0, future: 0 });
});

test("a destructive change's banner names what it discarded; its undo goes back to before it, typing included", () => {
  const { undo, form, note, press, reason } = workspace();
  const done = undo.undoable("Marked the trace unusable", () => {
    form().verdict = "unusable";
    form().tau = null;
    form().corrected_thought = "";
    undo.recordChange(null);
    return true;
  });
  assert.equal(done, true);
  assert.equal(note.hidden, false);
  assert.equal(note.children[0].textContent, "Marked the trace unusable.");
  assert.equal(note.textContent, "Marked the trace unusable. Discarded τ = 3 and the corrected thought. Undo Ctrl+Z");
  assert.equal(note.querySelector("#ws-undo-note-btn").textContent, "Undo Ctrl+Z");
  // The reason typed into the field the change focused: the banner's undo takes it back too.
  form().unusable_reason = "no screenshots";
  undo.recordChange("field:unusable_reason");
  assert.equal(note.hidden, false);
  assert.equal(press("z", {}, reason), false);  // typed since: the field's own undo
  note.querySelector("#ws-undo-note-btn").click();
  assert.deepEqual([form().verdict, form().tau, form().corrected_thought, form().unusable_reason], ["error", 3, "click OK", null]);
  assert.equal(note.hidden, true);
});

test("Ctrl+Z right after a destructive change undoes it even from the field it focused; a refused or empty change shows nothing", () => {
  const { undo, form, note, press, reason, help } = workspace();
  assert.equal(undo.undoable(() => "never shown", () => false), false);
  assert.equal(undo.undoable("Nothing", () => true), true);
  assert.equal(note.hidden, true);
  undo.undoable(() => `Marked the first error at step ${form().tau}`, () => { form().tau = 5; undo.recordChange(null); });
  assert.equal(note.children[0].textContent, "Marked the first error at step 5.");
  help.hidden = false;
  assert.equal(press("z", {}, reason), false);  // the help is open: its keys only
  help.hidden = true;
  assert.equal(press("z", {}, reason), true);
  assert.equal(form().tau, 3);
  assert.equal(press("z", { shiftKey: true }), true);
  assert.equal(form().tau, 5);
  assert.equal(press("y"), true);  // nothing to redo: taken, nothing happens
  assert.equal(press("x"), false);
  undo.undoable("A change", () => { form().note = "n"; undo.recordChange(null); });
  form().verdict = "no_error";
  undo.recordChange(null);  // another change ends the banner
  assert.equal(note.hidden, true);
});

test("read only, or while a conflict is open, nothing is undone; a page without the buttons still has the keys", () => {
  const readOnly = workspace({ editable: false });
  readOnly.form().note = "n";
  readOnly.undo.recordChange(null);
  assert.equal(readOnly.undoButton.disabled, true);
  readOnly.undo.undo();
  assert.equal(readOnly.form().note, "n");
  const conflict = workspace({ buttons: false });
  conflict.form().note = "n";
  conflict.undo.recordChange(null);
  conflict.store.set("blocked", "conflict");
  assert.equal(conflict.press("z"), true);
  assert.equal(conflict.form().note, "n");
  conflict.store.set("blocked", null);
  conflict.press("z");
  assert.equal(conflict.form().note, null);
});
