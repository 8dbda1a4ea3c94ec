// @ts-check
/* The review page's rules that need no page: where its marks go and how their labels clear each other, what the
   trace viewer shows and how it reads the server's answer, the edited action's mark, its keys and the queue's row.
   Pure (tests/js/review.test.mjs); static/js/review.js wires them to the page. */
import { toFraction } from "./geometry.js";
import { formatDateTime, gettext, interpolate } from "./i18n.js";
import { shortcutKey } from "./keys.js";

/**
 * A mark the page draws for an action (annotation/review/selectors.py _marker): whose action (``kind``: "original",
 * "corrected", "reflection"; ``label`` in words), its type and text, its point, end and element box in the project's
 * convention, on a screenshot of ``extent``.
 * @typedef {{ kind: string, label: string, type: string, text: string, extent: number[], start?: number[],
 *   end?: number[], box?: number[] }} Marker
 */

/** A point of ``marker`` (in the project's convention, with its screenshot's extent) as CSS [left, top] in percent of
   the image.
   @param {{ extent: number[] }} marker @param {number[]} p @returns {string[]} */
export function percentOn(marker, p) {
  return toFraction(marker, p).map((f) => (f * 100).toFixed(3) + "%");
}

/** The CSS [width, height] of ``marker``'s element box, in percent of the image.
   @param {{ extent: number[], box?: number[] }} marker @returns {string[]} */
export function boxSize(marker) {
  const [x0, y0, x1, y1] = marker.box;
  return percentOn(marker, [x1 - x0, y1 - y0]);
}

/** The margin that moves a label down below the first label already placed that its box meets, 2 px apart, or null
   when it meets none. Boxes are on-screen rectangles ({left, right, top, bottom}); the page measures again after
   each move (a mark is scaled against the zoom, so a margin is not a screen distance).
   @typedef {{ left: number, right: number, top: number, bottom: number }} Box
   @param {number} margin @param {Box} box @param {Box[]} placed @returns {number | null} */
export function marginClearing(margin, box, placed) {
  const hit = placed.find((p) => box.left < p.right && p.left < box.right && box.top < p.bottom && p.top < box.bottom);
  return hit ? margin + hit.bottom - box.top + 2 : null;
}

/** The trace viewer's screens of ``viewer`` (the page's trace-viewer-data): its steps, every screen (the final one
   last, when the trace has it), and the screen it opens on (τ's, else the first), each a position (step index - 1).
   @param {{ step_count: number, has_final: boolean, tau: number | null } | null} viewer
   @returns {{ stepCount: number, total: number, start: number }} */
export function viewerLayout(viewer) {
  if (!viewer) return { stepCount: 0, total: 0, start: 0 };
  const stepCount = viewer.step_count;
  return {
    stepCount,
    total: stepCount + (viewer.has_final ? 1 : 0),
    start: viewer.tau && viewer.tau <= stepCount ? viewer.tau - 1 : 0,
  };
}

/** The position shown when ``position`` is asked for: the nearest of the trace's ``total`` screens.
   @type {(position: number, total: number) => number} */
export const clampPosition = (position, total) => Math.max(0, Math.min(total - 1, position));

/** Whether the screen of step ``index`` is loaded; the final screen comes with the last step's window, so the last
   step counts as loaded only with it.
   @param {unknown[]} screens @param {number} index @param {number} stepCount @param {boolean} hasFinal @returns {boolean} */
export function screenLoaded(screens, index, stepCount, hasFinal) {
  return !!screens[index - 1] && (index < stepCount || !hasFinal || !!screens[stepCount]);
}

/* The name of the screen at ``position`` ("step 3", "final screen") and its number in the strip ("3", "end"). */
/** @type {(position: number, stepCount: number) => string} */
export const screenName = (position, stepCount) => (position < stepCount ? interpolate(gettext("step %(step)s"), { step: position + 1 }) : gettext("final screen"));
/** @type {(position: number, stepCount: number) => string} */
export const thumbNumber = (position, stepCount) => (position < stepCount ? String(position + 1) : gettext("end"));

/** The viewer's title over a loaded ``screen``: its title, τ marked, and when it has no screenshot.
   @param {{ title: string, is_tau?: boolean, image?: string }} screen @returns {string} */
export function screenTitle(screen) {
  return screen.title + (screen.is_tau ? " (τ)" : "") + (screen.image ? "" : " — " + gettext("no screenshot"));
}

/** The viewer's title over a screen not here: loading, or why it could not be loaded (``problem``).
   @param {number} position @param {number} stepCount @param {string} problem @returns {string} */
export function missingTitle(position, stepCount, problem) {
  return screenName(position, stepCount) + " — " + (problem ? interpolate(gettext("could not be loaded (%(problem)s): go to it again to retry"), { problem }) : gettext("loading…"));
}

/** Why a window of screens (GET /api/reviews/<id>/steps/, through api.js) did not come, "" when it did: the server's
   detail (studio/errors.py: every refusal has one), else the status ("offline" when nothing answered).
   @param {{ status: number, data: any }} res @returns {string} */
export function windowProblem(res) {
  if (res.status === 200) return "";
  return (res.data && res.data.detail) || interpolate(gettext("status %(status)s"), { status: res.status || gettext("offline") });
}

/** Whether the action editors beside the screenshots show: the edit form is open and, where the page has the verdict
   select and the error fields (``verdict`` / ``errorVerdict`` null otherwise), the verdict is the error one.
   @param {boolean | null} open @param {string | null} verdict @param {string | null} errorVerdict @returns {boolean} */
export function editorsShown(open, verdict, errorVerdict) {
  return !!open && (verdict == null || errorVerdict == null || verdict === errorVerdict);
}

/** The mark of an action being edited in ``slot`` ("corrected" / "reflection"), drawn where the annotator's (``own``,
   the server's marker of the slot, if any) was: [] while it has no point, else its point, end and element box in the
   convention, on the screenshot of ``extent``. ``text`` is its canonical text.
   @param {string} slot @param {Marker | null} own @param {any} action @param {string} text @param {number[]} extent
   @returns {Marker[]} */
export function editedMarkers(slot, own, action, text, extent) {
  const args = (action && action.args) || {};
  if (!action || !Array.isArray(args.start_box)) return [];
  return [{
    label: `${own ? own.label : slot} (edited)`, kind: slot, type: action.type, text, extent,
    start: args.start_box, end: Array.isArray(args.end_box) ? args.end_box : undefined,
    box: Array.isArray(action.target_box) ? action.target_box : undefined,
  }];
}

/** The trace viewer's positions (step index - 1) of the screens a first error at ``tau`` is corrected on: o_τ for the
   corrected action, o_{τ+1} for the post-reflection (the next step's screen, the final one after the last step, as
   annotation.selectors.observations says); null where the trace's ``total`` screens have none.
   @param {number | null} tau @param {number} total @returns {{ corrected: number | null, reflection: number | null }} */
export function tauScreens(tau, total) {
  const at = (position) => (position >= 0 && position < total ? position : null);
  return { corrected: tau ? at(tau - 1) : null, reflection: tau ? at(tau) : null };
}

/* Whether a slot's action is drawn (and its point placed) on the screens of the τ typed: the annotator's action
   belongs to the annotator's τ (``servedTau``); on another τ only an action the lead ``given`` there. */
/** @type {(tau: number | null, servedTau: number | null, given: boolean) => boolean} */
export const actionOnTau = (tau, servedTau, given) => tau === servedTau || !!given;

/* Where a click at (clientX, clientY) falls on a layer whose on-screen box is ``box``, as fractions of the image. */
/** @type {(box: { left: number, top: number, width: number, height: number }, clientX: number, clientY: number) => number[]} */
export const clickFraction = (box, clientX, clientY) => [(clientX - box.left) / box.width, (clientY - box.top) / box.height];

/** The command of a key press on one review, or null: "reject_send" (Ctrl+Enter in the comment), else, outside any
   field and with no modifier, "zoom_in" / "zoom_out" (+ = -), "zoom_reset" (0), "screen_next" / "screen_previous"
   (j k: the trace viewer's screens), "accept" (a), "reject" (r: the comment takes the focus), "next" (→: the next
   undecided review). ``inComment``: the comment has the focus; ``typing``: some field has it; ``mode``: how the person
   takes single-key shortcuts (keys.js: alone, with Alt, or not at all; the arrow alone in every mode).
   @param {KeyboardEvent} event @param {{ typing: boolean, inComment: boolean, mode?: string }} where
   @returns {string | null} */
export function reviewCommandFor(event, { typing, inComment, mode = "single" }) {
  if (event.defaultPrevented || event.metaKey) return null;
  if (typing) return inComment && event.key === "Enter" && event.ctrlKey && !event.altKey ? "reject_send" : null;
  const shortcut = shortcutKey(event, mode);
  return (shortcut && REVIEW_KEYS[shortcut]) || null;
}

const REVIEW_KEYS = {
  "+": "zoom_in", "=": "zoom_in", "-": "zoom_out", "0": "zoom_reset", j: "screen_next", k: "screen_previous",
  a: "accept", r: "reject", ArrowRight: "next",
};

/** The texts of a review queue's row for ``review`` (an entry of GET /api/reviews/): the trace, the annotator, the
   verdict, when it was submitted (to the minute, in the page's language, as the page's template writes it).
   @param {{ external_id: string, annotator: string, verdict_text: string, submitted_at: string | null }} review
   @returns {string[]} */
export function queueRowTexts(review) {
  const submitted = formatDateTime(review.submitted_at);
  return [review.external_id, review.annotator, review.verdict_text, submitted];
}
