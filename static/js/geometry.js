// @ts-check
/* Coordinates on the page, in one form. Every point, element box and action reaches the page in the project's
   coordinate convention (what the server stores and its grammar checks, traces/grammar.py), and every screenshot
   with its pixel size and its extent: the convention's range that spans it (annotation.selectors.model_extent:
   1000 × 1000 for relative-1000, the smart-resized size, or the pixels). Each convention is linear in the pixels,
   so {width, height, extent} converts both ways. Pure: no DOM, unit-tested by tests/js/geometry.test.mjs. */

// The grammar's arithmetic, operation for operation (traces/grammar.py, to_screen_pixels / from_screen_pixels:
// ``x / 1000 * width``, ``x / width * 1000``), so a point comes out exactly as the server computes it, floating-point
// ties included (503.5 px of 1000 is 503.49999999999994 there, and here); tests/js/geometry.test.mjs compares with
// points the grammar computed.
const scale = (v, from, to) => v / from * to;

// The grammar's one rounding (traces/grammar.py, model_number): to the nearest integer, a tie (an exact .5 of the
// float as computed) to the even neighbour, as Python's round() does. v - floor(v) is exact in floating point, so a
// tie here is a tie there.
const halfEven = (v) => {
  const floor = Math.floor(v), rest = v - floor;
  if (rest < 0.5) return floor;
  if (rest > 0.5) return floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
};

/**
 * A screenshot as every module converts on it: its pixel size and its extent (the convention's range that spans it).
 * @typedef {{ width: number, height: number, extent: number[] }} Shot
 */

/* A point in the convention → screenshot pixels (unrounded). */
/** @type {(shot: Shot, p: number[]) => number[]} */
export const toPx = (shot, p) => [scale(p[0], shot.extent[0], shot.width), scale(p[1], shot.extent[1], shot.height)];

/* Screenshot pixels → a point in the convention, as a model writes it (integers). */
/** @type {(shot: Shot, px: number[]) => number[]} */
export const toModel = (shot, px) => [halfEven(scale(px[0], shot.width, shot.extent[0])),
  halfEven(scale(px[1], shot.height, shot.extent[1]))];

/* A point in the convention → fractions of the image (0..1 on each axis): where a CSS-positioned mark goes (only the
   extent is read: a marker carries its screenshot's). */
/** @type {(shot: { extent: number[] }, p: number[]) => number[]} */
export const toFraction = (shot, p) => [p[0] / shot.extent[0], p[1] / shot.extent[1]];

/* A fraction of the image → a point in the convention (a click on a layer measured in fractions). */
/** @type {(shot: Shot, f: number[]) => number[]} */
export const fractionToModel = (shot, f) => toModel(shot, [f[0] * shot.width, f[1] * shot.height]);

/* The pixel of the screenshot under (clientX, clientY), given the on-screen box of the (transformed) layer that
   holds it: exact at every zoom and pan; clamped to the image. */
/**
 * @param {{ left: number, top: number, width: number, height: number }} rect
 * @param {Shot} shot @param {number} clientX @param {number} clientY @returns {number[]}
 */
export function pixelAt(rect, shot, clientX, clientY) {
  return [Math.min(shot.width, Math.max(0, (clientX - rect.left) / rect.width * shot.width)),
    Math.min(shot.height, Math.max(0, (clientY - rect.top) / rect.height * shot.height))];
}

/* [x1, y1, x2, y2] with x1 ≤ x2, y1 ≤ y2 from two corners in any order. */
/** @type {(a: number[], b: number[]) => number[]} */
export const boxOf = (a, b) => [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])];

/* Whether a box has no area (a press without a drag). */
/** @type {(box: number[]) => boolean} */
export const isEmptyBox = (box) => box[0] === box[2] || box[1] === box[3];

/* Whether point ``p`` lies in ``box`` (edges included), both in the same coordinates. */
/** @type {(box: number[] | null | undefined, p: number[]) => boolean} */
export const inBox = (box, p) => Array.isArray(box) && p[0] >= box[0] && p[0] <= box[2] && p[1] >= box[1] && p[1] <= box[3];

/* A box in the convention → its corners in pixels. */
/** @type {(shot: Shot, box: number[]) => number[]} */
export const boxToPx = (shot, box) => [...toPx(shot, box.slice(0, 2)), ...toPx(shot, box.slice(2))];

/* The index of the smallest recorded element (boxes in the convention) under pixel ``px``, or null: the innermost
   one is what a click there meant. */
/**
 * @param {{ box: number[] }[] | null | undefined} elements
 * @param {Shot} shot @param {number[]} px @returns {number | null}
 */
export function elementAt(elements, shot, px) {
  let best = null, bestArea = Infinity;
  (elements || []).forEach((e, i) => {
    const b = boxToPx(shot, e.box);
    const area = (b[2] - b[0]) * (b[3] - b[1]);
    if (inBox(b, px) && area < bestArea) { best = i; bestArea = area; }
  });
  return best;
}
