// @ts-check
/* Undo and redo of a review page's edit form (static/js/workspace/history.js, the workspace's history): every named
   field, both slots' actions and their element box inputs. Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y while the form is open;
   inside a text field the browser's own text undo runs. */
import * as History from "../workspace/history.js";
import { copy } from "../values.js";

/** @typedef {import("../action_editor.js").Action} Action */
/**
 * The form's history: ``recordEdit(group)`` makes one step of it (joining the last one while ``group``, a field being
 * typed in, is the same).
 * @typedef {{ recordEdit: (group: string | null) => void }} FormHistory
 */

/**
 * The history of the form in ``details``. ``actions()``: the slots' actions now; ``boxInputs()``: their box inputs;
 * ``restore(actions)``: puts the slots' actions back (the fields and boxes are put back here) and redraws.
 * @param {{ details: HTMLDetailsElement, actions: () => Record<string, Action | null>,
 *   boxInputs: () => HTMLInputElement[], restore: (actions: Record<string, Action | null>) => void }} parts
 * @returns {FormHistory}
 */
export function createFormHistory({ details, actions, boxInputs, restore }) {
  /** @returns {(HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement)[]} */
  const named = () => [...details.querySelectorAll(/** @type {"input"} */ ("select[name], textarea[name], input[name]:not([type=hidden])"))];
  const snapshot = () => ({
    fields: Object.fromEntries(named().map((node) => [node.name, node.value])),
    actions: actions(),
    boxes: Object.fromEntries(boxInputs().map((node) => [node.id, [node.value, node.disabled]])),
  });
  let history = History.createHistory();
  let baseline = copy(snapshot());
  let restoring = false;
  const undoButton = /** @type {HTMLButtonElement | null} */ (document.getElementById("edit-undo"));
  const redoButton = /** @type {HTMLButtonElement | null} */ (document.getElementById("edit-redo"));
  const renderHistory = () => {
    if (undoButton) { undoButton.disabled = !History.canUndo(history); redoButton.disabled = !History.canRedo(history); }
  };
  /**
   * One step of the history, ended by the next edit unless it is of the same ``group`` (typing in one field).
   * @param {string | null} group
   */
  function recordEdit(group) {
    if (restoring) return;
    const now = snapshot();
    history = History.record(history, baseline, now, { group, at: Date.now() });
    baseline = copy(now);
    renderHistory();
  }
  /** @param {"undo" | "redo"} direction */
  function stepHistory(direction) {
    const result = direction === "undo" ? History.undo(history, snapshot()) : History.redo(history, snapshot());
    if (!result) return;
    history = result.history;
    const form = result.form;
    restoring = true;
    for (const node of named()) if (node.name in form.fields) node.value = form.fields[node.name];
    for (const node of boxInputs()) if (form.boxes[node.id]) [node.value, node.disabled] = form.boxes[node.id];
    restore(form.actions);
    restoring = false;
    baseline = copy(snapshot());
    renderHistory();
  }
  details.addEventListener("input", (event) => {
    const target = /** @type {HTMLInputElement} */ (event.target);
    if (target.name) recordEdit(`field:${target.name}`);
  });
  details.addEventListener("change", (event) => {
    const target = /** @type {HTMLInputElement} */ (event.target);
    if (target.name && target.tagName === "SELECT") recordEdit(null);
  });
  if (undoButton) {
    undoButton.addEventListener("click", () => stepHistory("undo"));
    redoButton.addEventListener("click", () => stepHistory("redo"));
  }
  document.addEventListener("keydown", (event) => {
    if (!details.open) return;
    const target = /** @type {Element} */ (event.target);
    const typing = target.matches && target.matches("textarea, input:not([type=checkbox]):not([type=radio])");
    const command = History.historyCommandFor(event, typing);
    if (!command) return;
    event.preventDefault();
    stepHistory(command);
  });
  window.reviewHistory = () => ({ past: history.past.length, future: history.future.length });  // for tests
  return { recordEdit };
}
