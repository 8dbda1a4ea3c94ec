// The workspace's key tables (static/js/workspace/keyboard.js): an event in, a command out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { KEYS, commandFor, cursorCommandFor, keysFor } from "../../static/js/workspace/keyboard.js";

const key = (k, extra) => Object.assign({ key: k, code: "", ctrlKey: false, metaKey: false, altKey: false, shiftKey: false }, extra);

test("page keys act only when no field has the focus and no modifier is held", () => {
  assert.deepEqual(commandFor(key("j"), false), { name: "next" });
  assert.deepEqual(commandFor(key("ArrowLeft"), false), { name: "previous" });
  assert.deepEqual(commandFor(key("e"), false), { name: "error" });
  assert.equal(commandFor(key("j"), true), null);
  assert.equal(commandFor(key("j", { ctrlKey: true }), false), null);
  assert.equal(commandFor(key("q"), false), null);
});

test("save, submit and escape work while typing; Alt+digit takes an alternative by the key's place", () => {
  assert.deepEqual(commandFor(key("s", { ctrlKey: true }), true), { name: "save" });
  assert.deepEqual(commandFor(key("Enter", { metaKey: true }), true), { name: "submit" });
  assert.deepEqual(commandFor(key("Escape"), true), { name: "escape" });
  assert.deepEqual(commandFor(key("¡", { altKey: true, code: "Digit1" }), true), { name: "take", arg: 1 });
  assert.equal(commandFor(key("0", { altKey: true, code: "Digit0" }), false), null);
});

test("the cursor's keys: arrows move (Shift: bigger), Enter places, b starts a box once, Esc leaves", () => {
  assert.deepEqual(cursorCommandFor(key("ArrowUp", { shiftKey: true }), false), { name: "move", arg: { d: [0, -1], big: true } });
  assert.deepEqual(cursorCommandFor(key("Enter"), false), { name: "place" });
  assert.deepEqual(cursorCommandFor(key("b"), false), { name: "box" });
  assert.equal(cursorCommandFor(key("b"), true), null);
  assert.deepEqual(cursorCommandFor(key("Escape"), true), { name: "leave" });
  assert.equal(cursorCommandFor(key("j"), false), null);
});

test("the help writes each command's keys from the one key table", () => {
  assert.deepEqual(keysFor(["previous"]), ["←", "k"]);
  assert.deepEqual(keysFor(["zoom_in", "zoom_out", "zoom_reset"]), ["+", "=", "-", "0"]);
  assert.deepEqual(keysFor(["no_such_command"]), []);
});

test("every command of the key table has a row in the help, and every row names commands of the table", () => {
  const page = readFileSync(new URL("../../frontend_templates/annotation/workspace.html", import.meta.url), "utf8");
  const rows = [...page.matchAll(/<tr data-command="([^"]+)">/g)].map((m) => m[1].split(" "));
  const described = new Set(rows.flat());
  const commands = new Set(Object.values(KEYS));
  assert.deepEqual([...commands].filter((c) => !described.has(c)), []);
  assert.deepEqual([...described].filter((c) => !commands.has(c)), []);
});

test("keys that write a correction act only on the screen it is placed on", async () => {
  const { actsOnScreen } = await import("../../static/js/workspace/keyboard.js");
  assert.equal(actsOnScreen("start", "corrected"), true);
  assert.equal(actsOnScreen("start", "reflection"), false);  // s on τ+1 never rewrites τ's correction
  assert.equal(actsOnScreen("start", null), false);
  assert.equal(actsOnScreen("take", "reflection"), false);
  assert.equal(actsOnScreen("thought", "reflection"), true);
  assert.equal(actsOnScreen("delete_box", null), false);
  assert.equal(actsOnScreen("next", null), true);
  assert.equal(actsOnScreen("no_error", null), true);
});

test("after an action type is picked, the keyboard goes to the text it takes before an optional point", async () => {
  const { nextInput } = await import("../../static/js/workspace/keyboard.js");
  const { TABLE } = await import("./served.mjs");
  assert.deepEqual(nextInput(TABLE, "type"), { field: "content" });
  assert.deepEqual(nextInput(TABLE, "hotkey"), { field: "key" });
  assert.deepEqual(nextInput(TABLE, "click"), { cursor: true });
  assert.deepEqual(nextInput(TABLE, "scroll"), { cursor: true });
  assert.equal(nextInput(TABLE, "wait"), null);
});
