// @ts-check
/* Undo and redo of an answer's form, in the workspace and in the lead's edit form (static/js/review.js).
   The pure part: a history is {past, future, group, at}; every function takes the history it is given and returns a
   new one (tests/js/history.test.mjs). A form is any JSON value (the workspace's fields, the review form's values):
   each step back keeps a whole copy, so an undo restores exactly what was there, points and boxes included. Typing in
   one field makes one step per pause (``group``), not one per letter. ``discarded`` says in words what a change threw
   away or replaced, for the banner that offers its undo. The wiring (``install``) is the workspace's: an undo is saved
   as a new draft version through the draft's one save path, so the server holds the restored values. */
import { keyOf } from "../keys.js";
import { gettext, interpolate } from "../i18n.js";
import { copy, same } from "../values.js";

/**
 * A history of a form: the forms to go back to (``past``, the last the newest) and forward to (``future``), and the
 * group and time of the last step (typing in one field joins it).
 * @typedef {{ past: any[], future: any[], group: string | null, at: number }} History
 */
/**
 * One step back or forward: the history after it and the form to show.
 * @typedef {{ history: History, form: any }} HistoryStep
 */

export const LIMIT = 200;  // steps kept back (at least 50 is the promise; a whole form is a few KB)
export const GROUP_PAUSE_MS = 1000;  // typing in one field within this pause is one step

/** @returns {History} */
export function createHistory() {
  return { past: [], future: [], group: null, at: 0 };
}

/** @type {(history: History) => boolean} */
export const canUndo = (history) => history.past.length > 0;
/** @type {(history: History) => boolean} */
export const canRedo = (history) => history.future.length > 0;

/* The history after the form changed from ``before`` to ``after``. A change in the same ``group`` (a field being
   typed in) within GROUP_PAUSE_MS of the last joins that step; any change clears what could be redone. */
/**
 * @param {History} history @param {any} before @param {any} after
 * @param {{ group?: string | null, at?: number, limit?: number }} [options]
 * @returns {History}
 */
export function record(history, before, after, options) {
  const o = options || {};
  if (same(before, after)) return history;
  const at = o.at || 0;
  const group = o.group || null;
  if (group && history.group === group && at - history.at < GROUP_PAUSE_MS && history.past.length) {
    return { past: history.past, future: [], group, at };
  }
  const past = history.past.concat([copy(before)]).slice(-(o.limit || LIMIT));
  return { past, future: [], group, at };
}

/* One step back from ``current``: {history, form} (the form to show), or null when there is none. */
/** @param {History} history @param {any} current @returns {HistoryStep | null} */
export function undo(history, current) {
  if (!canUndo(history)) return null;
  const form = history.past[history.past.length - 1];
  return {
    history: { past: history.past.slice(0, -1), future: history.future.concat([copy(current)]), group: null, at: 0 },
    form: copy(form),
  };
}

/* One step forward again from ``current``: {history, form}, or null when nothing was undone since the last change. */
/** @param {History} history @param {any} current @returns {HistoryStep | null} */
export function redo(history, current) {
  if (!canRedo(history)) return null;
  const form = history.future[history.future.length - 1];
  return {
    history: { past: history.past.concat([copy(current)]), future: history.future.slice(0, -1), group: null, at: 0 },
    form: copy(form),
  };
}

const filled = (value) => value !== null && value !== undefined && value !== "" &&
  !(typeof value === "object" && !Array.isArray(value) && Object.values(value).every((v) => !filled(v)));

/* What a change from ``before`` to ``after`` threw away: [{name, how}] for every field of ``words`` (field name →
   its words) that held something before and holds something else after: how is "discarded" (now empty) or
   "replaced". An editor slot ("editor_state.corrected") is compared as a whole action; its element box and points
   are named on their own when only they went. */
/**
 * @param {any} before @param {any} after @param {Record<string, string>} words
 * @returns {{ name: string, how: string }[]} how: "discarded" (now empty) or "replaced"
 */
export function discarded(before, after, words) {
  const out = [];
  const read = (form, path) => path.split(".").reduce((v, key) => (v && typeof v === "object" ? v[key] : undefined), form);
  for (const [path, name] of Object.entries(words)) {
    const was = read(before, path), now = read(after, path);
    if (!filled(was) || same(was, now)) continue;
    if (!filled(now)) { out.push({ name, how: "discarded" }); continue; }
    if (was && typeof was === "object" && now && typeof now === "object" && was.type && was.type === now.type) {
      // The same action kept, its box or points gone: say which.
      if (filled(was.target_box) && !filled(now.target_box)) out.push({ name: interpolate(gettext("%(name)s's element box"), { name }), how: "discarded" });
      const lost = Object.keys(was.args || {}).filter((arg) => Array.isArray(was.args[arg]) && !Array.isArray((now.args || {})[arg]));
      if (lost.length) out.push({ name: interpolate(lost.length > 1 ? gettext("%(name)s's points") : gettext("%(name)s's point"), { name }), how: "discarded" });
      if (filled(was.target_box) === filled(now.target_box) && !lost.length) out.push({ name, how: "replaced" });
      continue;
    }
    out.push({ name, how: "replaced" });
  }
  return out;
}

/* ``discarded`` in one sentence ("" when nothing was). */
/** @param {{ name: string, how: string }[]} items @returns {string} */
export function discardedWords(items) {
  const gone = items.filter((i) => i.how === "discarded").map((i) => i.name);
  const replaced = items.filter((i) => i.how === "replaced").map((i) => i.name);
  const list = (names) => (names.length > 1 ? interpolate(gettext("%(some)s and %(last)s"), { some: names.slice(0, -1).join(gettext(", ")), last: names[names.length - 1] }) : names[0]);
  const parts = [];
  if (gone.length) parts.push(interpolate(gettext("discarded %(names)s"), { names: list(gone) }));
  if (replaced.length) parts.push(interpolate(gettext("replaced %(names)s"), { names: list(replaced) }));
  if (!parts.length) return "";
  const sentence = parts.join(gettext("; "));
  return sentence[0].toUpperCase() + sentence.slice(1) + gettext(".");
}

/* Whether a key press is the page's undo (Ctrl/⌘+Z) or redo (Ctrl/⌘+Shift+Z, Ctrl+Y): "undo", "redo" or null.
   Inside a text field the browser's own text undo runs instead (``typing``). */
/**
 * @param {{ key: string, code?: string, ctrlKey: boolean, metaKey: boolean, altKey: boolean, shiftKey: boolean }} event
 * @param {boolean} typing
 * @returns {"undo" | "redo" | null}
 */
export function historyCommandFor(event, typing) {
  if (typing || event.altKey || !(event.ctrlKey || event.metaKey)) return null;
  const key = String(keyOf(event)).toLowerCase();  // Ctrl+я on a Russian layout is Ctrl+Z's place
  if (key === "z") return event.shiftKey ? "redo" : "undo";
  if (key === "y" && !event.shiftKey) return "redo";
  return null;
}
