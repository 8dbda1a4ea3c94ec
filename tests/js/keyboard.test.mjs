// The workspace's key tables (static/js/workspace/keyboard.js): an event in, a command out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  KEYS, commandFor, cursorCommandFor, cursorMove, helpKey, isOptionKey, keysFor, offScreenWords,
} from "../../static/js/workspace/keyboard.js";

const key = (k, extra) => Object.assign({ key: k, code: "", ctrlKey: false, metaKey: false, altKey: false, shiftKey: false }, extra);

test("page keys act only when no field has the focus and no modifier is held", () => {
  assert.deepEqual(commandFor(key("j"), false), { name: "next" });
  assert.deepEqual(commandFor(key("ArrowLeft"), false), { name: "previous" });
  assert.deepEqual(commandFor(key("e"), false), { name: "error" });
  assert.equal(commandFor(key("j"), true), null);
  assert.equal(commandFor(key("j", { ctrlKey: true }), false), null);
  assert.equal(commandFor(key("q"), false), null);
});

test("a digit 1-9 without a modifier picks a list's option by its place (e 1: the first category)", () => {
  assert.equal(isOptionKey(key("1")), true);
  assert.equal(isOptionKey(key("9")), true);
  assert.equal(isOptionKey(key("0")), false);
  assert.equal(isOptionKey(key("a")), false);
  assert.equal(isOptionKey(key("1", { altKey: true })), false);  // Alt+digit takes an alternative
  assert.equal(isOptionKey(key("1", { ctrlKey: true })), false);
});

test("save, submit and escape work while typing; Alt+digit takes an alternative by the key's place", () => {
  assert.deepEqual(commandFor(key("s", { ctrlKey: true }), true), { name: "save" });
  assert.deepEqual(commandFor(key("Enter", { metaKey: true }), true), { name: "submit" });
  assert.deepEqual(commandFor(key("Escape"), true), { name: "escape" });
  assert.deepEqual(commandFor(key("¡", { altKey: true, code: "Digit1" }), true), { name: "take", arg: 1 });
  assert.equal(commandFor(key("0", { altKey: true, code: "Digit0" }), false), null);
});

test("the cursor's keys: arrows move (Shift: a fine nudge), Enter places, b starts a box once, Esc leaves", () => {
  assert.deepEqual(cursorCommandFor(key("ArrowUp", { shiftKey: true }), false), { name: "move", arg: { d: [0, -1], fine: true } });
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

// Three presses an axis towards ``target`` from ``start`` (each towards where the target is): where the cursor ends.
function bisect(start, target, presses = 3) {
  let at = start, range = [[0, 1], [0, 1]];
  for (let i = 0; i < presses; i++) {
    for (const axis of [0, 1]) {
      const sign = Math.sign(target[axis] - at[axis]);
      if (!sign) continue;
      const d = axis ? [0, sign] : [sign, 0];
      ({ at, range } = cursorMove(at, range, d, false, 0.01));
    }
  }
  return at;
}

test("the keyboard cursor reaches any point of the view in three presses an axis", () => {
  const corners = [[0, 0], [1, 0], [0, 1], [1, 1], [0.02, 0.97], [0.5, 0.5], [0.31, 0.77]];
  for (const start of [[0.2, 0.26], [0, 0], [1, 1], [0.5, 0.5], [0.9, 0.1]]) {
    for (const target of corners) {
      const at = bisect(start, target);
      const off = Math.max(Math.abs(at[0] - target[0]), Math.abs(at[1] - target[1]));
      // Within an eighth of the view from anywhere, a sixteenth from the centre.
      assert.ok(off <= (start[0] === 0.5 ? 1 / 16 : 1 / 8) + 1e-9, `${start} → ${target}: ${at}`);
    }
  }
  // More presses, finer: five an axis from the worst start, within a thirty-second.
  const at = bisect([0, 0], [0.97, 0.93], 5);
  assert.ok(Math.abs(at[0] - 0.97) <= 1 / 32 && Math.abs(at[1] - 0.93) <= 1 / 32, `${at}`);
  // A press never moves less than the fine step; Shift+arrow moves exactly that, and widens the range if it must.
  const tiny = cursorMove([0.5, 0.5], [[0.5, 0.501], [0, 1]], [1, 0], false, 0.01);
  assert.deepEqual(tiny.at, [0.51, 0.5]);
  assert.deepEqual(tiny.range[0], [0.5, 0.51]);
  const fine = cursorMove([0.5, 0.5], [[0, 1], [0, 1]], [0, -1], true, 0.01);
  assert.deepEqual(fine, { at: [0.5, 0.49], range: [[0, 1], [0, 1]] });
  assert.deepEqual(cursorMove([0, 0], [[0, 1], [0, 1]], [-1, 0], false, 0.01).at, [0, 0]);  // at the edge it stays
});

test("Ctrl+arrow (⌘+arrow) jumps to a recorded element; not while a box's corner is moved", () => {
  assert.deepEqual(cursorCommandFor(key("ArrowRight", { ctrlKey: true }), false), { name: "jump", arg: { d: [1, 0] } });
  assert.deepEqual(cursorCommandFor(key("ArrowUp", { metaKey: true }), false), { name: "jump", arg: { d: [0, -1] } });
  assert.equal(cursorCommandFor(key("ArrowUp", { ctrlKey: true }), true), null);
});

test("a jump goes to the element nearest ahead as the eye goes, never to one behind or under the cursor", async () => {
  const { elementInDirection } = await import("../../static/js/workspace/keyboard.js");
  // A 1920×1080 screen: a toolbar row (three buttons), a wide search field under it, a dialog's OK far right.
  const boxes = [
    [100, 40, 180, 80],     // 0: back
    [200, 40, 280, 80],     // 1: forward
    [300, 40, 380, 80],     // 2: reload
    [100, 120, 1800, 160],  // 3: search field, the whole width
    [1700, 900, 1800, 950], // 4: OK
  ];
  const centre = (i) => [(boxes[i][0] + boxes[i][2]) / 2, (boxes[i][1] + boxes[i][3]) / 2];
  assert.equal(elementInDirection(boxes, centre(0), [1, 0]), 1);   // along the row, the next button
  assert.equal(elementInDirection(boxes, centre(1), [1, 0]), 2);
  assert.equal(elementInDirection(boxes, centre(1), [-1, 0]), 0);
  // Down from a button: the wide field right under it (its box crosses the cursor's line), not OK further right.
  assert.equal(elementInDirection(boxes, centre(0), [0, 1]), 3);
  assert.equal(elementInDirection(boxes, centre(3), [0, 1]), 4);
  assert.equal(elementInDirection(boxes, centre(4), [0, 1]), null);  // nothing below the lowest
  assert.equal(elementInDirection(boxes, centre(0), [0, -1]), null);
  assert.equal(elementInDirection([], [10, 10], [1, 0]), null);
  assert.equal(elementInDirection(undefined, [10, 10], [1, 0]), null);
  // Nested boxes with one centre: the smaller one (what a click there meant).
  assert.equal(elementInDirection([[0, 0, 400, 400], [150, 150, 250, 250]], [10, 200], [1, 0]), 1);
});

test("any recorded element is reached in six presses or fewer, mixing halving arrows and jumps", async () => {
  const { cursorJump } = await import("../../static/js/workspace/keyboard.js");
  const size = [1920, 1080];
  // A dense screen: 48 small elements (8 columns × 6 rows, 40×24 px each: a settings page's toggles).
  const boxes = [];
  for (let r = 0; r < 6; r++) for (let c = 0; c < 8; c++) {
    const x = (60 + c * 240) / size[0], y = (60 + r * 170) / size[1];
    boxes.push([x, y, x + 40 / size[0], y + 24 / size[1]]);
  }
  const on = (at, b) => at[0] >= b[0] && at[0] <= b[2] && at[1] >= b[1] && at[1] <= b[3];
  const arrows = [[1, 0], [-1, 0], [0, 1], [0, -1]];
  // (From the very corner opposite an element, the farthest one takes seven.)
  for (const start of [[0.1, 0.2], [0.5, 0.5], [0.3, 0.8], [0, 0]]) {
    // Breadth first over what six presses can do (an arrow halves, Ctrl+arrow jumps): which elements the point lands on.
    const reached = new Set();
    let frontier = [{ at: start, range: [[0, 1], [0, 1]] }];
    for (let n = 1; n <= 6; n++) {
      const next = [];
      for (const s of frontier) {
        for (const d of arrows) {
          next.push(cursorMove(s.at, s.range, d, false, 0.01));
          const j = cursorJump(boxes, s.at, d, size);
          if (j) next.push(j);
        }
      }
      for (const s of next) boxes.forEach((b, i) => { if (on(s.at, b)) reached.add(i); });
      // Same place, same range: one state (the walk stays small).
      const seen = new Map(next.map((s) => [JSON.stringify([s.at, s.range]), s]));
      frontier = [...seen.values()];
    }
    assert.equal(reached.size, boxes.length, `from ${start}: ${boxes.length - reached.size} not reached`);
  }
  // Without the jumps, the halving alone lands on few of these small elements in six presses.
  let frontier = [{ at: [0.5, 0.5], range: [[0, 1], [0, 1]] }];
  const halvingOnly = new Set();
  for (let n = 1; n <= 6; n++) {
    frontier = frontier.flatMap((s) => arrows.map((d) => cursorMove(s.at, s.range, d, false, 0.01)));
    for (const s of frontier) boxes.forEach((b, i) => { if (on(s.at, b)) halvingOnly.add(i); });
  }
  assert.ok(halvingOnly.size < boxes.length / 2, `${halvingOnly.size}`);
  // A jump lands on the element's centre and keeps the arrows within it.
  const j = cursorJump(boxes, [0.01, (60 + 12) / size[1]], [1, 0], size);
  assert.equal(j.element, 0);
  assert.deepEqual(j.range, [[boxes[0][0], boxes[0][2]], [boxes[0][1], boxes[0][3]]]);
  const inside = cursorMove(j.at, j.range, [1, 0], false, 0.001);
  assert.ok(on(inside.at, boxes[0]));
  assert.equal(cursorJump([], [0.5, 0.5], [1, 0], size), null);
});

test("while the help is open: Tab stays in it, ? and Esc close it, the page's other keys wait, the rest pass", () => {
  assert.equal(helpKey(key("Tab")), "trap");
  assert.equal(helpKey(key("?")), "close");
  assert.equal(helpKey(key("Escape")), "close");
  assert.equal(helpKey(key("e")), "wait");  // would mark τ behind the dialog, unseen
  assert.equal(helpKey(key("s", { ctrlKey: true })), "wait");
  assert.equal(helpKey(key("q")), null);
  assert.equal(helpKey(key("c", { ctrlKey: true })), null);  // copying from the help stays the browser's
});

test("a key refused off its screen says where it works: s and Alt+digit on τ, the others on τ or τ+1", () => {
  assert.match(offScreenWords("start"), /works on the correction's screen \(τ; t goes there\)/);
  assert.match(offScreenWords("take"), /correction's screen/);
  for (const command of ["thought", "point", "box", "hints", "delete_box"]) {
    assert.match(offScreenWords(command), /works on τ or the screen after it/);
  }
});
