// Undo and redo of an answer's form (static/js/workspace/history.js), and the words of the banner that offers it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GROUP_PAUSE_MS, canRedo, canUndo, createHistory, discarded, discardedWords, historyCommandFor, record, redo, undo }
  from "../../static/js/workspace/history.js";
import { fieldWords } from "../../static/js/workspace/undo.js";

const form = (fields) => Object.assign({ verdict: "error", tau: 3, error_category: "grounding", corrected_thought: "open it",
  editor_state: { corrected: { type: "click", args: { start_box: [10, 20] }, target_box: [0, 0, 40, 40] }, reflection: null } }, fields);

test("each change is a step: undone and redone in order, exactly, over 60 steps", () => {
  let h = createHistory();
  let current = form({ note: "0" });
  const seen = [current];
  for (let i = 1; i <= 60; i++) {
    const next = form({ note: String(i) });
    h = record(h, current, next, { at: i * 5000 });
    current = next;
    seen.push(current);
  }
  for (let i = 59; i >= 0; i--) {
    const back = undo(h, current);
    h = back.history; current = back.form;
    assert.deepEqual(current, seen[i]);
  }
  assert.equal(canUndo(h), false);
  assert.equal(undo(h, current), null);
  for (let i = 1; i <= 60; i++) {
    const again = redo(h, current);
    h = again.history; current = again.form;
    assert.deepEqual(current, seen[i]);
  }
  assert.equal(canRedo(h), false);
});

test("a restored form is a copy: editing it leaves the history as it was", () => {
  const a = form({}), b = form({ corrected_thought: "changed" });
  const back = undo(record(createHistory(), a, b, {}), b);
  back.form.editor_state.corrected.args.start_box[0] = 999;
  assert.equal(undo(record(createHistory(), a, b, {}), b).form.editor_state.corrected.args.start_box[0], 10);
  assert.equal(a.editor_state.corrected.args.start_box[0], 10);
});

test("typing in one field within a pause is one step; a pause, another field or no group starts a new one", () => {
  let h = createHistory();
  h = record(h, form({ note: "" }), form({ note: "a" }), { group: "field:note", at: 1000 });
  h = record(h, form({ note: "a" }), form({ note: "ab" }), { group: "field:note", at: 1000 + GROUP_PAUSE_MS / 2 });
  assert.equal(h.past.length, 1);
  assert.deepEqual(undo(h, form({ note: "ab" })).form, form({ note: "" }));
  h = record(h, form({ note: "ab" }), form({ note: "abc" }), { group: "field:note", at: 1000 + GROUP_PAUSE_MS * 3 });
  assert.equal(h.past.length, 2);
  h = record(h, form({ note: "abc" }), form({ note: "abc", corrected_thought: "x" }), { group: "field:corrected_thought", at: 1000 + GROUP_PAUSE_MS * 3 + 1 });
  assert.equal(h.past.length, 3);
  h = record(h, form({ corrected_thought: "x" }), form({ corrected_thought: "x", tau: 4 }), { at: 1000 + GROUP_PAUSE_MS * 3 + 2 });
  assert.equal(h.past.length, 4);
});

test("a change after an undo drops what could be redone; no change records nothing; the oldest steps go past the limit", () => {
  let h = record(createHistory(), form({ note: "1" }), form({ note: "2" }), {});
  h = undo(h, form({ note: "2" })).history;
  assert.equal(canRedo(h), true);
  h = record(h, form({ note: "1" }), form({ note: "3" }), {});
  assert.equal(canRedo(h), false);
  assert.equal(record(h, form({}), form({}), {}), h);
  let long = createHistory();
  for (let i = 0; i < 30; i++) long = record(long, { n: i }, { n: i + 1 }, { limit: 10 });
  assert.equal(long.past.length, 10);
  assert.deepEqual(long.past[0], { n: 20 });
});

test("the banner names what a verdict change discarded, and what a starting point replaced", () => {
  const before = form({});
  const noError = form({ verdict: "no_error", tau: null, error_category: "", corrected_thought: "", editor_state: { corrected: null, reflection: null } });
  const words = discardedWords(discarded(before, noError, fieldWords(before)));
  assert.equal(words, "Discarded τ = 3, the category “grounding”, the corrected thought and the corrected action.");
  const started = form({ corrected_thought: "the model's", editor_state: { corrected: { type: "hotkey", args: { key: "enter" } }, reflection: null } });
  assert.equal(discardedWords(discarded(before, started, fieldWords(before))), "Replaced the corrected thought and the corrected action.");
  assert.equal(discardedWords(discarded(form({ corrected_thought: "" }), form({ corrected_thought: "new" }), fieldWords(before))), "");
});

test("a box or points taken off an action that stays are named as such", () => {
  const before = form({});
  const noBox = form({ editor_state: { corrected: { type: "click", args: { start_box: [10, 20] } }, reflection: null } });
  assert.equal(discardedWords(discarded(before, noBox, fieldWords(before))), "Discarded the corrected action's element box.");
  const noPoint = form({ editor_state: { corrected: { type: "click", args: {}, target_box: [0, 0, 40, 40] }, reflection: null } });
  assert.equal(discardedWords(discarded(before, noPoint, fieldWords(before))), "Discarded the corrected action's point.");
});

test("Ctrl+Z undoes, Ctrl+Shift+Z and Ctrl+Y redo, outside a text field only", () => {
  const key = (k, extra) => Object.assign({ key: k, ctrlKey: true, metaKey: false, altKey: false, shiftKey: false }, extra);
  assert.equal(historyCommandFor(key("z"), false), "undo");
  assert.equal(historyCommandFor(key("Z", { shiftKey: true }), false), "redo");
  assert.equal(historyCommandFor(key("y"), false), "redo");
  assert.equal(historyCommandFor(key("z", { ctrlKey: false, metaKey: true }), false), "undo");
  assert.equal(historyCommandFor(key("z"), true), null);  // the text field's own undo
  assert.equal(historyCommandFor(key("z", { ctrlKey: false }), false), null);
  assert.equal(historyCommandFor(key("z", { altKey: true }), false), null);
  // Other keys with Ctrl are the browser's (Ctrl+S, Ctrl+Shift+Y).
  assert.equal(historyCommandFor(key("s"), false), null);
  assert.equal(historyCommandFor(key("Y", { shiftKey: true }), false), null);
});
