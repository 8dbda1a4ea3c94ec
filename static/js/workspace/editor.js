// @ts-check
/* The correction's actions: which slot is edited on which screen, the structured editor (static/js/action_editor.js,
   drawn from the served table), points placed, element boxes drawn or snapped to, and the server's check of each
   edit (POST /api/annotations/<id>/check-action/). ``slotAt``, ``reflectionScreen`` and
   ``serverNoReflectionReason`` are pure (tests/js/editor.test.mjs): the o_{τ+1} rule is the server's (each step's served
   ``reflection_screen`` and ``server_no_reflection_reason``). */
import * as Editor from "../action_editor.js";
import { boxOf, isEmptyBox, toModel } from "../geometry.js";
import { api } from "../api.js";
import { gettext, interpolate } from "../i18n.js";
import { same } from "../values.js";

/* The screen a post-reflection for a first error at step ``tau`` is written on (o_{τ+1}), or null when that screen
   was not kept: read from the served steps (annotation.selectors.workspace_payload, ``reflection_screen``). */
/** @param {import("./steps.js").Step[]} steps @param {number | null} tau @returns {number | null} */
export function reflectionScreen(steps, tau) {
  const step = tau ? steps[tau - 1] : null;
  return step && step.reflection_screen ? step.reflection_screen : null;
}

/* The reason the server records itself for a first error at ``tau`` when no post-reflection can be given (o_{τ+1} was
   not kept), or "" when it records none and the annotator may give one: the served ``server_no_reflection_reason``. */
/** @param {import("./steps.js").Step[]} steps @param {number | null} tau @returns {string} */
export function serverNoReflectionReason(steps, tau) {
  const step = tau ? steps[tau - 1] : null;
  return (step && step.server_no_reflection_reason) || "";
}

/* Which editor slot is placed on screen ``index``: the correction on o_τ, the post-reflection on o_{τ+1}. */
/**
 * @param {import("./steps.js").Step[]} steps @param {{ verdict: string | null, tau: number | null }} form
 * @param {number} index @returns {"corrected" | "reflection" | null}
 */
export function slotAt(steps, form, index) {
  if (form.verdict !== "error" || !form.tau) return null;
  if (index === form.tau) return "corrected";
  if (index === reflectionScreen(steps, form.tau)) return "reflection";
  return null;
}

/* Whether an action of this type takes an element box: only the target point (start_box) has one, and the table
   says which actions have that point. */
/** @type {(table: ActionTable | null, action: Action) => boolean} */
export const takesBox = (table, action) => Editor.pointArgs(table, action.type).some((a) => a.name === "start_box");

/* Whether a click on a recorded element snaps this action's box to it: its one placeable point is the target. */
/** @type {(table: ActionTable | null, action: Action) => boolean} */
export const snaps = (table, action) => {
  const p = Editor.placeablePoints(table, action.type);
  return p.length === 1 && p[0].name === "start_box";
};

/** @typedef {import("../action_editor.js").Action} Action */
/** @typedef {import("../action_editor.js").ActionTable} ActionTable */
/** @typedef {import("../geometry.js").Shot} Shot */
/**
 * The correction's editor, its slots named "corrected" and "reflection": ``slotAt(index)`` (the slot placed on
 * screen ``index``, or null), ``reflectionScreen(tau)``, ``serverNoReflectionReason(tau)``, ``pointArgsOf(type)``,
 * ``takesBox(action)``, ``snaps(action)``; ``renderEditor(slot)``; the edits, each drawn, saved and checked:
 * ``placePoint(slot, point)`` (in the convention), ``setTargetBox(slot, box)``, ``drawBox(slot, shot, a, b)`` (two
 * corners in pixels), ``clearBox(slot)``, ``startSlot(slot, action)``; the server's checks ``checkAction(slot)`` and
 * ``checkActions()``; ``changed(slot)`` after a change from outside the editor.
 * @typedef {{ slotAt: (index: number) => string | null, reflectionScreen: (tau: number | null) => number | null,
 *   serverNoReflectionReason: (tau: number | null) => string,
 *   pointArgsOf: (type: string) => import("../action_editor.js").ArgSpec[], takesBox: (action: Action) => boolean,
 *   snaps: (action: Action) => boolean, renderEditor: (slot: string) => void,
 *   placePoint: (slot: string, point: number[]) => void, setTargetBox: (slot: string, box: number[]) => void,
 *   drawBox: (slot: string, shot: Shot, a: number[], b: number[]) => void, clearBox: (slot: string) => void,
 *   startSlot: (slot: string, action: Action | null) => void, checkAction: (slot: string) => void,
 *   checkActions: () => void, changed: (slot: string) => void }} WorkspaceEditor
 */

/* The correction's editor. ``page``: {annotationId, platform, editable(), canonical: {corrected, reflection} (the
   served canonical strings, shown until the server checks an edit)}; ``store``: the workspace's state (form, table);
   ``steps``: steps.js's; ``draft``: autosave.js's edited(group) and banner(kind, message); ``hooks``: renderAll(),
   renderStage(), renderPanels(), foldChange() (undo.js: what the server derived joins the last change).
   Returns the editor's functions (below). */
/**
 * @param {{ page: Pick<import("./state.js").WorkspacePage, "annotationId" | "platform" | "editable" | "canonical">,
 *   store: import("./state.js").Store, steps: Pick<import("./steps.js").Steps, "list">,
 *   draft: Pick<import("./autosave.js").Draft, "edited" | "banner">,
 *   hooks: { renderAll: () => void, renderStage: () => void, renderPanels: () => void, foldChange: () => void } }} parts
 * @returns {WorkspaceEditor}
 */
export function createEditor({ page, store, steps, draft, hooks }) {
  const ANN_ID = page.annotationId;
  const form = () => store.get("form");
  const table = () => store.get("table");
  // Which point of each slot's action a click places next.
  const placeIndex = { corrected: 0, reflection: 0 };
  const slotAtScreen = (index) => slotAt(steps.list(), form(), index);
  const reflectionScreenOf = (tau) => reflectionScreen(steps.list(), tau);
  const serverNoReflectionReasonOf = (tau) => serverNoReflectionReason(steps.list(), tau);
  const pointArgsOf = (type) => Editor.pointArgs(table(), type);
  const takesBoxOf = (action) => takesBox(table(), action);
  const snapsOf = (action) => snaps(table(), action);

  const changed = (slot) => { hooks.renderAll(); draft.edited(); checkAction(slot); };

  const checks = { corrected: null, reflection: null };
  function renderEditor(slot) {
    Editor.render(document.querySelector(`.ws-action-editor[data-slot="${slot}"]`), {
      table: table(),
      platform: page.platform,
      slot,
      action: form().editor_state[slot],
      editable: page.editable(),
      check: checks[slot],
      fallbackCanonical: page.canonical[slot],
      onType: (type) => {
        // A new type starts empty: a point placed for the old action means nothing for the new one.
        const old = form().editor_state[slot];
        form().editor_state[slot] = type ? { type, args: {}, style: (old && old.style) || "box" } : null;
        placeIndex[slot] = 0;
        changed(slot);
      },
      onArg: (name, value, quiet) => setArg(slot, name, value, quiet),
      onClearPoint: (name) => { delete form().editor_state[slot].args[name]; changed(slot); },
      onClearBox: () => clearBox(slot),
      boxHint: gettext("Shift+drag on the screenshot, b from the keyboard, or click an outlined element"),
    });
  }

  function setArg(slot, name, value, quiet) {
    const action = form().editor_state[slot];
    if (!action) return;
    if (value === undefined) delete action.args[name]; else action.args[name] = value;
    if (!quiet) hooks.renderAll(); else hooks.renderStage();
    draft.edited(quiet ? `arg:${slot}:${name}` : undefined); checkAction(slot);
  }

  function placePoint(slot, point) {
    const action = form().editor_state[slot];
    if (!action) { draft.banner("error", gettext("Choose the action type first, then click to place it.")); return; }
    if (!Editor.placeablePoints(table(), action.type).length) return;
    placeIndex[slot] = Editor.place(table(), action, placeIndex[slot], point);
    changed(slot);
  }

  // A new box: the point goes back to the server's default, the box's centre (and can then be moved inside it).
  function setTargetBox(slot, box) {
    const action = form().editor_state[slot];
    if (!action) return;
    action.target_box = box;
    delete action.args.start_box;
    placeIndex[slot] = 1;
    changed(slot);
  }
  /* A box drawn between two corners in screenshot pixels (a drag, or the keyboard's anchor and cursor). */
  function drawBox(slot, shot, a, b) {
    const box = boxOf(toModel(shot, a), toModel(shot, b));
    if (isEmptyBox(box)) { hooks.renderStage(); return; }  // a press without a drag draws nothing
    setTargetBox(slot, box);
  }
  function clearBox(slot) {
    const action = form().editor_state[slot];
    if (!action) return;
    delete action.target_box;
    changed(slot);
  }
  /* A slot's action replaced from outside the editor (a starting point, an alternative taken): ``action`` is
     taken as the slot's, its points placed from the first again; drawn, saved and checked. */
  function startSlot(slot, action) {
    form().editor_state[slot] = action;
    placeIndex[slot] = 0;
    changed(slot);
  }

  const checkTimers = {}, checkSeq = { corrected: 0, reflection: 0 };
  function checkAction(slot) {
    clearTimeout(checkTimers[slot]);
    checkTimers[slot] = setTimeout(async () => {
      const action = form().editor_state[slot];
      const seq = ++checkSeq[slot]; // answers can overtake each other: only the latest counts
      const res = await api("POST", `/api/annotations/${ANN_ID}/check-action/`, { slot, action, tau: form().tau });
      if (res.status !== 200 || seq !== checkSeq[slot]) return;  // offline: checked again on the next edit
      checks[slot] = res.data;
      // The point a box gives by default (its centre) is the server's: take it over while the box is unchanged.
      const now = form().editor_state[slot], served = res.data.action;
      if (now && served && Array.isArray(now.target_box) && !now.args.start_box && served.args.start_box
        && same(now.target_box, served.target_box)) {
        now.args.start_box = served.args.start_box;
        hooks.foldChange();  // part of drawing the box: one undo takes both
        hooks.renderAll(); draft.edited();
      } else hooks.renderPanels();
    }, 120);
  }
  /* Both slots checked again by the server, when the form has a first error (after the form was replaced). */
  function checkActions() {
    if (form().verdict === "error" && form().tau) { checkAction("corrected"); checkAction("reflection"); }
  }

  return {
    slotAt: slotAtScreen, reflectionScreen: reflectionScreenOf, serverNoReflectionReason: serverNoReflectionReasonOf,
    pointArgsOf, takesBox: takesBoxOf, snaps: snapsOf, renderEditor, placePoint, setTargetBox, drawBox, clearBox,
    startSlot, checkAction, checkActions,
    /* After the editor's action or the thoughts were changed from outside the editor: draw, save and check. */
    changed,
  };
}
