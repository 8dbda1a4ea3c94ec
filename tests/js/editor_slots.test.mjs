// The correction's editor in the workspace (static/js/workspace/editor.js createEditor) on a stand-in document,
// against the action table as the server serves it: the slots placed on o_τ and o_τ+1 (the served rule), the
// structured editor drawn for each, points placed and boxes drawn in the project's convention, each edit drawn,
// saved and checked by the server (the latest answer kept, the box's centre taken as the point it gives).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createEditor } from "../../static/js/workspace/editor.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { pickFields } from "../../static/js/workspace/autosave.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";

const SHOT = { width: 1000, height: 500, extent: [1000, 1000] };
const CHECK_WAIT = 150;  // the editor waits 120 ms after an edit before asking the server
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A workspace with a first error at τ 3 whose o_τ+1 is screen 4 (step 4's reflection_screen 5: its own rule). */
function workspace({ editable = true, respond, editorState = {} } = {}) {
  const doc = standInDocument();
  const hosts = Object.fromEntries(["corrected", "reflection"].map((slot) => [slot, doc.make("div", { class: "ws-action-editor", data: { slot } })]));
  doc.body.append(hosts.corrected, hosts.reflection);
  const steps = [1, 2, 3, 4, 5].map((index) => ({ index, reflection_screen: index === 3 ? 4 : null, server_no_reflection_reason: index === 5 ? "The source dropped the screen after step 5." : "" }));
  const store = createWorkspaceState({ table: TABLE, form: pickFields({ verdict: "error", tau: 3, editor_state: editorState }) });
  const calls = [], sent = [];
  globalThis.fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    sent.push([init.method, url, body]);
    const [status, data] = respond ? await respond(body) : [200, { canonical: `${body.action ? body.action.type : ""}(…)`, errors: [], valid: true, action: body.action }];
    return { status, json: async () => data };
  };
  const editor = createEditor({
    page: { annotationId: "7", platform: "desktop", editable: () => editable, canonical: { corrected: "click(start_box='(1,2)')", reflection: "" } },
    store, steps: { list: () => steps },
    draft: { edited: (group) => calls.push(group === undefined ? "edited" : ["edited", group]), banner: (kind, message) => calls.push([kind, message]) },
    hooks: Object.fromEntries(["renderAll", "renderStage", "renderPanels", "foldChange"].map((name) => [name, () => calls.push(name)])),
  });
  const form = () => store.get("form");
  return { doc, hosts, store, editor, calls, sent, form };
}

test("the slots follow the served rule: the correction on o_τ, the post-reflection on the screen the step names", () => {
  const { editor, form } = workspace();
  assert.deepEqual([1, 2, 3, 4, 5].map(editor.slotAt), [null, null, "corrected", "reflection", null]);
  assert.equal(editor.reflectionScreen(3), 4);
  assert.equal(editor.reflectionScreen(null), null);
  assert.equal(editor.serverNoReflectionReason(5), "The source dropped the screen after step 5.");
  assert.equal(editor.serverNoReflectionReason(3), "");
  form().verdict = "no_error";
  assert.equal(editor.slotAt(3), null);
  assert.deepEqual(editor.pointArgsOf("drag").map((a) => a.name), ["start_box", "end_box"]);
  assert.equal(editor.takesBox({ type: "click", args: {} }), true);
  assert.equal(editor.takesBox({ type: "hotkey", args: {} }), false);
  assert.equal(editor.snaps({ type: "click", args: {} }), true);
  assert.equal(editor.snaps({ type: "drag", args: {} }), false);
});

test("a type chosen in the editor starts the slot's action afresh; each edit is drawn, saved and checked once", async () => {
  const { editor, hosts, form, calls, sent } = workspace({ editorState: { corrected: { type: "click", args: { start_box: [1, 2] }, style: "point" } } });
  editor.renderEditor("corrected");
  const select = hosts.corrected.querySelector("select.ws-type");
  assert.equal(select.children.find((o) => o.selected).value, "click");
  assert.equal(hosts.corrected.querySelector("[data-canonical]").textContent, "click(start_box='(1,2)')");  // the served text until a check
  select.value = "drag";
  select.dispatchEvent(new Event("change"));
  assert.deepEqual(form().editor_state.corrected, { type: "drag", args: {}, style: "point" });
  assert.deepEqual(calls, ["renderAll", "edited"]);
  editor.placePoint("corrected", [100, 200]);
  editor.placePoint("corrected", [300, 400]);
  assert.deepEqual(form().editor_state.corrected.args, { start_box: [100, 200], end_box: [300, 400] });
  editor.placePoint("corrected", [5, 6]);  // a third click starts the drag again
  assert.deepEqual(form().editor_state.corrected.args, { start_box: [5, 6] });
  await wait(CHECK_WAIT);
  assert.deepEqual(sent, [["POST", "/api/annotations/7/check-action/", { slot: "corrected", action: { type: "drag", args: { start_box: [5, 6] }, style: "point" }, tau: 3 }]]);
  editor.renderEditor("corrected");
  assert.equal(hosts.corrected.querySelector("[data-canonical]").textContent, "drag(…)");
  assert.equal(calls.at(-1), "renderPanels");  // the check's answer redraws the side
});

test("typing in an argument is one step per field and redraws only the stage; an emptied optional one is taken out", async () => {
  const { editor, hosts, form, calls } = workspace({ editorState: { reflection: { type: "type", args: { content: "hi" }, style: "box" } } });
  editor.renderEditor("reflection");
  const content = hosts.reflection.querySelector("[data-arg=content]");
  content.value = "hello";
  content.dispatchEvent(new Event("input"));
  assert.equal(form().editor_state.reflection.args.content, "hello");
  assert.deepEqual(calls, ["renderStage", ["edited", "arg:reflection:content"]]);
  editor.placePoint("reflection", [7, 8]);  // where it types: its optional point
  editor.renderEditor("reflection");
  hosts.reflection.querySelectorAll("button").find((b) => b.textContent === "clear").click();
  assert.deepEqual(form().editor_state.reflection.args, { content: "hello" });
  await wait(CHECK_WAIT);
});

test("each argument's field is of its kind: typed text a textarea in its first letter's direction, keys a line, a direction the table's", async () => {
  const { editor, hosts, form } = workspace({ editorState: {
    reflection: { type: "type", args: { content: "hi" }, style: "point" },
    corrected: { type: "scroll", args: { direction: "down" }, style: "point" },
  } });
  editor.renderEditor("reflection");
  const content = hosts.reflection.querySelector("[data-arg=content]");
  assert.deepEqual([content.tagName, content.dir, content.rows, content.value], ["TEXTAREA", "auto", 2, "hi"]);
  editor.renderEditor("corrected");
  const direction = hosts.corrected.querySelector("select[data-arg=direction]");
  assert.deepEqual(direction.children.map((o) => o.value), ["", ...TABLE.directions]);
  assert.equal(direction.children.find((o) => o.selected).value, "down");
  direction.value = "up";
  direction.dispatchEvent(new Event("change"));
  assert.equal(form().editor_state.corrected.args.direction, "up");
  direction.value = "";
  direction.dispatchEvent(new Event("change"));
  assert.equal("direction" in form().editor_state.corrected.args, false);  // the empty choice takes it out
  form().editor_state.corrected = { type: "hotkey", args: { key: "ctrl c" }, style: "point" };
  editor.renderEditor("corrected");
  const key = hosts.corrected.querySelector("[data-arg=key]");
  assert.deepEqual([key.tagName, key.type, key.value], ["INPUT", "text", "ctrl c"]);
  await wait(CHECK_WAIT);
});

test("a drawn box replaces the point, which the server's check gives back as the box's centre (one undo step)", async () => {
  const { editor, form, calls, sent } = workspace({
    editorState: { corrected: { type: "click", args: { start_box: [1, 2] }, style: "box" } },
    respond: (body) => [200, { canonical: "click(…)", errors: [], valid: true, action: { ...body.action, args: { start_box: [200, 300] } } }],
  });
  editor.drawBox("corrected", SHOT, [100, 100], [300, 200]);  // pixels: a box in the convention
  assert.deepEqual(form().editor_state.corrected, { type: "click", args: {}, style: "box", target_box: [100, 200, 300, 400] });
  calls.length = 0;
  editor.drawBox("corrected", SHOT, [50, 50], [50, 80]);  // a press without a drag draws nothing
  assert.deepEqual(calls, ["renderStage"]);
  await wait(CHECK_WAIT);
  assert.equal(sent.length, 1);
  assert.deepEqual(form().editor_state.corrected.args, { start_box: [200, 300] });
  assert.deepEqual(calls.slice(1), ["foldChange", "renderAll", "edited"]);
  editor.clearBox("corrected");
  assert.equal(form().editor_state.corrected.target_box, undefined);
  await wait(CHECK_WAIT);
});

test("a point placed before any type asks for one; an action started from outside is drawn, saved and checked", async () => {
  const { editor, form, calls, sent } = workspace();
  editor.placePoint("corrected", [1, 1]);
  assert.deepEqual(calls, [["error", "Choose the action type first, then click to place it."]]);
  editor.startSlot("corrected", { type: "hotkey", args: {}, style: "box" });
  editor.placePoint("corrected", [1, 1]);  // a hotkey has no point: nothing
  assert.deepEqual(form().editor_state.corrected.args, {});
  editor.setTargetBox("reflection", [1, 2, 3, 4]);  // no action there: nothing
  editor.clearBox("reflection");
  await wait(CHECK_WAIT);
  assert.deepEqual(sent.map(([, , body]) => body.slot), ["corrected"]);
  editor.checkActions();
  await wait(CHECK_WAIT);
  assert.deepEqual(sent.map(([, , body]) => body.slot), ["corrected", "corrected", "reflection"]);
  form().verdict = "no_error";
  editor.checkActions();  // no first error: nothing to check
  editor.changed("corrected");
  await wait(CHECK_WAIT);
  assert.equal(sent.length, 4);
});

test("only the latest check's answer counts; a refused check changes nothing; read only, the editor cannot be edited", async () => {
  const pending = [];
  const { editor, hosts } = workspace({
    editorState: { corrected: { type: "click", args: { start_box: [1, 2] }, style: "box" } },
    respond: () => new Promise((resolve) => pending.push(resolve)),
  });
  editor.checkAction("corrected");
  await wait(CHECK_WAIT);
  editor.checkAction("corrected");
  await wait(CHECK_WAIT);
  pending[1]([200, { canonical: "click(start_box='(1,2)')", errors: [], valid: true }]);
  await wait(0);
  pending[0]([200, { canonical: "stale", errors: ["old"], valid: false }]);
  await wait(0);
  editor.renderEditor("corrected");
  assert.equal(hosts.corrected.querySelector("[data-canonical]").textContent, "click(start_box='(1,2)')");
  editor.checkAction("corrected");
  await wait(CHECK_WAIT);
  pending[2]([0, {}]);
  await wait(0);
  editor.renderEditor("corrected");
  assert.equal(hosts.corrected.querySelector("[data-canonical]").textContent, "click(start_box='(1,2)')");

  const readOnly = workspace({ editable: false, editorState: { corrected: { type: "click", args: { start_box: [1, 2] }, style: "box" } } });
  readOnly.editor.renderEditor("corrected");
  assert.equal(readOnly.hosts.corrected.querySelector("select.ws-type").disabled, true);
});
