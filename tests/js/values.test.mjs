// Plain JSON values (static/js/values.js): the one deep copy and equality every page module uses (the workspace's
// draft, undo, editor, panels and history; the review page's edit form).
import { test } from "node:test";
import assert from "node:assert/strict";
import { copy, same } from "../../static/js/values.js";

test("a copy is equal to its value and shares nothing with it", () => {
  const form = { tau: 3, editor_state: { corrected: { type: "click", args: { start_box: [10, 20] } } } };
  const made = copy(form);
  assert.deepEqual(made, form);
  made.editor_state.corrected.args.start_box[0] = 99;
  assert.equal(form.editor_state.corrected.args.start_box[0], 10);
  assert.equal(copy(null), null);
  assert.equal(copy(undefined), undefined);
  assert.equal(copy("τ"), "τ");
});

test("values are the same when their JSON is: nested, in the same key order; a difference anywhere is not", () => {
  assert.ok(same({ a: [1, { b: null }] }, { a: [1, { b: null }] }));
  assert.ok(!same({ a: [1, { b: null }] }, { a: [1, { b: 0 }] }));
  assert.ok(!same({ a: 1, b: 2 }, { b: 2, a: 1 }));
  assert.ok(same(null, null));
  assert.ok(!same(null, undefined));
});
