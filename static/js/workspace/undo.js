// @ts-check
/* Undo and redo in the workspace (the history itself: ./history.js, pure), and the banner that follows every
   destructive key. Every change to the form goes through the draft's ``edited`` (autosave.js), which records it here; what
   the server took away in its answer (``adoptCleared``) joins the step that caused it. An undo or redo puts the
   whole form back and saves it at once through the draft's save path (a new version: the server holds the restored
   values). Destructive keys (n, u, e, s, taking an alternative, Delete on a box) all follow one design: the change
   happens, and a banner under the verdict names what it discarded or replaced, with "Undo (Ctrl+Z)". */
import { $, el } from "../dom.js";
import * as H from "./history.js";
import { gettext, interpolate } from "../i18n.js";
import { copy, same } from "../values.js";

/* The workspace's fields in the banner's words (``before``: the form before the change, for τ's value). */
/** @param {{ tau?: number | null, error_category?: string | null }} before @returns {Record<string, string>} */
export function fieldWords(before) {
  return {
    tau: before.tau ? `τ = ${before.tau}` : "τ",
    error_category: before.error_category ? interpolate(gettext("the category “%(category)s”"), { category: before.error_category }) : gettext("the category"),
    corrected_thought: gettext("the corrected thought"),
    "editor_state.corrected": gettext("the corrected action"),
    reflection_thought: gettext("the post-reflection thought"),
    "editor_state.reflection": gettext("the post-reflection action"),
    no_reflection_reason: gettext("the reason for no post-reflection"),
    unusable_reason: gettext("the unusable reason"),
    note: gettext("the note"),
  };
}

/**
 * ``undoable(label, change)``: runs a destructive ``change`` (false when refused) and, when it changed the form, shows
 * the banner naming what it threw away (``label``: its words, or what gives them once the change is made); returns
 * what ``change`` returned.
 * @typedef {<T>(label: string | (() => string), change: () => T) => T} Undoable
 */
/**
 * Undo and redo: ``recordChange(group)`` (after every change of the form; ``group`` joins typing in one field),
 * ``foldChange()`` (what the server derived joins the last step), ``resetHistory()`` (the form was replaced),
 * ``undoable(label, change)``, ``undo()`` and ``redo()``.
 * @typedef {{ recordChange: (group?: string | null) => void, foldChange: () => void, resetHistory: () => void,
 *   undoable: Undoable, undo: () => void, redo: () => void }} WorkspaceUndo
 */

/* Undo and redo. ``page``: {editable()}; ``store``: the workspace's state (form, cursor, blocked); ``draft``:
   autosave.js's edited(), save() and setSaveState(kind, text); ``hooks``: renderAll(), checkActions().
   Returns the functions below. */
/**
 * @param {{ page: Pick<import("./state.js").WorkspacePage, "editable">, store: import("./state.js").Store,
 *   draft: Pick<import("./autosave.js").Draft, "edited" | "save" | "setSaveState">,
 *   hooks: { renderAll: () => void, checkActions: () => void } }} parts
 * @returns {WorkspaceUndo}
 */
export function createUndo({ page, store, draft, hooks }) {
  const form = () => store.get("form");
  let history = H.createHistory();
  let baseline = copy(form());
  let note = null;  // the banner's change: {label, before}

  const undoButton = /** @type {HTMLButtonElement | null} */ ($("ws-undo")), redoButton = /** @type {HTMLButtonElement | null} */ ($("ws-redo"));
  function renderButtons() {
    if (!undoButton) return;
    undoButton.disabled = !page.editable() || !H.canUndo(history);
    redoButton.disabled = !page.editable() || !H.canRedo(history);
  }

  function renderNote() {
    const box = $("ws-undo-note");
    box.replaceChildren();
    if (!note) { box.hidden = true; return; }
    const lost = H.discardedWords(H.discarded(note.before, form(), fieldWords(note.before)));
    box.appendChild(el("strong", {}, note.label + "."));
    if (lost) box.append(" ", lost);
    const b = el("button", { type: "button", id: "ws-undo-note-btn", class: "ws-ghost small" }, gettext("Undo") + " ");
    b.appendChild(el("kbd", {}, "Ctrl+Z"));
    b.addEventListener("click", undoNote);
    box.append(" ", b);
    box.hidden = false;
  }
  const hideNote = () => { if (note) { note = null; renderNote(); } };

  // Called by the draft's edited (autosave.js) after every change of the form; ``group`` joins typing in one field.
  function recordChange(group) {
    if (same(baseline, form())) return;
    history = H.record(history, baseline, form(), { group, at: Date.now() });
    baseline = copy(form());
    // Typing keeps the banner (letters typed into the field a key opened, u's reason: still undone by it); any
    // other change ends it.
    if (group) { if (note) note.typed = true; } else hideNote();
    renderButtons();
  }
  // What the server derived from the last change (a field it emptied, the box's centre as the point): part of that
  // step, not one of its own.
  const foldChange = () => { baseline = copy(form()); if (note) renderNote(); };
  // The form replaced by the server's version (a conflict resolved by loading it): the steps before it are gone.
  const resetHistory = () => { history = H.createHistory(); baseline = copy(form()); hideNote(); renderButtons(); };

  /* Run a destructive ``change`` (it returns false when refused; it saves as any edit): when it changed the form,
     the banner names what it threw away, with its undo. Returns what ``change`` returned. */
  function undoable(label, change) {
    const before = copy(form());
    const done = change();
    if (done === false || same(before, form())) return done;
    note = { label: typeof label === "function" ? label() : label, before, depth: history.past.length, typed: false };
    renderNote();
    return done;
  }

  function step(direction) {
    if (!page.editable() || store.get("blocked") === "conflict") return;
    const result = direction === "undo" ? H.undo(history, form()) : H.redo(history, form());
    if (!result) return;
    history = result.history;
    store.set("form", result.form);
    baseline = copy(form());
    store.set("cursor", null);
    hideNote();
    hooks.renderAll();
    hooks.checkActions();
    draft.edited();
    draft.setSaveState("dirty", direction === "undo" ? "Undone — saving…" : "Redone — saving…");
    draft.save();  // says Saved at once when the form is back to what the server holds
    renderButtons();
  }
  // The banner's undo: back to the form before its change, the letters typed since with it.
  function undoNote() {
    const depth = note ? note.depth : 0;
    while (depth && history.past.length >= depth) step("undo");
  }
  const undo = () => step("undo");
  const redo = () => step("redo");
  window.wsHistory = () => ({ past: history.past.length, future: history.future.length });  // for tests

  if (undoButton) {
    undoButton.addEventListener("click", undo);
    redoButton.addEventListener("click", redo);
  }
  // Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y on the page; inside a text field the browser's own text undo runs.
  document.addEventListener("keydown", (event) => {
    if (!$("ws-help").hidden) return;
    // While the banner of a destructive change shows, nothing was typed since (typing hides it): Ctrl+Z undoes that
    // change even from the field the change put the focus in (u focuses the reason).
    const untouched = note && !note.typed;
    const target = /** @type {Element} */ (event.target);
    const typing = !untouched && target.matches && target.matches("textarea, input:not([type=checkbox]):not([type=radio]):not([type=button])");
    const command = H.historyCommandFor(event, typing);
    if (!command) return;
    event.preventDefault();
    if (command === "undo" && note) undoNote(); else step(command);
  });
  renderButtons();
  return { recordChange, foldChange, resetHistory, undoable, undo, redo };
}
