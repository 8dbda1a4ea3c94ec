// @ts-check
/* The screens at the top of a review page follow the τ typed in the edit form: o_τ and o_τ+1 of the new τ (read as
   the viewer reads its screens), their titles, the recorded action under o_τ and the thoughts; the action being
   edited is drawn where the annotator's was (its point, end and element box, in the project's convention like the
   server's markers), so a placed point shows on its pixel at every zoom. */
import { actionOnTau, editedMarkers, screenName, tauScreens } from "../review_logic.js";
import { gettext } from "../i18n.js";

/** @typedef {import("./edit_form.js").Slot} Slot */
/** @typedef {import("./edit_form.js").EditData} EditData */
/** @typedef {import("./viewer.js").Viewer} Viewer */
/** @typedef {import("../review_logic.js").Marker} Marker */
/** @typedef {import("../geometry.js").Shot} Shot */
/**
 * The screens of the τ typed: ``drawEdited(slot)`` draws the marks on ``slot``'s screen, ``followTau()`` shows the
 * screens of the τ typed once loaded, ``placingScreen(slot)`` is the screen a click on ``slot``'s screenshot places a
 * point on (null while the τ typed is not the one shown).
 * @typedef {{ drawEdited: (slot: string) => void, followTau: () => Promise<void>,
 *   placingScreen: (slot: string) => Shot | null }} TauScreens
 */

// The frame of each slot's screen, named by its markers' data block.
const FRAME_OF = { corrected: "error-markers", reflection: "reflection-markers" };

/**
 * The τ shown at the top (the annotator's until the lead types another) and the marks on its screens.
 * ``readMarks(id)``: the server's markers in the page's data block ``id``.
 * @param {{ editData: EditData, viewer: Viewer, slots: Record<string, Slot>, formTau: () => number | null,
 *   drawMarkers: (frame: Element, markers: Marker[]) => void, readMarks: (id: string) => Marker[] }} parts
 * @returns {TauScreens}
 */
export function createTauScreens({ editData, viewer, slots, formTau, drawMarkers, readMarks }) {
  let shownTau = editData.tau;
  /** @type {Record<string, Shot | null>} */
  const shownScreens = { ...editData.screens };
  /** @type {Record<string, ChildNode[]>} */
  const servedDiff = {};  // the thoughts' served diff, kept while another τ's screens are shown
  /** @param {string} slot */
  const frameOf = (slot) => document.querySelector(`.shot-frame[data-markers='${FRAME_OF[slot]}']`);
  /**
   * The marks on ``slot``'s screen. On another τ than the annotator's, they are the new o_τ's recorded action and
   * what the lead gave there.
   * @param {string} slot
   */
  function drawEdited(slot) {
    const frame = frameOf(slot);
    const screen = shownScreens[slot], s = slots[slot];
    if (!frame || !screen) return;
    let own = null, others = [];
    if (shownTau === editData.tau) {
      const marks = readMarks(FRAME_OF[slot]);
      if (!s.given) { drawMarkers(frame, marks); return; }  // the annotator's marks, as served
      own = marks.find((m) => m.kind === slot);
      others = marks.filter((m) => m !== own);
    } else if (slot === "corrected") {
      const recorded = viewer.screenAt(tauScreens(shownTau, viewer.total).corrected);
      others = ((recorded && recorded.markers) || []).map((m) => ({ ...m, label: gettext("original") }));
    }
    const action = actionOnTau(shownTau, editData.tau, s.given) ? s.action : null;
    drawMarkers(frame, [...others, ...editedMarkers(slot, own, action, s.field.value, screen.extent)]);
  }
  /** Shows the screens of the τ typed, once they are loaded (nothing when it is the one shown). */
  async function followTau() {
    const tau = formTau();
    if (!tau || tau === shownTau || !viewer.total) return;
    const positions = tauScreens(tau, viewer.total);
    await Promise.all(Object.values(positions).filter((p) => p !== null).map(viewer.loadAround));
    if (formTau() !== tau) return;  // typed on meanwhile
    shownTau = tau;
    for (const slot of Object.keys(slots)) {
      const frame = /** @type {HTMLElement | null} */ (frameOf(slot));
      const position = positions[slot], screen = viewer.screenAt(position);
      const name = document.querySelector(`[data-tau-screen="${slot}"]`);
      if (name) name.textContent = position === null ? gettext("none") : screenName(position, viewer.stepCount);
      shownScreens[slot] = screen && screen.image ? screen.size : null;
      if (frame) {
        frame.hidden = !shownScreens[slot];
        if (shownScreens[slot]) {
          const img = frame.querySelector("img");
          img.src = screen.image;
          [img.width, img.height] = [screen.size.width, screen.size.height];
          img.alt = `Screenshot of ${screenName(position, viewer.stepCount)}`;
        }
      }
      slots[slot].placed = 0;
      drawEdited(slot);
    }
    const original = document.querySelector('[data-legend="original"]');
    const recorded = viewer.screenAt(positions.corrected);
    if (original && recorded) original.textContent = recorded.action || "—";
    // The thoughts: the served word diff is of the annotator's τ; on another τ both sides are shown plain, the
    // recorded one the new step's.
    for (const [id, text] of [["diff-before", recorded ? recorded.thought : ""], ["diff-after", null]]) {
      const node = document.getElementById(id);
      if (!node) continue;
      if (!servedDiff[id]) servedDiff[id] = [...node.childNodes];
      if (tau === editData.tau) node.replaceChildren(...servedDiff[id]);
      else node.replaceChildren(text === null ? servedDiff[id].map((n) => n.textContent).join("") : text);
    }
    document.getElementById("edit-accept").dataset.tauShown = String(tau);
  }
  return {
    drawEdited,
    followTau,
    /** @param {string} slot the screen a click on ``slot``'s screenshot places a point on: none while the τ typed is not the one shown */
    placingScreen: (slot) => (formTau() === shownTau ? shownScreens[slot] : null),
  };
}
