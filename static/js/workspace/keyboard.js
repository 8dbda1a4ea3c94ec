// @ts-check
/* The workspace's keys: one table per mode (``commandFor`` and ``cursorCommandFor`` are pure: an event in, a command
   out; tests/js/keyboard.test.mjs), the keyboard path through a correction (the cursor that places a point or draws
   a box without the mouse), and the buttons that do the same. The help overlay in workspace.html describes each
   command; its keys come from KEYS (``keysFor``), so a key changed here is the key the help shows. */
import { $ } from "../dom.js";
import { boxToPx, toModel, toPx } from "../geometry.js";
import { keyLabel, keyOf, layoutKeys, shortcutKey, shortcutMode, showKeyHints } from "../keys.js";
import { BUTTON_STEP as ZOOM_STEP } from "../zoom.js";
import { assignHints, gridCells, hintCommandFor, hintTyped } from "./hints.js";
import { gettext, interpolate } from "../i18n.js";

// Keys of the page, when no field has the focus: a character key alone, with Alt, or not at all, as the person
// chose (keys.js, ``shortcutKey``); the named keys (arrows, Home, End, Delete) alone in every mode.
export const KEYS = {
  ArrowLeft: "previous", k: "previous", ArrowRight: "next", j: "next", Home: "first", End: "last",
  t: "tau", e: "error", n: "no_error", u: "unusable", f: "thought", p: "point", b: "box",
  // Labels on the screen's recorded elements (or the view's nine cells), typed to put the keyboard point there
  // (workspace/hints.js); with the cursor out too.
  g: "hints",
  // The first starting point offered (the source's human-edited reply, else the model's reply, else the
  // recorded action) is copied into the correction.
  s: "start", w: "wrong", o: "overlay", c: "compare", Delete: "delete_box",
  "+": "zoom_in", "=": "zoom_in", "-": "zoom_out", "0": "zoom_reset", "?": "help",
};

// Keys act where the eye is: a command that writes a slot's thought or action acts only on the screen that slot is
// placed on ("corrected": o_τ only; "any": o_τ or o_{τ+1}, whichever is shown). ``take`` is Alt+digit.
export const SLOT_COMMANDS = { start: "corrected", take: "corrected", thought: "any", point: "any", box: "any", hints: "any", delete_box: "any" };

/* Whether ``command`` may run with ``slotOnScreen`` (the editor slot of the screen shown, or null). */
/** @param {string} command @param {string | null} slotOnScreen @returns {boolean} */
export function actsOnScreen(command, slotOnScreen) {
  const needs = SLOT_COMMANDS[command];
  if (!needs) return true;
  return needs === "any" ? !!slotOnScreen : slotOnScreen === needs;
}

/* Why a key that writes a correction did nothing on the screen shown (``actsOnScreen`` said no). ``tKey``: how the
   person presses t (keys.js ``keyLabel``: "Alt+t" with a modifier, null when single keys are off). */
/** @param {string} command @param {string | null} [tKey] @returns {string} */
export function offScreenWords(command, tKey = "t") {
  const key = tKey === null ? gettext("the strip") : tKey;  // null: single-key shortcuts off
  return SLOT_COMMANDS[command] === "corrected"
    ? interpolate(gettext("That key edits the correction: it works on the correction's screen (τ; %(key)s goes there)."), { key })
    : interpolate(gettext("That key edits the correction: it works on τ or the screen after it (%(key)s goes to τ)."), { key });
}

/* A key press while the help is open: "trap" (Tab stays in the dialog, on its one control), "close" (? and Esc),
   "wait" (any other key of the page: it does nothing behind the dialog), or null (not a key of the page). */
/** @param {import("../keys.js").KeyPress} event @param {string} [mode] @returns {"trap" | "close" | "wait" | null} */
export function helpKey(event, mode = "single") {
  if (event.key === "Tab") return "trap";
  if (keyOf(event) === "?" && !(event.ctrlKey || event.metaKey)) return "close";  // the key that opened it, in any mode
  const command = commandFor(event, false, mode);
  if (command && (command.name === "help" || command.name === "escape")) return "close";
  return command ? "wait" : null;
}

/* Where the keyboard goes after an action type is picked: {field: arg name} when the action takes text (a type's
   content, a hotkey's key: the letters typed next are for it), else {cursor: true} when it takes a point to place,
   else {field} of its first other argument, else null. An optional point (where a type action types) waits for p. */
/**
 * @param {import("../action_editor.js").ActionTable | null} table @param {string} type
 * @returns {{ field?: string, cursor?: boolean } | null}
 */
export function nextInput(table, type) {
  const sp = table && table.actions.find((a) => a.name === type);
  if (!sp) return null;
  const typed = sp.args.find((a) => a.kind !== "point" && a.kind !== "direction" && a.required);
  if (typed) return { field: typed.name };
  if (sp.args.some((a) => a.kind === "point")) return { cursor: true };
  const other = sp.args.find((a) => a.kind !== "point");
  return other ? { field: other.name } : null;
}
// How a key is written in the help (the rest as they are typed).
const KEY_NAMES = { ArrowLeft: "←", ArrowRight: "→" };

/* The keys of the page that run any of ``commands`` (command names, as in KEYS), as the help writes them under the
   person's ``mode`` (keys.js: Alt+e, or none of the character keys when they are off) and layout (``printed``: the
   e key reads у on a Russian one), in KEYS's order (an object lists a digit key first whatever its place, so digits
   are put back last). */
/** @param {string[]} commands @param {string} [mode] @param {import("../keys.js").Printed} [printed] @returns {string[]} */
export function keysFor(commands, mode = "single", printed = {}) {
  const digit = (key) => (/^[0-9]$/.test(key) ? 1 : 0);
  return Object.entries(KEYS)
    .filter(([, name]) => commands.includes(name))
    .sort(([a], [b]) => digit(a) - digit(b))
    .map(([key]) => keyLabel(key, mode, printed))
    .filter((label) => label !== null)
    .map((label) => KEY_NAMES[label] || label);
}

// Keys while the keyboard cursor is out: arrows move it (each press on an axis half as far as the one before, so
// any point is a few presses away; Shift: a fine nudge), Enter places, b starts a box, the hints key shows the
// labels, Esc leaves.
const MOVES = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

/* Whether a key press picks an option of a list by its place (1–9, no modifier): in a focused list of the form, and
   right after e in the corrected thought for the category (e 1 is the first category, whatever the draft held). */
/** @param {import("../keys.js").KeyPress} event @returns {boolean} */
export function isOptionKey(event) {
  return /^[1-9]$/.test(keyOf(event)) && !(event.altKey || event.ctrlKey || event.metaKey);
}

/* The page's command for a key press: {name, arg?} or null. ``typing``: a field has the focus; ``mode``: how the
   person takes single-key shortcuts (keys.js's SHORTCUT_MODES). */
/**
 * A command of the page or of the keyboard cursor: its name and, for some, its argument (a number for take, {d,
 * fine} for a cursor's move).
 * @typedef {{ name: string, arg?: any }} KeyCommand
 */
/** @param {import("../keys.js").KeyPress} event @param {boolean} typing @param {string} [mode] @returns {KeyCommand | null} */
export function commandFor(event, typing, mode = "single") {
  const mod = event.ctrlKey || event.metaKey;
  const key = keyOf(event);
  if (mod && (key === "s" || key === "S")) return { name: "save" };
  if (mod && key === "Enter") return { name: "submit" };
  if (key === "Escape") return { name: "escape" };
  // Alt+digit (by the key's place, so a layout that types a symbol with Alt still works): take alternative N.
  const altDigit = /^Digit([1-9])$/.exec(event.code || "");
  if (event.altKey && !mod && altDigit) return { name: "take", arg: Number(altDigit[1]) };
  if (typing) return null;
  const shortcut = shortcutKey(event, mode);
  return shortcut && KEYS[shortcut] ? { name: KEYS[shortcut] } : null;
}

/* The cursor's command for a key press: {name, arg?} or null. ``anchored``: a box is being drawn.
   Ctrl+arrow (⌘+arrow) jumps to the next element the source recorded that way (``elementInDirection``). */
/** @param {import("../keys.js").KeyPress} event @param {boolean} anchored @param {string} [mode] @returns {KeyCommand | null} */
export function cursorCommandFor(event, anchored, mode = "single") {
  if (MOVES[event.key] && (event.ctrlKey || event.metaKey)) return anchored ? null : { name: "jump", arg: { d: MOVES[event.key] } };
  if (MOVES[event.key]) return { name: "move", arg: { d: MOVES[event.key], fine: event.shiftKey } };
  if (event.key === "Enter") return { name: "place" };
  const shortcut = shortcutKey(event, mode);
  if (KEYS[shortcut] === "box" && !anchored) return { name: "box" };
  if (KEYS[shortcut] === "hints" && !anchored) return { name: "hints" };
  if (event.key === "Escape") return { name: "leave" };
  return null;
}

/* The keyboard cursor bisects: each axis keeps the range the target must lie in (at first, what is in view); an
   arrow press moves the cursor to the middle of the part of that range on the arrow's side, and that part becomes
   the range. So the first press goes half way to the view's edge and each further press half as far as the one
   before: from where it starts (the point placed, else the recorded point, the usual start of a correction, else
   the centre) three presses an axis reach any point of the view within an eighth of it (a sixteenth from the
   centre), and each further press halves that. A press never moves less than FINE_STEP of the view; Shift+arrow
   moves exactly that. Positions and ranges are fractions of the screenshot; ``minStep``: FINE_STEP of the view in
   those. Pure (tests/js/keyboard.test.mjs). */
export const FINE_STEP = 0.01;

/**
 * @param {number[]} at @param {number[][]} range @param {number[]} d @param {boolean} fine @param {number} minStep
 * @returns {{ at: number[], range: number[][] }}
 */
export function cursorMove(at, range, d, fine, minStep) {
  const axis = d[0] ? 0 : 1, dir = d[axis];
  let [lo, hi] = range[axis];
  const from = at[axis];
  let to;
  if (fine) to = from + dir * minStep;
  else {
    if (dir > 0) lo = from; else hi = from;
    to = (lo + hi) / 2;
    if (Math.abs(to - from) < minStep) to = from + dir * minStep;
  }
  to = Math.min(1, Math.max(0, to));
  const nextRange = range.slice();
  nextRange[axis] = [Math.min(lo, to), Math.max(hi, to)];
  const nextAt = at.slice();
  nextAt[axis] = to;
  return { at: nextAt, range: nextRange };
}

/* The element to jump to from ``at`` in direction ``d`` (an arrow's [dx, dy]): of the boxes ([x1, y1, x2, y2], in
   the same units as ``at``, the screenshot's pixels so that both axes weigh alike) whose centre lies ahead on the
   arrow's axis, the one nearest as the eye goes: the distance ahead to its centre plus twice how far its box lies
   to the side (nothing when the cursor's line crosses it), the smaller box on a tie. Its index, or null when no
   element lies that way. Pure (tests/js/keyboard.test.mjs). */
/** @param {number[][]} boxes @param {number[]} at @param {number[]} d @returns {number | null} */
export function elementInDirection(boxes, at, d) {
  const axis = d[0] ? 0 : 1, side = 1 - axis, dir = d[axis];
  let best = null, bestCost = Infinity, bestArea = Infinity;
  (boxes || []).forEach((b, i) => {
    const ahead = ((b[axis] + b[axis + 2]) / 2 - at[axis]) * dir;
    if (!(ahead > 0.5)) return;  // its centre is not ahead (under half a pixel: where the cursor is)
    const aside = Math.max(0, b[side] - at[side], at[side] - b[side + 2]);
    const cost = ahead + 2 * aside, area = (b[2] - b[0]) * (b[3] - b[1]);
    if (cost < bestCost || (cost === bestCost && area < bestArea)) { best = i; bestCost = cost; bestArea = area; }
  });
  return best;
}

/* A jump of the keyboard cursor (Ctrl+arrow): to the centre of the element ``elementInDirection`` finds, and the
   arrows' range becomes that element's box, so the presses after it halve within the element (the point stays on
   it while it is fine-tuned). The arrows and jumps mix: a press or two of halving brings the cursor near a region,
   a jump lands on the element there. ``at`` and ``boxes`` in fractions of the screenshot, ``size`` its [width,
   height] in pixels (the distances are weighed on the screen, not in fractions). {at, range, element} or null.
   Pure (tests/js/keyboard.test.mjs). */
/**
 * @param {number[][]} boxes @param {number[]} at @param {number[]} d @param {number[]} size
 * @returns {{ at: number[], range: number[][], element: number } | null}
 */
export function cursorJump(boxes, at, d, size) {
  const [w, h] = size;
  const px = (boxes || []).map((b) => [b[0] * w, b[1] * h, b[2] * w, b[3] * h]);
  const element = elementInDirection(px, [at[0] * w, at[1] * h], d);
  if (element === null) return null;
  const b = boxes[element];
  return { at: [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2], range: [[b[0], b[2]], [b[1], b[3]]], element };
}

/* The keys' wiring. ``store``: the workspace's state (current, form, cursor: the keyboard's own, zoom, overlay,
   compare, boxMode, table); ``steps``: steps.js's; ``editor``: editor.js's slotAt, pointArgsOf, takesBox, placePoint,
   drawBox, clearBox; ``stage``: stage.js's goTo, renderStage, placeOnElement, zoomAt, zoomReset, zoomActual,
   keepCursorInView, showCursorLoupe; ``draft``: autosave.js's save() and banner(kind, message); ``panels``:
   panels.js's setVerdict(verdict) and submit(); ``alternatives``: alternatives.js's takeAlternative(number),
   hotAlternative(), markAlternative(number, verdict); ``undoable(label, change)``: undo.js's. */
/**
 * @param {{ store: import("./state.js").Store, steps: import("./steps.js").Steps,
 *   editor: Pick<import("./editor.js").WorkspaceEditor, "slotAt" | "pointArgsOf" | "takesBox" | "placePoint" | "drawBox" | "clearBox">,
 *   stage: Pick<import("./stage.js").Stage, "goTo" | "renderStage" | "placeOnElement" | "zoomAt" | "zoomReset" | "zoomActual" | "keepCursorInView" | "showCursorLoupe">,
 *   draft: Pick<import("./autosave.js").Draft, "save" | "banner">,
 *   panels: Pick<import("./panels.js").Panels, "setVerdict" | "submit">,
 *   alternatives: Pick<import("./alternatives.js").Alternatives, "takeAlternative" | "hotAlternative" | "markAlternative">,
 *   undoable: import("./undo.js").Undoable }} parts
 * @returns {void}
 */
export function installKeyboard({ store, steps, editor, stage, draft, panels, alternatives, undoable }) {
  const LAST_VIEW = steps.lastView;
  const shotOf = steps.shotOf;
  const current = () => store.get("current");
  const form = () => store.get("form");
  const cursor = () => store.get("cursor");

  // The help's keys and the key hints on the buttons follow the person's choice and keyboard layout.
  const mode = shortcutMode();
  layoutKeys((printed) => {
    for (const row of document.querySelectorAll(/** @type {"tr"} */ ("#ws-help tr[data-command]"))) {
      const cell = row.querySelector(".ws-keys-of");
      cell.replaceChildren();
      for (const [i, name] of keysFor(row.dataset.command.split(" "), mode, printed).entries()) {
        if (i) cell.append(" ");
        cell.appendChild(document.createElement("kbd")).textContent = name;
      }
      if (!cell.childNodes.length) cell.textContent = "—";
    }
    showKeyHints(document, mode, printed);
  });
  // The help is a dialog over the page: while it is open the focus is in it, and the page's keys wait (an e pressed
  // while reading would mark τ behind it, unseen); closed, the focus goes back where it was.
  const helpOpen = () => !$("ws-help").hidden;
  let focusBeforeHelp = null;
  function toggleHelp(show) {
    const open = show === undefined ? !helpOpen() : show;
    if (open === helpOpen()) return;
    $("ws-help").hidden = !open;
    if (open) {
      focusBeforeHelp = document.activeElement;
      // Read from its top: the focus on Close, at its foot, must not scroll a help taller than the window.
      /** @type {HTMLElement} */ ($("ws-help").querySelector("[data-close]")).focus({ preventScroll: true });
      $("ws-help").querySelector(".ws-modal-card").scrollTop = 0;
    } else {
      const back = focusBeforeHelp;
      focusBeforeHelp = null;
      if (back && back !== document.body && back.isConnected) back.focus({ preventScroll: true });
      else /** @type {HTMLElement} */ (document.activeElement).blur();
    }
  }
  // The stage draws itself again on a change of these (stage.js subscribes).
  const toggleOverlay = () => store.update("overlay", (on) => !on);
  const toggleCompare = () => store.update("compare", (on) => !on);
  $("ws-help-btn").addEventListener("click", () => toggleHelp());
  for (const b of document.querySelectorAll("[data-close]")) b.addEventListener("click", () => toggleHelp(false));
  $("ws-overlay-btn").addEventListener("click", toggleOverlay);
  $("ws-compare-btn").addEventListener("click", toggleCompare);
  $("ws-zoom-in").addEventListener("click", () => stage.zoomAt(0.5, 0.5, ZOOM_STEP));
  $("ws-zoom-out").addEventListener("click", () => stage.zoomAt(0.5, 0.5, 1 / ZOOM_STEP));
  $("ws-zoom-level").addEventListener("click", () => stage.zoomActual());
  $("ws-zoom-fit").addEventListener("click", () => stage.zoomReset());
  $("ws-box-btn").addEventListener("click", () => store.update("boxMode", (on) => !on));
  store.subscribe("boxMode", (on) => $("ws-box-btn").setAttribute("aria-pressed", String(on)));

  // Whether the next key may pick the category (set by e when the focus went past a category already chosen).
  let categoryKeyNext = false;

  // --- the keyboard path through a correction ---
  // e focuses the form; digits pick an option in a focused select; an action type that needs a point starts the
  // keyboard cursor; f focuses the thought of the screen's slot; p starts the cursor again to move a point.
  // Scrolled only as far as it takes: a field already in view leaves the panel where it is (the verdict and the
  // category above it stay in view).
  function focusField(node) {
    if (!node) return;
    node.scrollIntoView({ block: "nearest" });
    node.focus({ preventScroll: true });
  }
  function startCursor(slot) {
    const action = form().editor_state[slot];
    const shot = shotOf(current());
    if (!action || !shot || !editor.pointArgsOf(action.type).length || editor.slotAt(current()) !== slot) return false;
    const placed = editor.pointArgsOf(action.type).map((a) => action.args[a.name]).find((v) => Array.isArray(v));
    const start = placed || recordedPoint();
    store.set("cursor", { slot, px: start ? toPx(shot, start) : [shot.width / 2, shot.height / 2] });
    stage.keepCursorInView();
    cursor().range = visibleRange();
    if (document.activeElement && document.activeElement !== document.body) /** @type {HTMLElement} */ (document.activeElement).blur();
    stage.keepCursorInView();
    stage.renderStage();
    stage.showCursorLoupe();
    return true;
  }
  // The first point the source recorded on this screen (what the correction most often moves a little from).
  function recordedPoint() {
    const step = steps.step(current());
    for (const action of (step && step.actions) || []) {
      const point = editor.pointArgsOf(action.type).map((a) => (action.args || {})[a.name]).find((v) => Array.isArray(v));
      if (point) return point;
    }
    return null;
  }
  // What is in view, in fractions of the screenshot, per axis: where the keyboard cursor's bisection starts.
  function visibleRange() {
    const z = store.get("zoom");
    return [[-z.ox / z.scale, (1 - z.ox) / z.scale], [-z.oy / z.scale, (1 - z.oy) / z.scale]];
  }
  function moveCursor(d, fine) {
    const shot = shotOf(current());
    const [x, y] = cursor().px;
    // Steps are fractions of what is in view, so a zoomed-in annotator nudges finely.
    const moved = cursorMove([x / shot.width, y / shot.height], cursor().range, d, fine, FINE_STEP / store.get("zoom").scale);
    cursor().range = moved.range;
    cursor().element = null;
    cursor().px = [Math.min(shot.width - 1, moved.at[0] * shot.width), Math.min(shot.height - 1, moved.at[1] * shot.height)];
    stage.keepCursorInView();
    stage.renderStage();
    stage.showCursorLoupe();
  }
  // Ctrl+arrow: to the centre of the next recorded element that way; the arrows then halve within that element's
  // box (the point stays on it while it is fine-tuned), and Enter places the point as a click there would (snapping
  // the element's box where a click snaps). p starts the cursor over, with the whole view for the arrows.
  const elementsHere = () => (steps.step(current()) || {}).elements || [];
  // The recorded elements' boxes on the screen shown, in fractions of the screenshot.
  function elementBoxes() {
    const shot = shotOf(current());
    return elementsHere().map((e) => boxToPx(shot, e.box)).map((b) => [b[0] / shot.width, b[1] / shot.height, b[2] / shot.width, b[3] / shot.height]);
  }
  const cursorAt = () => { const shot = shotOf(current()); return [cursor().px[0] / shot.width, cursor().px[1] / shot.height]; };
  // The cursor to ``at`` (fractions), the arrows' range ``range``, on recorded element ``element`` (or null).
  function putCursor(at, range, element) {
    const shot = shotOf(current());
    cursor().px = [Math.min(shot.width - 1, at[0] * shot.width), Math.min(shot.height - 1, at[1] * shot.height)];
    cursor().range = range;
    cursor().element = element;
    cursor().hints = null;
    stage.keepCursorInView();
    stage.renderStage();
    stage.showCursorLoupe();
  }
  function jumpCursor(d) {
    const shot = shotOf(current());
    const elements = elementsHere();
    const jump = cursorJump(elementBoxes(), cursorAt(), d, [shot.width, shot.height]);
    if (!jump) {
      // Said under the screenshot, where the eye is (the next drawing of the stage puts its hint back).
      const hint = $("ws-place-hint");
      hint.classList.remove("ws-place-done");
      hint.textContent = elements.length ? gettext("No recorded element lies that way.") : gettext("The source recorded no elements on this screen: the arrows alone move the point.");
      return;
    }
    putCursor(jump.at, jump.range, jump.element);
  }
  // The hints key: a label on every recorded element of the screen, nearest the cursor first (one letter for the
  // nearest 26); typed, the cursor goes onto that element as Ctrl+arrow takes it there (the arrows then halve
  // within it, Enter places as a click on it would). A screen without elements: the view's cells 1–9, and the
  // arrows then halve within the cell typed. Drawn by the stage (stage.js) from the cursor's hints.
  function showHints() {
    const shot = shotOf(current());
    const boxes = elementBoxes();
    cursor().hints = boxes.length
      ? { kind: "elements", items: assignHints(boxes, cursorAt(), [shot.width, shot.height]), typed: "" }
      : { kind: "cells", items: gridCells(visibleRange()), typed: "" };
    stage.renderStage();
  }
  const hintCommands = {
    close: () => { cursor().hints = null; stage.renderStage(); },
    back: () => { cursor().hints.typed = cursor().hints.typed.slice(0, -1); stage.renderStage(); },
    type: (key) => {
      const hints = cursor().hints, typed = hints.typed + key.toLowerCase();
      const found = hintTyped(hints.items, typed);
      if (found.miss) return;  // not a label: the labels stay as they are
      if (found.prefix) { hints.typed = typed; stage.renderStage(); return; }
      if (hints.kind === "cells") { putCursor(found.hit.at, found.hit.range, null); return; }
      const b = elementBoxes()[found.hit.element];
      putCursor([(b[0] + b[2]) / 2, (b[1] + b[3]) / 2], [[b[0], b[2]], [b[1], b[3]]], found.hit.element);
    },
  };
  // b: a box from the keyboard. Its first corner is the keyboard point (started where the point is, or in the middle);
  // arrows move the other corner, Enter draws it.
  function startBox(slot) {
    const action = form().editor_state[slot];
    if (!action || !editor.takesBox(action)) return;
    if (!cursor() && !startCursor(slot)) return;
    cursor().anchor = [...cursor().px];
    cursor().range = visibleRange();  // the other corner: found as the point was
    stage.renderStage();
  }
  function placeCursor() {
    if (cursor().anchor) {
      const { slot, anchor, px } = cursor();
      store.set("cursor", null);
      editor.drawBox(slot, shotOf(current()), anchor, px);
      return;
    }
    const { slot, px, element } = cursor();
    if (element != null) stage.placeOnElement(slot, current(), element, px);
    else editor.placePoint(slot, toModel(shotOf(current()), px));
    const action = form().editor_state[slot];
    const required = editor.pointArgsOf(action.type).filter((a) => a.required);
    const done = required.every((a) => Array.isArray(action.args[a.name]));
    if (done) { store.set("cursor", null); stage.renderStage(); }  // a drag wants its end point next: the cursor stays
  }

  // The option a digit picks in a list (1: its first choice), or null.
  const optionOf = (select, key) => [...select.options].filter((o) => o.value)[Number(key) - 1] || null;
  const pick = (select, option) => {
    select.value = option.value;
    select.dispatchEvent(new Event("change", { bubbles: true }));
  };
  document.addEventListener("keydown", (event) => {
    // e on a draft whose category is chosen puts the focus in the corrected thought; the key right after it may still
    // be a digit picking the category (e 1 is "this step, category 1" whatever the draft holds), not a 1 typed.
    const afterError = categoryKeyNext;
    categoryKeyNext = false;
    const target = /** @type {HTMLSelectElement} */ (event.target);
    if (afterError && target.id === "f-corrected_thought" && isOptionKey(event)) {
      const option = optionOf($("f-error_category"), keyOf(event));
      if (option) { event.preventDefault(); pick($("f-error_category"), option); return; }
    }
    if (target.tagName !== "SELECT" || !isOptionKey(event) || !target.closest(".ws-side")) return;
    const option = optionOf(target, keyOf(event));
    if (!option) return;
    event.preventDefault();
    pick(target, option);
    const slot = target.dataset.slotType;
    if (slot) {
      const next = nextInput(store.get("table"), option.value);
      const slotEditor = `.ws-action-editor[data-slot="${slot}"]`;
      if (next && next.cursor && startCursor(slot)) return;
      focusField(document.querySelector(next && next.field ? `${slotEditor} [data-arg="${next.field}"]` : `${slotEditor} [data-arg]`));
    }
    if (target.id === "f-error_category") focusField($("f-corrected_thought"));
  }, true);

  const cursorCommands = {
    move: ({ d, fine }) => moveCursor(d, fine),
    jump: ({ d }) => jumpCursor(d),
    hints: showHints,
    place: placeCursor,
    box: () => startBox(cursor().slot),
    leave: () => { store.set("cursor", null); stage.renderStage(); },
  };
  document.addEventListener("keydown", (event) => {
    if (!cursor() || helpOpen()) return;
    if (cursor().hints) {
      // While the labels are shown the letters are theirs; any other key closes them and acts as it does.
      const typed = hintCommandFor(event);
      if (typed) {
        event.preventDefault(); event.stopPropagation();
        hintCommands[typed.name](typed.arg);
        return;
      }
      cursor().hints = null;
      stage.renderStage();
    }
    const command = cursorCommandFor(event, !!cursor().anchor, mode);
    if (!command) return;
    event.preventDefault(); event.stopPropagation();  // arrows move the cursor, not the step
    cursorCommands[command.name](command.arg);
  }, true);

  const slotHere = () => editor.slotAt(current());
  const commands = {
    save: () => draft.save(),
    submit: () => panels.submit(),
    take: (n) => alternatives.takeAlternative(n),
    previous: () => stage.goTo(current() - 1),
    next: () => stage.goTo(current() + 1),
    first: () => stage.goTo(1),
    last: () => stage.goTo(LAST_VIEW),
    tau: () => { if (form().tau) stage.goTo(form().tau); },
    // The category takes the focus only when this press marked τ: refused (on the final screen) the focus stays,
    // else the next t or j would pick a category in the focused list instead of moving.
    // Marked (or τ already): the category when none is chosen, else the corrected thought, so the letters typed
    // next are written, not taken as keys.
    error: () => {
      if (!panels.setVerdict("error")) return;
      focusField(form().error_category ? $("f-corrected_thought") : $("f-error_category"));
      categoryKeyNext = !!form().error_category;
    },
    no_error: () => panels.setVerdict("no_error"),
    unusable: () => panels.setVerdict("unusable"),
    thought: () => {
      const slot = slotHere();
      focusField(slot === "reflection" ? $("f-reflection_thought") : slot === "corrected" ? $("f-corrected_thought") : null);
    },
    point: () => { const slot = slotHere(); if (slot) startCursor(slot); },
    box: () => { const slot = slotHere(); if (slot) startBox(slot); },
    // (With the cursor out it is the cursor's key; here only while a box's corner is moved, which it leaves alone.)
    hints: () => { const slot = slotHere(); if (!cursor() && slot && startCursor(slot)) showHints(); },
    start: () => { const first = /** @type {HTMLElement | null} */ (document.querySelector('[data-starts="corrected"] .ws-start')); if (first) first.click(); },
    delete_box: () => {
      const slot = slotHere(), action = form().editor_state[slot];
      if (action && Array.isArray(action.target_box)) undoable(gettext("Deleted the element box"), () => editor.clearBox(slot));
    },
    wrong: () => { const hot = alternatives.hotAlternative(); if (hot) alternatives.markAlternative(hot, "wrong"); },
    overlay: toggleOverlay,
    compare: toggleCompare,
    zoom_in: () => stage.zoomAt(0.5, 0.5, ZOOM_STEP),
    zoom_out: () => stage.zoomAt(0.5, 0.5, 1 / ZOOM_STEP),
    zoom_reset: () => stage.zoomReset(),
    help: () => toggleHelp(),
  };
  document.addEventListener("keydown", (event) => {
    if (helpOpen()) {
      const action = helpKey(event, mode);
      if (action) event.preventDefault();
      if (action === "trap") /** @type {HTMLElement} */ ($("ws-help").querySelector("[data-close]")).focus();
      else if (action === "close") toggleHelp(false);
      return;
    }
    const target = /** @type {HTMLElement} */ (event.target);
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
    const command = commandFor(event, typing, mode);
    if (!command) return;
    if (command.name === "escape") { if (typing) target.blur(); return; }
    event.preventDefault();
    if (!actsOnScreen(command.name, slotHere())) {
      if (form().verdict === "error" && form().tau) draft.banner("error", offScreenWords(command.name, keyLabel("t", mode)));
      return;
    }
    commands[command.name](command.arg);
  });
}
