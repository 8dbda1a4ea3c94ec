// @ts-check
/* Edit, then accept: the lead's edit form on a review page. The correction's fields are for an error verdict only
   (the server drops them otherwise), and the action editors beside the screenshots (o_τ, o_τ+1) show with them.
   Each slot's action is edited with the workspace's structured editor (static/js/action_editor.js), placed by a
   click on the screenshot above it, and checked by the server's grammar; the form sends the canonical text the server
   returns, valid or not (a refused answer comes back with the problem beside what was typed). */
import { api } from "../api.js";
import * as Editor from "../action_editor.js";
import { fractionToModel } from "../geometry.js";
import { clickFraction, editorsShown } from "../review_logic.js";
import { gettext } from "../i18n.js";
import { copy, same } from "../values.js";

/** @typedef {import("../action_editor.js").Action} Action */
/** @typedef {import("../action_editor.js").ActionTable} ActionTable */
/** @typedef {import("../action_editor.js").Check} Check */
/** @typedef {import("../geometry.js").Shot} Shot */
/**
 * The verdict fields' one function: ``refresh()`` shows what the verdict selected now asks for.
 * @typedef {{ refresh: () => void }} VerdictFields
 */

/**
 * The verdict select and the error fields: the fields and the editors beside the screenshots show for the error
 * verdict while the form is open. Any of the three elements may be absent.
 * @param {{ details: HTMLDetailsElement | null, verdictSelect: HTMLSelectElement | null, errorFields: HTMLElement | null }} parts
 * @returns {VerdictFields}
 */
export function createVerdictFields({ details, verdictSelect, errorFields }) {
  const showBeside = () => {
    const on = editorsShown(details && details.open, verdictSelect ? verdictSelect.value : null, errorFields ? errorFields.dataset.forVerdict : null);
    for (const node of document.querySelectorAll("[data-edit-beside]")) /** @type {HTMLElement} */ (node).hidden = !on;
  };
  const showErrorFields = () => {
    errorFields.hidden = verdictSelect.value !== errorFields.dataset.forVerdict;
    showBeside();
  };
  if (details) details.addEventListener("toggle", showBeside);
  if (verdictSelect && errorFields) verdictSelect.addEventListener("change", showErrorFields);
  showBeside();
  return {
    /** Shows what the verdict selected now asks for (after the form's values were put back). */
    refresh: () => { if (verdictSelect && errorFields) showErrorFields(); },
  };
}

/**
 * One slot's state in the edit form.
 * @typedef {{ host: HTMLElement | null, field: HTMLInputElement | null, action: Action | null, canonical: string,
 *   check: Check | null, placed: number, seq: number, timer: ReturnType<typeof setTimeout> | undefined,
 *   given: boolean }} Slot
 */
/**
 * The page's review-edit-data: the check and table URLs, the platform, the annotator's τ, the two slots' actions as
 * served and the screens they are placed on.
 * @typedef {{ check_url: string, table_url: string, platform: string, tau: number | null,
 *   slots: Record<string, { action: Action | null, canonical: string, given?: boolean }>,
 *   screens: Record<string, Shot | null> }} EditData
 */
/**
 * The edit form's slots: their states and names; ``changed(slot, quiet)`` records an edit, redraws and has the server
 * check it; ``placeOn(frame, slot)`` makes a click on ``frame`` place ``slot``'s next point; ``actions()``: each
 * slot's action now; ``boxInputs()``: their element box inputs; ``tableLoaded(table)``: draws the editors and checks
 * the served actions; ``restore(actions)``: puts back the actions of an undo or redo.
 * @typedef {{ slots: Record<string, Slot>, names: string[], changed: (slot: string, quiet?: boolean) => void,
 *   placeOn: (frame: Element | null, slot: string) => void, actions: () => Record<string, Action | null>,
 *   boxInputs: () => HTMLInputElement[], tableLoaded: (served: ActionTable) => void,
 *   restore: (actions: Record<string, Action | null>) => void }} EditSlots
 */

/**
 * The two slots of the edit form ("corrected", "reflection"): their editors, the server's checks and the points
 * placed on the screenshots. ``formTau()``: the τ typed in the form; ``hooks``: drawEdited(slot) (the action's mark
 * on its screenshot), recordEdit(group) (undo's history), placingScreen(slot) (the screen a click places a point
 * on, null while none).
 * @param {{ editData: EditData, formTau: () => number | null, hooks: { drawEdited: (slot: string) => void,
 *   recordEdit: (group: string | null) => void, placingScreen: (slot: string) => Shot | null } }} parts
 * @returns {EditSlots}
 */
export function createEditSlots({ editData, formTau, hooks }) {
  /** @type {Record<string, Slot>} */
  const slots = {};
  for (const slot of ["corrected", "reflection"]) {
    slots[slot] = {
      host: document.querySelector(`[data-review-slot="${slot}"]`),
      field: /** @type {HTMLInputElement} */ (document.getElementById(`edit-${slot}_action`)),
      action: editData.slots[slot].action ? copy(editData.slots[slot].action) : null,
      canonical: editData.slots[slot].canonical,
      check: null, placed: 0, seq: 0, timer: undefined,
      // Whether the lead gave this action (placed, typed, a type or box changed; or in the refused edit shown
      // again): only then the form sends it. Untouched, the server keeps the annotator's, and on a moved τ asks
      // for a new point; an action sent with a moved τ is the lead's new one (annotation/review/services.py).
      given: !!editData.slots[slot].given,
    };
  }
  const names = Object.keys(slots);
  const servedActions = Object.fromEntries(names.map((slot) => [slot, copy(slots[slot].action)]));  // as served, kept apart from the edits
  /** @param {string} slot @param {boolean} given */
  const give = (slot, given) => {
    slots[slot].given = given;
    if (slots[slot].field) slots[slot].field.disabled = !given;
  };
  for (const slot of names) give(slot, slots[slot].given);
  /** @type {ActionTable | null} */
  let table = null;
  /** @param {string} slot */
  const drawEditor = (slot) => {
    const s = slots[slot];
    if (!s.host) return;
    Editor.render(s.host, {
      table, platform: editData.platform, slot, action: s.action, editable: true, check: s.check,
      fallbackCanonical: s.canonical,
      pointHint: gettext("click the screenshot above"),
      onType: (type) => { s.action = type ? { type, args: {}, style: (s.action && s.action.style) || "box" } : null; s.placed = 0; give(slot, true); changed(slot); },
      onArg: (name, value, quiet) => {
        if (!s.action) return;
        if (value === undefined) delete s.action.args[name]; else s.action.args[name] = value;
        give(slot, true);
        changed(slot, quiet);
      },
      onClearPoint: (name) => { delete s.action.args[name]; give(slot, true); changed(slot); },
      // The stored element box can be taken off (then the form sends an empty <slot>_box edit).
      onClearBox: () => {
        give(slot, true);
        delete s.action.target_box;
        const input = /** @type {HTMLInputElement | null} */ (document.getElementById(`edit-${slot}_box`));
        if (input) { input.value = ""; input.disabled = false; }
        changed(slot);
      },
    });
  };
  /**
   * Records the edit, redraws the slot (unless ``quiet``: a field being typed in) and has the server check it.
   * @param {string} slot
   * @param {boolean} [quiet]
   */
  const changed = (slot, quiet) => {
    const s = slots[slot];
    hooks.recordEdit(quiet ? `arg:${slot}` : null);
    if (!quiet) { drawEditor(slot); hooks.drawEdited(slot); }
    clearTimeout(s.timer);
    s.timer = setTimeout(async () => {
      const seq = ++s.seq;
      const res = await api("POST", editData.check_url, { slot, action: s.action, tau: formTau() });
      if (res.status !== 200 || seq !== s.seq) return;
      s.check = res.data;
      s.field.value = s.check.canonical || "";
      drawEditor(slot);
      if (s.given) {
        // The mark and the legend under the screen name the action the lead gave, not the annotator's any more.
        hooks.drawEdited(slot);
        const legend = document.querySelector(`[data-legend="${slot}"]`);
        if (legend) legend.textContent = s.field.value || "—";
      }
    }, 120);
  };
  /**
   * Points are placed on the screens shown above: o_τ for the correction, o_τ+1 for the post-reflection.
   * @param {Element | null} frame
   * @param {string} slot
   */
  const placeOn = (frame, slot) => {
    if (!frame) return;
    frame.addEventListener("click", (event) => {
      const s = slots[slot], screen = hooks.placingScreen(slot);
      const details = /** @type {HTMLDetailsElement | null} */ (document.getElementById("edit-accept"));
      if (!details || !details.open || !s.action || !screen) return;
      const box = frame.querySelector(".zoom-layer").getBoundingClientRect();
      const { clientX, clientY } = /** @type {MouseEvent} */ (event);
      const point = fractionToModel(screen, clickFraction(box, clientX, clientY));
      s.placed = Editor.place(table, s.action, s.placed, point);
      give(slot, true);
      changed(slot);
    });
  };
  return {
    slots,
    names,
    changed,
    placeOn,
    /** Each slot's action now. */
    actions: () => Object.fromEntries(names.map((slot) => [slot, slots[slot].action])),
    /** The slots' element box inputs on the page. */
    boxInputs: () => names.map((slot) => /** @type {HTMLInputElement | null} */ (document.getElementById(`edit-${slot}_box`))).filter(Boolean),
    /** @param {ActionTable} served the action table: the editors are drawn, the served actions checked */
    tableLoaded: (served) => {
      table = served;
      for (const slot of names) { drawEditor(slot); if (slots[slot].action) changed(slot, true); }
    },
    /** @param {Record<string, Action | null>} actions the slots' actions put back by an undo or redo */
    restore: (actions) => {
      for (const slot of names) {
        slots[slot].action = actions[slot]; slots[slot].placed = 0;
        // Back to the annotator's action: nothing of the lead's is sent for it.
        give(slot, editData.slots[slot].given || !same(actions[slot], servedActions[slot]));
        changed(slot);
      }
    },
  };
}
