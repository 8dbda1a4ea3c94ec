// @ts-check
/* Annotator workspace: step through a trace, mark the first error, correct it, write the post-reflection.
   The entry module (<script type="module">, no build step): it reads the page's data, makes the state store and
   wires the modules. Each module exports a function that takes what it uses (the store, the page's read-only data,
   and the other modules' functions it calls, by name) and returns its own functions; none reaches into another's.
     workspace/state.js        the shared state: declared names behind get / set / subscribe (pure, node-tested)
     workspace/steps.js        the steps' data, carried for the steps around the opening one, fetched in windows
     workspace/autosave.js     the draft (autosave, version checks, local copy, conflicts) and the lease heartbeat
     workspace/editor.js       slots (the served o_{τ+1} rule), the structured editor, points, boxes, server checks
     workspace/undo.js         undo / redo (the history: workspace/history.js, pure) and the banner of destructive keys
     workspace/stage.js        screenshot panes, overlays (workspace/overlay.js), zoom and loupe, element boxes,
                               filmstrip, stepping
     workspace/panels.js       step text, verdict and fields, starting points, submit and skip
     workspace/alternatives.js on-policy alternatives
     workspace/keyboard.js     the key tables and the keyboard path through a correction (hints: workspace/hints.js)
   and the shared modules dom.js, api.js, geometry.js (the one coordinate form), zoom.js, action_editor.js.
   Modules that call each other both ways (the draft redraws the page, the page saves the draft) get each other's
   functions as arrows over the variables below, read when called, after everything is made.
   Everything imported is rendered with textContent; the action grammar comes from the server's table. */
import { $, el, readJSON } from "./dom.js";
import { createWorkspaceState } from "./workspace/state.js";
import { createDraft, pickFields } from "./workspace/autosave.js";
import { createSteps } from "./workspace/steps.js";
import { createEditor } from "./workspace/editor.js";
import { createStage } from "./workspace/stage.js";
import { createPanels } from "./workspace/panels.js";
import { createAlternatives } from "./workspace/alternatives.js";
import { installKeyboard } from "./workspace/keyboard.js";
import { createUndo } from "./workspace/undo.js";
import { mountVersions } from "./versions.js";
import { gettext, interpolate } from "./i18n.js";

const root = document.getElementById("ws");
if (root) start(root);

function start(root) {
  const DATA = readJSON("ws-data", null);
  const ann = DATA.annotation;
  const page = {
    root,
    annotationId: root.dataset.annotation,
    traceId: DATA.trace.id,
    // Whether this page may still change the annotation. A page loaded editable stops being so when a submit's
    // answer says so; every control asks at use, so none keeps offering an edit the server would refuse.
    editable: () => root.dataset.editable === "1",
    lease: DATA.lease,
    platform: DATA.project.platform,
    canonical: { corrected: ann.corrected_action, reflection: ann.reflection_action },
    verdictAnswers: DATA.verdict_answers,
    strip: DATA.strip,
  };
  const store = createWorkspaceState({ version: ann.version, form: pickFields(ann) });

  // Made below; the arrows read them when called.
  let draft, editor, undo, stage, panels, alternatives;
  const renderAll = () => panels.renderAll();
  const renderStage = () => stage.renderStage();
  const undoable = (label, change) => undo.undoable(label, change);
  const checkActions = () => editor.checkActions();

  // Screen i's step data: the page carries a few windows of it, workspace/steps.js the rest.
  const steps = createSteps({
    initial: DATA.steps, count: DATA.trace.step_count, finalShot: DATA.trace.final_shot,
    size: DATA.steps_window, url: DATA.steps_url,
    loaded: (first, last) => stage.stepsLoaded(first, last),
    failed: (message) => draft.banner("error", message),
  });
  draft = createDraft({ page, store, hooks: {
    recordChange: (group) => undo.recordChange(group), foldChange: () => undo.foldChange(),
    resetHistory: () => undo.resetHistory(), renderAll, checkActions,
  } });
  editor = createEditor({ page, store, steps, draft, hooks: {
    renderAll, renderStage, renderPanels: () => panels.renderPanels(), foldChange: () => undo.foldChange(),
  } });
  undo = createUndo({ page, store, draft, hooks: { renderAll, checkActions } });
  alternatives = createAlternatives({ page, store, draft, editor, undoable, hooks: {
    redrawOverlays: () => stage.redrawOverlays(),
  } });
  stage = createStage({ page, store, steps, editor, draft, undoable,
    drawAlternatives: alternatives.drawAlternatives, hooks: { renderStep: renderAll } });
  panels = createPanels({ page, store, steps, editor, draft, stage, undoable, fitThought: thoughtFit() });
  installKeyboard({ store, steps, editor, stage, draft, panels, alternatives, undoable });
  // The view's toggles redraw the stage whoever flips them.
  store.subscribe("overlay", renderStage);
  store.subscribe("compare", renderStage);

  const categories = $("f-error_category");
  for (const c of DATA.project.error_categories) categories.appendChild(el("option", { value: c }, c));
  const restored = draft.restoreLocalCopy();
  undo.resetHistory();  // the history starts from the form as opened (with the edits kept in this browser)
  const form = store.get("form");
  const opening = form.verdict === "error" && form.tau ? form.tau : 1;
  // The page carries the steps around the step the server opens on; edits kept in this browser may name another τ.
  store.set("current", steps.hasStep(opening) ? opening : DATA.steps.length ? DATA.steps[0].index : 1);
  renderAll();
  if (opening !== store.get("current")) stage.goTo(opening);
  stage.prefetch(store.get("current"));
  fetch(root.dataset.tableUrl, { credentials: "same-origin" }).then((r) => r.json()).then((table) => {
    store.set("table", table);
    renderAll();
    checkActions();
    root.dataset.ready = "1";
  });
  alternatives.load();
  instructionFit();
  if (restored) { draft.setSaveState("dirty", gettext("Restored unsaved edits")); draft.save(); }
  if (!page.editable()) draft.setSaveState("saved", ann.status === "draft" ? gettext("Read only") : interpolate(gettext("%(status)s — read only"), { status: ann.status_display }));
  // The Versions panel (static/js/versions.js): the page's pending edits are saved first and the restore is based on
  // the version they made; the restored answer replaces this page's copy (its local copy is older: dropped).
  mountVersions(/** @type {HTMLDetailsElement} */ ($("versions")), {
    beforeRestore: () => draft.save(),
    baseVersion: () => store.get("version"),
    // Blocked first: the reload's pagehide must not flush this page's older form over the restored version.
    restored: () => { store.set("blocked", "restored"); draft.forgetLocalCopy(); window.location.reload(); },
  });
}

/* A long recorded thought is cut to three lines (the step's panel stays small and in view); a button shows all of
   it. Returns what cuts it again (on every step). */
function thoughtFit() {
  const text = $("ws-thought"), more = $("ws-thought-more");
  const collapse = () => {
    text.classList.remove("expanded");
    more.textContent = gettext("Show all");
    more.setAttribute("aria-expanded", "false");
    more.hidden = text.scrollHeight <= text.clientHeight + 1;
  };
  more.addEventListener("click", () => {
    const open = text.classList.toggle("expanded");
    more.textContent = open ? gettext("Show less") : gettext("Show all");
    more.setAttribute("aria-expanded", String(open));
    text.scrollTop = 0;
  });
  return collapse;
}

/* A long instruction is cut to two lines (the stage keeps its height); a button says there is more and shows all of it. */
function instructionFit() {
  const text = $("ws-instruction"), more = $("ws-instruction-more");
  if (!text || !more) return;
  const fit = () => {
    if (text.classList.contains("expanded")) return;
    more.hidden = text.scrollHeight <= text.clientHeight + 1;
  };
  more.addEventListener("click", () => {
    const open = text.classList.toggle("expanded");
    more.textContent = open ? gettext("Show less") : gettext("Show all");
    more.setAttribute("aria-expanded", String(open));
    text.scrollTop = 0;
  });
  new ResizeObserver(fit).observe(text);
}
