// Keys on any layout and the person's shortcut choice (static/js/keys.js), and the workspace's and the review's key
// tables under it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { asPrinted, keyLabel, keyOf, printedLetters, qwertyChar, shortcutKey, titleWithKey } from "../../static/js/keys.js";
import { commandFor, cursorCommandFor, helpKey, isOptionKey, keysFor, offScreenWords } from "../../static/js/workspace/keyboard.js";
import { hintCommandFor } from "../../static/js/workspace/hints.js";
import { historyCommandFor } from "../../static/js/workspace/history.js";
import { reviewCommandFor } from "../../static/js/review_logic.js";

const press = (key, code, extra) => Object.assign({ key, code, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false }, extra);

test("a layout without Latin letters is matched by the key's place; a Latin one by its own letters", () => {
  assert.equal(keyOf(press("у", "KeyE")), "e");  // Russian
  assert.equal(keyOf(press("ث", "KeyE")), "e");  // Arabic
  assert.equal(keyOf(press("У", "KeyE", { shiftKey: true })), "E");
  assert.equal(keyOf(press("a", "KeyQ")), "a");  // AZERTY keeps its printed letter
  assert.equal(keyOf(press("١", "Digit1")), "1");  // Arabic-Indic digit
  assert.equal(keyOf(press("ArrowLeft", "ArrowLeft")), "ArrowLeft");
  assert.equal(keyOf(press("Dead", "KeyE", { altKey: true })), "e");  // Option+e on a Mac
  assert.equal(keyOf(press("¿", "Slash", { altKey: true, shiftKey: true })), "?");
  assert.equal(qwertyChar("Minus", false), "-");
  assert.equal(qwertyChar("F5", false), null);
});

test("the workspace's keys work on Russian and Arabic layouts and leave text fields alone", () => {
  assert.deepEqual(commandFor(press("у", "KeyE"), false), { name: "error" });
  assert.deepEqual(commandFor(press("ث", "KeyE"), false), { name: "error" });
  assert.deepEqual(commandFor(press("о", "KeyJ"), false), { name: "next" });
  assert.equal(commandFor(press("у", "KeyE"), true), null);  // typed into a field: text
  assert.deepEqual(commandFor(press("ы", "KeyS", { ctrlKey: true }), true), { name: "save" });
  assert.equal(isOptionKey(press("١", "Digit1")), true);
  assert.deepEqual(cursorCommandFor(press("и", "KeyB"), false), { name: "box" });
  assert.deepEqual(hintCommandFor(press("ф", "KeyA")), { name: "type", arg: "a" });
  assert.equal(historyCommandFor(press("я", "KeyZ", { ctrlKey: true }), false), "undo");
});

test("single-key shortcuts off: no character key runs a command; the named keys still do", () => {
  assert.equal(commandFor(press("e", "KeyE"), false, "off"), null);
  assert.equal(commandFor(press("e", "KeyE", { altKey: true }), false, "off"), null);
  assert.deepEqual(commandFor(press("ArrowRight", "ArrowRight"), false, "off"), { name: "next" });
  assert.deepEqual(commandFor(press("Enter", "Enter", { ctrlKey: true }), false, "off"), { name: "submit" });
  assert.equal(cursorCommandFor(press("b", "KeyB"), false, "off"), null);
  assert.equal(reviewCommandFor(press("a", "KeyA"), { typing: false, inComment: false, mode: "off" }), null);
  assert.equal(reviewCommandFor(press("ArrowRight", "ArrowRight"), { typing: false, inComment: false, mode: "off" }), "next");
  assert.equal(helpKey(press("?", "Slash", { shiftKey: true }), "off"), "close");
});

test("a modifier required: Alt with the key runs it, the key alone types nothing and runs nothing", () => {
  assert.equal(commandFor(press("e", "KeyE"), false, "modifier"), null);
  assert.deepEqual(commandFor(press("e", "KeyE", { altKey: true }), false, "modifier"), { name: "error" });
  assert.deepEqual(commandFor(press("у", "KeyE", { altKey: true }), false, "modifier"), { name: "error" });
  assert.deepEqual(commandFor(press("¡", "Digit1", { altKey: true }), false, "modifier"), { name: "take", arg: 1 });
  assert.equal(commandFor(press("e", "KeyE", { altKey: true }), false, "single"), null);
  assert.equal(shortcutKey(press("ArrowLeft", "ArrowLeft", { altKey: true }), "modifier"), null);  // the browser's back
  assert.equal(reviewCommandFor(press("a", "KeyA", { altKey: true }), { typing: false, inComment: false, mode: "modifier" }), "accept");
  assert.match(offScreenWords("start", "Alt+t"), /\(τ; Alt\+t goes there\)/);
  assert.match(offScreenWords("delete_box", null), /\(the strip goes to τ\)/);
});

test("the help and the hints write the keys as the person presses them", () => {
  assert.deepEqual(keysFor(["error"]), ["e"]);
  assert.deepEqual(keysFor(["error"], "modifier"), ["Alt+e"]);
  assert.deepEqual(keysFor(["error"], "off"), []);
  assert.deepEqual(keysFor(["previous"], "off"), ["←"]);
  assert.deepEqual(keysFor(["error"], "single", { e: "у" }), ["у"]);
  assert.equal(keyLabel("e", "modifier", { e: "ث" }), "Alt+ث");
  assert.equal(asPrinted("fa", { a: "ф", f: "а" }), "аф");  // a hint label, as typed on a Russian layout
  assert.equal(asPrinted("5", { a: "ф" }), "5");
  assert.deepEqual(printedLetters(new Map([["KeyE", "у"], ["KeyA", "a"], ["Digit1", "1"]])), { e: "у" });
  assert.deepEqual(printedLetters(null, { KeyE: "ث" }), { e: "ث" });
  assert.equal(titleWithKey("First error at this step (e)", "e", "Alt+e"), "First error at this step (Alt+e)");
  assert.equal(titleWithKey("Zoom out (-)", "-", null), "Zoom out");
  assert.equal(titleWithKey("Zoom in (+; or the wheel)", "+", null), "Zoom in (or the wheel)");
  assert.equal(titleWithKey("Zoom in (+; or the wheel)", "+", "Alt++"), "Zoom in (Alt++; or the wheel)");
});
