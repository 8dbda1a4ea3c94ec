// @ts-check
/* Actions drawn over a screenshot, from the served action table: each action's ``mark`` (traces/grammar.py,
   ACTION_MARKS) names its shape and its badge; this module knows how to draw a shape and never decides by action
   type. Coordinates come in the one form (the project's convention, converted with the shot's extent).
   ``actionMarks`` is pure (what to draw, as SVG element descriptions; tests/js/overlay.test.mjs) and ``drawAction``
   turns it into SVG. */
import { svg } from "../dom.js";
import { pointArgs, spec } from "../action_editor.js";
import { toPx } from "../geometry.js";

const DIRECTIONS = { up: [0, -1], down: [0, 1], left: [-1, 0], right: [1, 0] };

/* Below this many screen pixels per unit a marker stops shrinking with the screenshot it is drawn on. */
export const MIN_SCREEN_UNIT = 0.7;

/* The unit every marker's size is a multiple of, in screenshot pixels: a thousandth of the screenshot's longer side,
   but never less than MIN_SCREEN_UNIT screen pixels (``imagePerScreen``: screenshot pixels per screen pixel at fit;
   0 when the pane is not laid out yet). A share of the screenshot alone drew a 32x32 screenshot's click as a ring of
   half a pixel, and a phone's as a speck. Divided by the zoom, markers keep their size on screen and never cover more
   of the element being judged as the annotator zooms in. */
/** @param {{ width: number, height: number }} shot @param {number} [zoom] @param {number} [imagePerScreen] @returns {number} */
export function markUnit(shot, zoom, imagePerScreen) {
  const share = Math.max(shot.width, shot.height) / 1000;
  return Math.max(share, MIN_SCREEN_UNIT * (imagePerScreen || 0)) / (zoom || 1);
}

/* What to draw for ``action`` on ``shot`` ({width, height, extent}): {attrs, shapes: [{tag, attrs, text}]}, or null
   when there is nothing to show yet (a key action without a key, a type with no text and no point).
   tone: recorded | fix | alt. options: zoom (markers keep their size on screen), imagePerScreen (see markUnit),
   label (a number on the marker: an alternative's), row (which row of corner badges it takes), attrs (of its group). */
/**
 * How an action is drawn: its group's attributes and its shapes (SVG tags with their attributes and text).
 * @typedef {{ attrs: Record<string, any>, shapes: { tag: string, attrs: Record<string, any>, text?: string }[] }} Marks
 */
/**
 * What overlay.js draws an action with (see actionMarks).
 * @typedef {{ zoom?: number, imagePerScreen?: number, label?: string, row?: number, attrs?: Record<string, string> }} MarkOptions
 */
/**
 * @param {import("../action_editor.js").ActionTable | null} table @param {import("../geometry.js").Shot} shot
 * @param {import("../action_editor.js").Action | null} action @param {string} tone @param {MarkOptions} [options]
 * @returns {Marks | null}
 */
export function actionMarks(table, shot, action, tone, options) {
  const o = options || {};
  if (!action || !action.type) return null;
  const sp = spec(table, action.type);
  /** @type {import("../action_editor.js").ActionMark} */
  const mark = (sp && sp.mark) || { shape: "corner", badge: action.type };
  const args = action.args || {};
  const number = o.label ? `${o.label}` : "";
  const scale = markUnit(shot, o.zoom, o.imagePerScreen);
  const r = 14 * scale, sw = 3 * scale, font = 15 * scale;
  const [startArg, endArg] = pointArgs(table, action.type).map((a) => a.name);
  const start = startArg && Array.isArray(args[startArg]) ? toPx(shot, args[startArg]) : null;
  const end = endArg && Array.isArray(args[endArg]) ? toPx(shot, args[endArg]) : null;
  /** @type {{ tag: string, attrs: Record<string, string | number>, text?: string }[]} */
  const shapes = [];
  let badged = false;
  const badge = (x, y, text) => {
    badged = true;
    text = number ? `${number} ${text}`.trim() : text;
    const pad = 5 * scale;
    const w = Math.min(text.length, 60) * font * 0.6 + 2 * pad;
    shapes.push({ tag: "rect", attrs: { x: x + r * 1.3 - pad, y: y - r * 1.1 - font, width: w, height: font * 1.45, rx: 4 * scale, class: "badge" } });
    shapes.push({ tag: "text", attrs: { x: x + r * 1.3, y: y - r * 1.1, "font-size": font, class: "badge-text" }, text });
  };
  const ring = (p, rr) => shapes.push({ tag: "circle", attrs: { cx: p[0], cy: p[1], r: rr, "stroke-width": sw, class: "ring" } });
  const dot = (p) => shapes.push({ tag: "circle", attrs: { cx: p[0], cy: p[1], r: 3 * scale, class: "dot" } });
  const arrow = (a, b) => shapes.push({ tag: "line", attrs: { x1: a[0], y1: a[1], x2: b[0], y2: b[1], "stroke-width": sw, class: "arrow", "marker-end": `url(#head-${tone})` } });
  const argText = mark.badge_arg ? String(args[mark.badge_arg] === undefined || args[mark.badge_arg] === null ? "" : args[mark.badge_arg]) : "";
  const words = (value) => (value ? `${mark.badge}${mark.badge_join || " "}${value}` : mark.badge);
  if (Array.isArray(action.target_box)) {
    const a = toPx(shot, action.target_box.slice(0, 2)), b = toPx(shot, action.target_box.slice(2));
    shapes.push({ tag: "rect", attrs: { x: a[0], y: a[1], width: b[0] - a[0], height: b[1] - a[1], "stroke-width": sw * 0.7, class: "element-box" } });
  }
  // Actions without a point get a badge in the corner: the recorded one on the first row, the correction on the
  // row below, so neither hides the other.
  const corner = [shot.width * 0.02, shot.height * 0.06 * (o.row ? o.row : tone === "fix" ? 2 : 1)];
  const shape = mark.shape;
  if (shape === "keys" && !argText.trim()) return null;  // no key chosen yet: nothing to show
  if (shape === "point" && start) {
    ring(start, r); dot(start);
    if (mark.badge) badge(start[0], start[1], mark.badge);
  } else if (shape === "double" && start) {
    ring(start, r); ring(start, r * 1.6); dot(start); badge(start[0], start[1], mark.badge);
  } else if (shape === "path" && start) {
    ring(start, r * 0.8); dot(start);
    if (end) arrow(start, end);
    badge(start[0], start[1], mark.badge);
  } else if (shape === "scroll") {
    const p = start || [shot.width / 2, shot.height / 2];
    const d = DIRECTIONS[argText] || DIRECTIONS.down;
    const len = 90 * scale;
    ring(p, r * 0.8); dot(p);
    arrow(p, end || [p[0] + d[0] * len, p[1] + d[1] * len]);
    badge(p[0], p[1], words(argText));
  } else if (shape === "text") {
    if (!start && !argText) return null;  // nothing typed and nowhere to type it yet
    const p = start || corner;
    if (start) { ring(p, r * 0.8); dot(p); }
    badge(p[0], p[1], words(JSON.stringify(argText).slice(1, -1)));
  } else if (shape === "keys") {
    badge(corner[0], corner[1], words(argText.trim().split(/\s+/).join(" + ")));
  } else {
    // A corner action, or a pointed one whose point is not placed yet.
    badge(corner[0], corner[1], shape === "corner" ? words(argText) : mark.badge || action.type);
  }
  if (number && !badged && start) badge(start[0], start[1], "");  // a plain click still shows its number
  return { attrs: Object.assign({ class: "mark " + tone, "data-action": action.type }, o.attrs || {}), shapes };
}

/* Draw ``action`` into the SVG ``layer`` (see actionMarks). */
/**
 * @param {Element} layer @param {import("../action_editor.js").ActionTable | null} table
 * @param {import("../geometry.js").Shot} shot @param {import("../action_editor.js").Action | null} action
 * @param {string} tone @param {MarkOptions} [options] @returns {void}
 */
export function drawAction(layer, table, shot, action, tone, options) {
  const marks = actionMarks(table, shot, action, tone, options);
  if (!marks) return;
  const g = svg("g", marks.attrs);
  for (const s of marks.shapes) g.appendChild(svg(s.tag, s.attrs, s.text));
  layer.appendChild(g);
}

/* The arrow heads of every tone, once per overlay. */
/** @returns {SVGElement} */
export function arrowHeads() {
  const defs = svg("defs");
  for (const tone of ["recorded", "fix", "alt"]) {
    const m = svg("marker", { id: `head-${tone}`, viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" });
    m.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "head " + tone }));
    defs.appendChild(m);
  }
  return defs;
}
