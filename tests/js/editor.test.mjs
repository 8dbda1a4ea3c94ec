// The correction's slots and placement rules (static/js/workspace/editor.js, static/js/action_editor.js), read
// from the served steps and the served action table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { reflectionScreen, serverNoReflectionReason, slotAt, snaps, takesBox } from "../../static/js/workspace/editor.js";
import { place, placeablePoints } from "../../static/js/action_editor.js";
import { TABLE } from "./served.mjs";

// Three steps: o_2 was not kept, so a first error at step 1 has no post-reflection screen; the last step's is the
// final screen (4), as the server serves it.
const STEPS = [
  { index: 1, reflection_screen: null, server_no_reflection_reason: "The trace has no screenshot after step 1" },
  { index: 2, reflection_screen: 3, server_no_reflection_reason: "" },
  { index: 3, reflection_screen: 4, server_no_reflection_reason: "" },
];

test("the post-reflection's screen is the served one", () => {
  assert.equal(reflectionScreen(STEPS, 1), null);
  assert.equal(reflectionScreen(STEPS, 3), 4);
  assert.equal(reflectionScreen(STEPS, null), null);
});

test("the reason the server records without o_τ+1 is the served one", () => {
  assert.match(serverNoReflectionReason(STEPS, 1), /no screenshot after step 1/);
  assert.equal(serverNoReflectionReason(STEPS, 2), "");
  assert.equal(serverNoReflectionReason(STEPS, null), "");
});

test("the correction is placed on o_τ and the post-reflection on the served o_τ+1", () => {
  const form = { verdict: "error", tau: 2 };
  assert.deepEqual([1, 2, 3, 4].map((i) => slotAt(STEPS, form, i)), [null, "corrected", "reflection", null]);
  assert.deepEqual([1, 2].map((i) => slotAt(STEPS, { verdict: "error", tau: 1 }, i)), ["corrected", null]);
  assert.equal(slotAt(STEPS, { verdict: "no_error", tau: null }, 1), null);
  assert.equal(slotAt(STEPS, { verdict: "error", tau: 3 }, 4), "reflection");
});

test("a drag places its start, then its end, then starts over", () => {
  const action = { type: "drag", args: {} };
  assert.deepEqual(placeablePoints(TABLE, "drag").map((a) => a.name), ["start_box", "end_box"]);
  let counter = place(TABLE, action, 0, [1, 2]);
  counter = place(TABLE, action, counter, [3, 4]);
  assert.deepEqual(action.args, { start_box: [1, 2], end_box: [3, 4] });
  place(TABLE, action, counter, [5, 6]);
  assert.deepEqual(action.args, { start_box: [5, 6] });
});

test("which actions take an element box and snap to a recorded element, from the table", () => {
  assert.equal(takesBox(TABLE, { type: "click" }), true);
  assert.equal(takesBox(TABLE, { type: "hotkey" }), false);
  assert.equal(snaps(TABLE, { type: "click" }), true);
  assert.equal(snaps(TABLE, { type: "drag" }), false);  // two points: a click places, it does not snap
  assert.equal(snaps(TABLE, { type: "wait" }), false);
});
