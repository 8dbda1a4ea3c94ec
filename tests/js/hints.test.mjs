// Hint labels for the keyboard cursor (static/js/workspace/hints.js): labels, their order, the cells, typed keys.
import { test } from "node:test";
import assert from "node:assert/strict";
import { HINT_LETTERS, assignHints, gridCells, hintCommandFor, hintLabels, hintTyped } from "../../static/js/workspace/hints.js";
import { KEYS, cursorCommandFor, keysFor } from "../../static/js/workspace/keyboard.js";

const near = (a, b) => a.every((v, i) => Math.abs(v - b[i]) < 1e-12);
const prefixFree = (labels) => labels.every((a, i) => labels.every((b, j) => i === j || !b.startsWith(a)));

test("one letter each up to 26 labels; beyond, two letters for as few as it takes, none a prefix of another", () => {
  assert.equal(HINT_LETTERS.length, 26);
  assert.equal(new Set(HINT_LETTERS).size, 26);
  assert.deepEqual(hintLabels(0), []);
  assert.deepEqual(hintLabels(3), ["a", "s", "d"]);
  const all26 = hintLabels(26);
  assert.ok(all26.every((l) => l.length === 1));
  for (const count of [27, 30, 40, 51, 52, 200, 676]) {
    const labels = hintLabels(count);
    assert.equal(labels.length, count);
    assert.equal(new Set(labels).size, count);
    assert.ok(prefixFree(labels), `${count}`);
    assert.ok(labels.every((l) => l.length <= 2), `${count}`);
    // The shortest first, and as many one-letter labels as leave room: 26 + 25 for every letter made a prefix.
    const singles = labels.filter((l) => l.length === 1).length;
    assert.equal(singles, 26 - Math.ceil((count - 26) / 25), `${count}`);
    assert.deepEqual(labels.map((l) => l.length), [...labels.map((l) => l.length)].sort());
  }
  assert.deepEqual(hintLabels(30).slice(24), ["n", "ma", "ms", "md", "mf", "mg"]);
  const more = hintLabels(700);  // past 26 × 26: three letters for the farthest, still prefix-free
  assert.ok(prefixFree(more) && more.some((l) => l.length === 3));
});

test("the nearest elements to the cursor get the first (one-letter) labels", () => {
  // A 6 × 6 grid of buttons over a 1920 × 1080 screen, the cursor at the bottom right corner.
  const boxes = [];
  for (let r = 0; r < 6; r++) for (let c = 0; c < 6; c++) boxes.push([c / 6 + 0.01, r / 6 + 0.01, (c + 1) / 6 - 0.01, (r + 1) / 6 - 0.01]);
  const hints = assignHints(boxes, [0.99, 0.99], [1920, 1080]);
  assert.equal(hints.length, 36);
  assert.deepEqual(new Set(hints.map((h) => h.element)).size, 36);
  assert.equal(hints[0].element, 35);  // the bottom right button: "a"
  assert.equal(hints[0].label, "a");
  const far = hints.find((h) => h.element === 0);  // the top left one is farthest: two letters, still ≤ 2
  assert.equal(far.label.length, 2);
  assert.equal(hints.at(-1).element, 0);
  // Distances weigh pixels, not fractions: across a wide screen a fraction counts more than down it.
  const wide = assignHints([[0.5, 0, 0.6, 0.1], [0, 0.5, 0.1, 0.6]], [0, 0], [2000, 500]);
  assert.deepEqual(wide.map((h) => h.element), [1, 0]);
  assert.deepEqual(assignHints([], [0.5, 0.5], [100, 100]), []);
});

test("the view's nine cells, numbered as a keypad reads, each a third of the view an axis", () => {
  const cells = gridCells([[0, 1], [0, 1]]);
  assert.deepEqual(cells.map((c) => c.label), ["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
  assert.ok(near(cells[0].range.flat(), [0, 1 / 3, 0, 1 / 3]));
  assert.ok(near(cells[8].at, [5 / 6, 5 / 6]));
  assert.ok(near(cells[5].at, [5 / 6, 0.5]));
  // Zoomed in: the cells cut what is in view.
  const zoomed = gridCells([[0.25, 0.75], [0.5, 0.8]]);
  assert.ok(near(zoomed[4].at, [0.5, 0.65]));
});

test("typed keys: a label is a hit, the start of labels waits for the next key, anything else is not taken", () => {
  const hints = assignHints(Array.from({ length: 30 }, (_, i) => [i / 30, 0, (i + 1) / 30, 0.1]), [0, 0], [1000, 1000]);
  const two = hints.find((h) => h.label.length === 2);
  assert.deepEqual(hintTyped(hints, "a"), { hit: hints[0] });
  assert.deepEqual(hintTyped(hints, two.label[0].toUpperCase()), { prefix: true });
  assert.deepEqual(hintTyped(hints, two.label.toUpperCase()), { hit: two });
  assert.deepEqual(hintTyped(hints, "mz"), { miss: true });
  assert.deepEqual(hintTyped(gridCells([[0, 1], [0, 1]]), "7").hit.label, "7");
  assert.deepEqual(hintTyped(gridCells([[0, 1], [0, 1]]), "0"), { miss: true });
});

const key = (k, extra) => Object.assign({ key: k, code: "", ctrlKey: false, metaKey: false, altKey: false, shiftKey: false }, extra);

test("keys while the labels are shown: letters and digits are typed, Backspace takes one back, Esc closes", () => {
  assert.deepEqual(hintCommandFor(key("q")), { name: "type", arg: "q" });
  assert.deepEqual(hintCommandFor(key("Q", { shiftKey: true })), { name: "type", arg: "Q" });
  assert.deepEqual(hintCommandFor(key("5")), { name: "type", arg: "5" });
  assert.deepEqual(hintCommandFor(key("Backspace")), { name: "back" });
  assert.deepEqual(hintCommandFor(key("Escape")), { name: "close" });
  assert.equal(hintCommandFor(key("ArrowUp")), null);
  assert.equal(hintCommandFor(key("Enter")), null);
  assert.equal(hintCommandFor(key("s", { ctrlKey: true })), null);
});

test("one key shows the labels, on the page and with the cursor out; the help names it", () => {
  const [hintKey] = Object.keys(KEYS).filter((k) => KEYS[k] === "hints");
  assert.ok(hintKey);
  assert.deepEqual(keysFor(["hints"]), [hintKey]);
  assert.deepEqual(cursorCommandFor(key(hintKey), false), { name: "hints" });
  assert.equal(cursorCommandFor(key(hintKey), true), null);  // drawing a box: its corner is found by the arrows
  // The key does nothing else with the cursor out.
  for (const other of ["ArrowUp", "Enter", "b", "Escape"]) assert.notDeepEqual(cursorCommandFor(key(other), false), { name: "hints" });
  assert.notEqual(hintKey, "b");
});
