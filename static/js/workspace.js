/* Annotator workspace: step through a trace, mark the first error, correct it, write the post-reflection.
   The entry module (<script type="module">, no build step): it reads the page's data and wires the modules,
   each of which adds its part to one shared object ``ws`` (state, the served data, and the functions the others
   call):
     workspace/autosave.js     the draft (autosave, version checks, local copy, conflicts) and the lease heartbeat
     workspace/steps.js        the steps' data, carried for the steps around the opening one, fetched in windows
     workspace/stage.js        screenshot panes, overlays, zoom and loupe, element boxes, filmstrip, stepping
     workspace/overlay.js      drawing an action from the served action table (pure part tested by node)
     workspace/editor.js       slots (the served o_{τ+1} rule), the structured editor, points, boxes, server checks
     workspace/panels.js       step text, verdict and fields, starting points, submit and skip
     workspace/alternatives.js on-policy alternatives
     workspace/keyboard.js     the key tables and the keyboard path through a correction
     workspace/undo.js         undo / redo (the history: workspace/history.js, pure) and the banner of destructive keys
   and the shared modules dom.js, api.js, geometry.js (the one coordinate form), zoom.js, action_editor.js.
   Everything imported is rendered with textContent; the action grammar comes from the server's table. */
import { $, el, readJSON } from "./dom.js";
import * as autosave from "./workspace/autosave.js";
import * as steps from "./workspace/steps.js";
import * as editor from "./workspace/editor.js";
import * as stage from "./workspace/stage.js";
import * as panels from "./workspace/panels.js";
import * as alternatives from "./workspace/alternatives.js";
import * as keyboard from "./workspace/keyboard.js";
import * as undo from "./workspace/undo.js";
import { mountVersions } from "./versions.js";

const root = document.getElementById("ws");
if (root) start(root);

function start(root) {
  const DATA = readJSON("ws-data", null);
  // Screen i's step data is STEPS[i - 1] once here: the page carries a few windows of it, workspace/steps.js the rest.
  const N = DATA.trace.step_count;
  const STEPS = new Array(N);
  for (const step of DATA.steps) STEPS[step.index - 1] = step;
  const FINAL = DATA.trace.final_shot;
  const ann = DATA.annotation;
  const ws = {
    root, DATA, STEPS, N,
    ANN_ID: root.dataset.annotation,
    // Whether this page may still change the annotation. A page loaded editable stops being so when a submit's
    // answer says so; every control asks at use, so none keeps offering an edit the server would refuse.
    editable: () => root.dataset.editable === "1",
    LAST_VIEW: FINAL ? N + 1 : N,  // o_{n+1}: the final screen, when the runner kept it
    // The screenshot o_index: a step's, or the final screen after the last step.
    shotOf: (index) => (index === N + 1 ? FINAL : (STEPS[index - 1] || {}).shot || null),
    state: {
      current: 1, overlay: true, compare: false, table: null, cursor: null, boxMode: false,
      // An element box being drawn with the mouse ({slot, a, b}: corners in screenshot pixels), and the imported
      // element under the pointer (its index in the step's elements) that a click would snap to.
      boxDrag: null, hoverElement: null,
      // One view for every pane: scale (1 = the screenshot fitted) and where the image's top-left corner sits, in
      // fractions of the frame; kept while stepping, so the same region stays in view from screen to screen.
      zoom: { scale: 1, ox: 0, oy: 0 },
      version: ann.version, form: autosave.pickFields(ann), serverForm: autosave.pickFields(ann),
      saving: false, pendingAgain: false, retryDelay: 1000, retryUntil: 0, retryTimer: null, blocked: null,
      lastInput: Date.now(), placeIndex: { corrected: 0, reflection: 0 },
      modelStarts: {},  // step index → the pre-scoring model's reply {thought, action}, from static/js/prescore.js
    },
  };
  thoughtFit(ws);
  for (const part of [autosave, steps, editor, stage, panels, alternatives, keyboard, undo]) part.install(ws);

  const state = ws.state;
  const categories = $("f-error_category");
  for (const c of DATA.project.error_categories) categories.appendChild(el("option", { value: c }, c));
  const restored = ws.restoreLocalCopy();
  ws.resetHistory();  // the history starts from the form as opened (with the edits kept in this browser)
  const opening = state.form.verdict === "error" && state.form.tau ? state.form.tau : 1;
  // The page carries the steps around the step the server opens on; edits kept in this browser may name another τ.
  state.current = ws.hasStep(opening) ? opening : DATA.steps.length ? DATA.steps[0].index : 1;
  ws.renderAll();
  if (opening !== state.current) ws.goTo(opening);
  ws.prefetch(state.current);
  fetch(root.dataset.tableUrl, { credentials: "same-origin" }).then((r) => r.json()).then((table) => {
    state.table = table;
    ws.renderAll();
    if (state.form.verdict === "error" && state.form.tau) { ws.checkAction("corrected"); ws.checkAction("reflection"); }
    root.dataset.ready = "1";
  });
  ws.loadAlternatives();
  instructionFit();
  if (restored) { ws.setSaveState("dirty", "Restored unsaved edits"); ws.save(); }
  if (!ws.editable()) ws.setSaveState("saved", ann.status === "draft" ? "Read only" : `${ann.status_display} — read only`);
  // The Versions panel (static/js/versions.js): the page's pending edits are saved first and the restore is based on
  // the version they made; the restored answer replaces this page's copy (its local copy is older: dropped).
  mountVersions($("versions"), {
    beforeRestore: () => ws.save(),
    baseVersion: () => state.version,
    // Blocked first: the reload's pagehide must not flush this page's older form over the restored version.
    restored: () => { state.blocked = "restored"; ws.forgetLocalCopy(); window.location.reload(); },
  });
}

/* A long recorded thought is cut to three lines (the step's panel stays small and in view); a button shows all of
   it. Cut again on every step. */
function thoughtFit(ws) {
  const text = $("ws-thought"), more = $("ws-thought-more");
  const collapse = () => {
    text.classList.remove("expanded");
    more.textContent = "Show all";
    more.setAttribute("aria-expanded", "false");
    more.hidden = text.scrollHeight <= text.clientHeight + 1;
  };
  more.addEventListener("click", () => {
    const open = text.classList.toggle("expanded");
    more.textContent = open ? "Show less" : "Show all";
    more.setAttribute("aria-expanded", String(open));
    text.scrollTop = 0;
  });
  ws.fitThought = collapse;
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
    more.textContent = open ? "Show less" : "Show all";
    more.setAttribute("aria-expanded", String(open));
    text.scrollTop = 0;
  });
  new ResizeObserver(fit).observe(text);
}
