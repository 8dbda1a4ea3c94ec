// The draft's rule of adoption (static/js/workspace/autosave.js): what the server cleared in its answer, and the
// user has not touched since sending, the page takes over; it keeps no copy of the server's answer rules.
import { test } from "node:test";
import assert from "node:assert/strict";
import { adoptCleared, pickFields } from "../../static/js/workspace/autosave.js";

const form = (fields) => pickFields(Object.assign({ verdict: "error", tau: 3, corrected_thought: "t" }, fields));

test("a field the server emptied is taken over when untouched since sending", () => {
  const sent = form({ verdict: "no_error" });
  const mine = form({ verdict: "no_error" });
  const server = form({ verdict: "no_error", tau: null, corrected_thought: "" });
  assert.equal(adoptCleared(mine, sent, server), true);
  assert.equal(mine.tau, null);
  assert.equal(mine.corrected_thought, "");
});

test("a field typed in since sending is kept", () => {
  const sent = form({});
  const mine = form({ corrected_thought: "typed since" });
  const server = form({ corrected_thought: "" });
  assert.equal(adoptCleared(mine, sent, server), false);
  assert.equal(mine.corrected_thought, "typed since");
});

test("points the server dropped from the editor go, the others stay", () => {
  const editor = { corrected: { type: "drag", args: { start_box: [1, 2], end_box: [3, 4] } }, reflection: null };
  const sent = form({ editor_state: editor });
  const mine = form({ editor_state: editor });
  const server = form({ editor_state: { corrected: { type: "drag", args: { start_box: [1, 2] } }, reflection: null } });
  assert.equal(adoptCleared(mine, sent, server), true);
  assert.deepEqual(mine.editor_state.corrected.args, { start_box: [1, 2] });
});

test("pickFields keeps only the answer's fields and always has both editor slots", () => {
  const picked = pickFields({ verdict: "error", tau: 2, id: 7, editor_state: null });
  assert.equal("id" in picked, false);
  assert.deepEqual(picked.editor_state, { corrected: null, reflection: null });
});
