// The draft (static/js/workspace/autosave.js): its rule of adoption (what the server cleared in its answer, and the
// user has not touched since sending, the page takes over; it keeps no copy of the server's answer rules), how it
// reads a save's answer, how long it waits to retry, and what it sends when the page is hidden or left.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  FIRST_RETRY_MS, LAST_RETRY_MS, adoptCleared, flushPlan, nextRetryDelay, pickFields, readSaveAnswer,
} from "../../static/js/workspace/autosave.js";
import { ERRORS } from "./served.mjs";

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

test("retries while offline wait twice as long each time, never more than half a minute", () => {
  const waits = [FIRST_RETRY_MS];
  for (let i = 0; i < 8; i++) waits.push(nextRetryDelay(waits[waits.length - 1]));
  assert.deepEqual(waits, [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]);
  assert.equal(LAST_RETRY_MS, 30000);
});

test("a save's answer: saved, a conflict only with the newer version named, retried only when offline or failed", () => {
  assert.equal(readSaveAnswer({ status: 200, data: { version: 3 } }), "saved");
  assert.equal(readSaveAnswer({ status: 409, data: { detail: "changed", current: { version: 4 } } }), "conflict");
  assert.equal(readSaveAnswer({ status: 0, data: {} }), "retry");
  assert.equal(readSaveAnswer({ status: 502, data: {} }), "retry");
  assert.equal(readSaveAnswer({ status: 500, data: { detail: "boom" } }), "retry");
});

test("the server's own refusals: a lost login asks to log in again, every other refusal is said and not retried", () => {
  assert.ok(ERRORS.answers.length >= 8);
  for (const answer of ERRORS.answers) {
    const read = readSaveAnswer({ status: answer.status, data: answer.data });
    // A conflict without the newer version in it is a refusal like any other (nothing to offer to load).
    const expected = answer.signed_out ? "signed_out" : answer.status >= 500 ? "retry" : "refused";
    assert.equal(read, expected, answer.what);
  }
});

test("leaving or hiding the page: what is sent depends on whether a save is under way", () => {
  const base = { editable: true, blocked: null, dirty: true, saving: false, leaving: true };
  assert.equal(flushPlan(base), "save");
  assert.equal(flushPlan({ ...base, leaving: false }), "save");
  assert.equal(flushPlan({ ...base, saving: true }), "next_version");
  assert.equal(flushPlan({ ...base, saving: true, leaving: false }), "again");
  assert.equal(flushPlan({ ...base, dirty: false }), "none");
  assert.equal(flushPlan({ ...base, blocked: "conflict" }), "none");
  assert.equal(flushPlan({ ...base, blocked: "restored" }), "none");
  assert.equal(flushPlan({ ...base, editable: false }), "none");
});
