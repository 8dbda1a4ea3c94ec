// @ts-check
/* Hint labels for the keyboard cursor (as browser keyboard-navigation extensions label links): a short letter label
   on every element the source recorded on the screen, typed to put the cursor on that element; on a screen without
   elements, the view's nine cells labelled 1–9. Pure (tests/js/hints.test.mjs); keyboard.js shows and reads them. */
import { keyOf } from "../keys.js";

// The letters labels are made of, the easiest to type first (the home row, then the rows above and below): the
// nearest elements get the first ones.
export const HINT_LETTERS = "asdfghjklqwertyuiopzxcvbnm";

/* ``count`` labels, none a prefix of another, as short as they can be: one letter each up to the alphabet's size;
   beyond, the last one-letter labels each become the first letter of a run of two-letter labels, as few as it
   takes (26 + 25 per letter given up), so the first labels stay one letter. In order: the shortest first. */
/** @param {number} count @param {string} [letters] @returns {string[]} */
export function hintLabels(count, letters = HINT_LETTERS) {
  if (count <= 0) return [];
  const labels = [...letters];
  while (labels.length < count) {
    // The last of the shortest labels becomes a prefix: its run of longer labels goes to the end.
    const shortest = labels[0].length;
    let last = labels.length - 1;
    while (labels[last].length !== shortest) last -= 1;
    const [prefix] = labels.splice(last, 1);
    labels.push(...[...letters].map((c) => prefix + c));
  }
  return labels.slice(0, count);
}

/* The labels of ``boxes`` ([x1, y1, x2, y2] in fractions of the screenshot) from the cursor at ``at`` (fractions),
   on a screenshot of ``size`` [width, height] pixels: nearest the cursor first (the distance from ``at`` to each
   box's centre, weighed in pixels), so the likely targets get one letter. [{label, element}] (element: the box's
   index), in label order. */
/**
 * @param {number[][]} boxes @param {number[]} at @param {number[]} size
 * @returns {{ label: string, element: number }[]}
 */
export function assignHints(boxes, at, size) {
  const [w, h] = size;
  const away = (b) => Math.hypot(((b[0] + b[2]) / 2 - at[0]) * w, ((b[1] + b[3]) / 2 - at[1]) * h);
  const order = (boxes || []).map((b, i) => ({ i, d: away(b) })).sort((a, b) => a.d - b.d || a.i - b.i);
  const labels = hintLabels(order.length);
  return order.map(({ i }, n) => ({ label: labels[n], element: i }));
}

/* The view ``range`` ([[x0, x1], [y0, y1]], fractions of the screenshot) cut in 3×3 cells labelled 1–9 as a
   keypad reads (1 top left, 9 bottom right): [{label, at (the cell's centre), range (the cell)}]. The cursor put in
   a cell halves within it: one arrow press an axis brings it within a twelfth of the view of any point. */
/**
 * @param {number[][]} range
 * @returns {{ label: string, at: number[], range: number[][] }[]}
 */
export function gridCells(range) {
  const [[x0, x1], [y0, y1]] = range;
  const cw = (x1 - x0) / 3, ch = (y1 - y0) / 3;
  const cells = [];
  for (let row = 0; row < 3; row++) {
    for (let col = 0; col < 3; col++) {
      const cx = [x0 + col * cw, x0 + (col + 1) * cw], cy = [y0 + row * ch, y0 + (row + 1) * ch];
      cells.push({ label: String(row * 3 + col + 1), at: [(cx[0] + cx[1]) / 2, (cy[0] + cy[1]) / 2], range: [cx, cy] });
    }
  }
  return cells;
}

/* What ``typed`` (the keys typed since the labels were shown, any case) reaches among ``hints`` ([{label}]):
   {hit: the hint whose label it is} when it is one, {prefix: true} while it begins some labels (those stay shown;
   the next key decides), else {miss: true} (the key is not taken). */
/**
 * A label shown over the screenshot: an element's (assignHints) or a cell's (gridCells).
 * @typedef {{ label: string, [field: string]: any }} Hint
 */
/**
 * @param {Hint[]} hints @param {string} typed
 * @returns {{ hit?: Hint, prefix?: boolean, miss?: boolean }}
 */
export function hintTyped(hints, typed) {
  const t = typed.toLowerCase();
  const hit = hints.find((h) => h.label === t);
  if (hit) return { hit };
  return hints.some((h) => h.label.startsWith(t)) ? { prefix: true } : { miss: true };
}

/* A key press while the labels are shown: {name: "close"} (Esc), {name: "back"} (Backspace: the last key typed
   taken back), {name: "type", arg: the key} (a letter or digit, no modifier), else null (any other key closes the
   labels and does what it does with the cursor out). */
/**
 * @param {{ key: string, code?: string, ctrlKey: boolean, metaKey: boolean, altKey: boolean, shiftKey?: boolean }} event
 * @returns {{ name: string, arg?: string } | null} name: "close", "back" or "type" (``arg``: the key)
 */
export function hintCommandFor(event) {
  if (event.key === "Escape") return { name: "close" };
  if (event.key === "Backspace") return { name: "back" };
  if (event.ctrlKey || event.metaKey || event.altKey) return null;
  const key = keyOf(event);  // on a Russian or Arabic layout, the Latin letter of the key's place
  return /^[a-zA-Z0-9]$/.test(key) ? { name: "type", arg: key } : null;
}
