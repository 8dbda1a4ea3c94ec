// The correction's slots and placement rules (static/js/workspace/editor.js, static/js/action_editor.js), read
// from the served steps and the served action table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEditor, reflectionScreen, serverNoReflectionReason, slotAt, snaps, takesBox } from "../../static/js/workspace/editor.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { createSteps } from "../../static/js/workspace/steps.js";
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

// The editor made over a store and the served table: what it does to the form, and what it tells the page.
function editorOver(form) {
  const store = createWorkspaceState({ form, table: TABLE, current: 2 });
  const told = [];
  const steps = createSteps({ initial: STEPS, count: 3, finalShot: null, size: 50, fetchWindow: async () => ({ status: 0, data: {} }), loaded() {}, failed() {} });
  const editor = createEditor({
    page: { annotationId: "1", platform: "desktop", editable: () => true, canonical: {} }, store, steps,
    draft: { edited: (group) => told.push(["edited", group]), banner: (kind, message) => told.push(["banner", message]) },
    hooks: { renderAll: () => told.push(["renderAll"]), renderStage: () => told.push(["renderStage"]), renderPanels() {}, foldChange() {} },
  });
  return { store, editor, told };
}
const emptyForm = () => ({ verdict: "error", tau: 2, editor_state: { corrected: null, reflection: null } });

test("the editor reads the slot of a screen from the form in the store, as it is now", () => {
  const { store, editor } = editorOver(emptyForm());
  assert.equal(editor.slotAt(2), "corrected");
  assert.equal(editor.slotAt(3), "reflection");
  store.set("form", { ...emptyForm(), tau: 3 });
  assert.equal(editor.slotAt(2), null);
  assert.equal(editor.slotAt(4), "reflection");
  assert.equal(editor.reflectionScreen(1), null);
});

test("a point with no action type chosen is refused in words, and nothing is edited", () => {
  const { store, editor, told } = editorOver(emptyForm());
  editor.placePoint("corrected", [10, 10]);
  assert.deepEqual(told, [["banner", "Choose the action type first, then click to place it."]]);
  assert.equal(store.get("form").editor_state.corrected, null);
});

test("a slot started from outside places its points from the first again, each placement drawn and saved", () => {
  const { store, editor, told } = editorOver(emptyForm());
  editor.startSlot("corrected", { type: "drag", args: {} });
  editor.placePoint("corrected", [1, 2]);
  editor.placePoint("corrected", [3, 4]);
  assert.deepEqual(store.get("form").editor_state.corrected.args, { start_box: [1, 2], end_box: [3, 4] });
  editor.startSlot("corrected", { type: "drag", args: {} });
  editor.placePoint("corrected", [5, 6]);
  assert.deepEqual(store.get("form").editor_state.corrected.args, { start_box: [5, 6] });
  assert.equal(told.filter(([what]) => what === "edited").length, 5);
  assert.equal(told.filter(([what]) => what === "renderAll").length, 5);
});

test("a new element box drops the point placed before it (the server's default is the box's centre)", () => {
  const { store, editor } = editorOver(emptyForm());
  editor.startSlot("corrected", { type: "click", args: {} });
  editor.placePoint("corrected", [10, 20]);
  assert.deepEqual(store.get("form").editor_state.corrected.args, { start_box: [10, 20] });
  editor.setTargetBox("corrected", [0, 0, 100, 100]);
  assert.deepEqual(store.get("form").editor_state.corrected, { type: "click", args: {}, target_box: [0, 0, 100, 100] });
  editor.clearBox("corrected");
  assert.equal("target_box" in store.get("form").editor_state.corrected, false);
});

test("a box of no size (a press without a drag) draws nothing", () => {
  const { store, editor, told } = editorOver(emptyForm());
  editor.startSlot("corrected", { type: "click", args: {} });
  told.length = 0;
  const shot = { width: 1000, height: 1000, extent: [1000, 1000] };
  editor.drawBox("corrected", shot, [50, 50], [50, 50]);
  assert.deepEqual(told, [["renderStage"]]);
  assert.equal(store.get("form").editor_state.corrected.target_box, undefined);
});
