// @ts-check
/* The side of the workspace: the step's text, the verdict and the answer's fields, the starting points of a
   correction, and submit / skip with the server's problems shown where each is fixed. */
import { $, el } from "../dom.js";
import { api, isAuthProblem } from "../api.js";
import { sub } from "./stage.js";
import { gettext, interpolate } from "../i18n.js";
import { keyLabel, shortcutMode } from "../keys.js";
import { copy } from "../values.js";

// Where each submit problem is typed or chosen: highlighted until it is edited.
const PROBLEM_TARGETS = {
  verdict: "#ws-verdict-panel .ws-verdict", tau: "#ws-verdict-panel .ws-verdict",
  corrected_action: ".ws-action-editor[data-slot='corrected']", reflection_action: ".ws-action-editor[data-slot='reflection']",
};

/* The name of screen ``i`` of a trace of ``stepCount`` steps, as the stage and the step's panel both write it. */
/** @type {(i: number, stepCount: number) => string} */
export const stepTitle = (i, stepCount) => (i > stepCount ? interpolate(gettext("Final screen (after step %(count)s)"), { count: stepCount })
  : interpolate(gettext("Step %(step)s of %(count)s"), { step: i, count: stepCount }));

/* What the verdict panel says of the answer ``form``. */
/** @param {{ verdict: string | null, tau: number | null }} form @returns {string} */
export function verdictText(form) {
  return form.verdict === "error" ? interpolate(gettext("First error at step %(tau)s (τ)."), { tau: form.tau })
    : form.verdict === "no_error" ? gettext("The trace has no error.")
    : form.verdict === "unusable" ? gettext("Unusable.") : gettext("Not decided yet.");
}

/* What a screen reader hears on arriving at screen ``i`` (the live region #ws-announce): its name, its recorded
   action, where it stands to τ, and the answer's verdict. ``reflectionAt``: the post-reflection's screen (or null). */
/**
 * @param {{ i: number, stepCount: number, actionText: string | null, form: { verdict: string | null, tau: number | null },
 *   reflectionAt: number | null }} parts
 * @returns {string}
 */
export function stepAnnouncement({ i, stepCount, actionText, form, reflectionAt }) {
  const tau = form.verdict === "error" ? form.tau : null;
  const place = !tau ? "" : i === tau ? gettext("This is τ, the first error: the correction is written here.")
    : i === reflectionAt ? gettext("The post-reflection is written on this screen.") : i > tau ? gettext("After τ.") : gettext("Before τ.");
  const action = i > stepCount ? "" : interpolate(gettext("Action: %(action)s."), { action: actionText || gettext("none recorded") });
  return [`${stepTitle(i, stepCount)}.`, action, place, verdictText(form)].filter(Boolean).join(" ");
}

/* What the post-reflection's place says when none can be given: the server's reason (``reason``, the step's served
   ``server_no_reflection_reason``: o_{τ+1} was not kept, or the source dropped steps right after τ), which the
   annotation records itself. */
/** @param {string} reason @returns {string} */
export function reflectionMissingText(reason) {
  return `${reason} ${gettext("The annotation will record this as the reason.")}`;
}

/* The way to the correction away from it ("" with no τ); when no post-reflection can be given (the server's
   ``reason``, "" when one can) it does not send the annotator looking for one. ``tKey``: how the person presses t
   (keys.js ``keyLabel``: "Alt+t" with a modifier, null with single-key shortcuts off: then step τ of the strip). */
/** @param {number | null} tau @param {string} reason @param {string | null} [tKey] @returns {string} */
export function gotoText(tau, reason, tKey = "t") {
  if (!tau) return "";
  if (tKey === null) {  // single-key shortcuts off: step τ of the strip
    return reason ? interpolate(gettext("τ = %(tau)s. Go to step %(tau)s in the strip above to go to the correction (no post-reflection can be given: the reason is beside it)."), { tau })
      : interpolate(gettext("τ = %(tau)s. Go to step %(tau)s in the strip above to go to the correction, then → for the post-reflection."), { tau });
  }
  return reason ? interpolate(gettext("τ = %(tau)s. Press %(key)s to go to the correction (no post-reflection can be given: the reason is beside it)."), { tau, key: tKey })
    : interpolate(gettext("τ = %(tau)s. Press %(key)s to go to the correction, then → for the post-reflection."), { tau, key: tKey });
}

/* The problems of a refused submit, field → message, from the server's answer ``data`` (studio/errors.py: its field
   errors, else its detail; nothing read: the server could not be reached). */
/** @param {any} data the server's answer, null when none was read @returns {Record<string, any>} */
export function submitProblems(data) {
  return (data && data.errors) || { detail: (data && data.detail) || gettext("the server could not be reached") };
}

/**
 * The side: ``renderAll()`` (the whole page for the screen shown), ``renderPanels()``, ``renderStarts()``,
 * ``setVerdict(verdict)`` (undoable; false when refused) and ``submit()``.
 * @typedef {{ renderAll: () => void, renderPanels: () => void, renderStarts: () => void,
 *   setVerdict: (verdict: string) => boolean | undefined, submit: () => Promise<void> }} Panels
 */

/* The side. ``page``: {root, annotationId, traceId, editable(), verdictAnswers (the fields each verdict keeps
   empty: the server's table)}; ``store``: the workspace's state (current, form, version); ``steps``: steps.js's;
   ``editor``: editor.js's reflectionScreen, serverNoReflectionReason, renderEditor, checkAction, changed;
   ``draft``: autosave.js's; ``stage``: stage.js's renderStrip, renderStage, announceStep; ``undoable(label,
   change)``: undo.js's; ``fitThought()``: the step's thought cut again to its lines. Returns renderAll() (the whole
   page for the screen shown), renderPanels(), renderStarts(), setVerdict(verdict) and submit(). */
/**
 * @param {{ page: Pick<import("./state.js").WorkspacePage, "root" | "annotationId" | "traceId" | "editable" | "verdictAnswers">,
 *   store: import("./state.js").Store, steps: import("./steps.js").Steps,
 *   editor: Pick<import("./editor.js").WorkspaceEditor, "reflectionScreen" | "serverNoReflectionReason" | "renderEditor" | "checkAction" | "changed">,
 *   draft: import("./autosave.js").Draft,
 *   stage: Pick<import("./stage.js").Stage, "renderStrip" | "renderStage" | "announceStep">,
 *   undoable: import("./undo.js").Undoable, fitThought: () => void }} parts
 * @returns {Panels}
 */
export function createPanels({ page, store, steps, editor, draft, stage, undoable, fitThought }) {
  const ANN_ID = page.annotationId, root = page.root, N = steps.count;
  const form = () => store.get("form");
  const current = () => store.get("current");
  // Step index → the pre-scoring model's reply {thought, action}, from static/js/prescore.js.
  let modelStarts = {};

  const renderAll = () => { stage.renderStrip(); stage.renderStage(); renderStepInfo(); renderPanels(); stage.announceStep(); };

  function renderStepInfo() {
    const i = current();
    const step = steps.step(i);
    // The stage and the step's panel name the screen in the same words (they read "Step 1 of 3" and "Step 1 / 3").
    const title = stepTitle(i, N);
    $("ws-step-num").textContent = title;
    $("ws-step-label").textContent = title;
    // The final screen has no recorded thought or action: "as recorded" would name nothing.
    $("ws-step-recorded").hidden = i > N;
    const tags = $("ws-step-tags");
    tags.replaceChildren();
    const tau = form().verdict === "error" ? form().tau : null;
    if (tau && i === tau) tags.appendChild(el("span", { class: "ws-tag tau" }, gettext("τ · first error")));
    // Written as the screen's caption writes it (o₄), not in the underscore notation no other label uses.
    if (tau && i === editor.reflectionScreen(tau)) tags.appendChild(el("span", { class: "ws-tag refl" }, `o${sub(i)} · ${gettext("post-reflection")}`));
    if (tau && i > tau + 1) tags.appendChild(el("span", { class: "ws-tag after" }, gettext("after τ")));
    $("ws-thought").textContent = step ? (step.thought || gettext("(no thought recorded)")) : "—";
    fitThought();
    $("ws-action").textContent = step ? (step.action_text || gettext("(no action)")) : "—";
    const gap = step ? step.missing_before : 0;
    $("ws-gap").hidden = !gap;
    $("ws-gap").textContent = gap ? interpolate(gettext("The source dropped %(missing)s right before this one: the screen before it is not the previous step's result."), { missing: step.missing_before_words }) : "";
    $("ws-parse-error").hidden = !(step && step.parse_error);
    $("ws-parse-error").textContent = step && step.parse_error ? interpolate(gettext("Does not parse: %(problem)s"), { problem: step.parse_error }) : "";
    $("ws-off-screen").hidden = !(step && step.off_screen);
    $("ws-off-screen").textContent = step && step.off_screen ? interpolate(gettext("Off the screen: %(point)s"), { point: step.off_screen }) : "";
    // While correcting each of these notes is cut to a line (workspace.css): the whole text on hover.
    for (const id of ["ws-gap", "ws-parse-error", "ws-off-screen"]) $(id).title = $(id).textContent;
    const human = step && step.human_edit;
    $("ws-human").hidden = !human;
    $("ws-human-text").textContent = human ? human.raw : "";
    // Said once per screen and verdict: a redraw that changes neither (a save, a field typed) says nothing again.
    const said = stepAnnouncement({
      i, stepCount: N, actionText: step && step.action_text, form: form(), reflectionAt: editor.reflectionScreen(tau),
    });
    if ($("ws-announce").textContent !== said) $("ws-announce").textContent = said;
  }

  function renderPanels() {
    const f = form();
    for (const b of document.querySelectorAll(/** @type {"button"} */ ("[data-verdict]"))) {
      b.classList.toggle("active", b.dataset.verdict === f.verdict);
      b.disabled = !page.editable();
    }
    const vt = $("ws-verdict-text");
    vt.textContent = verdictText(f);
    $("ws-unusable-wrap").hidden = f.verdict !== "unusable";
    $("ws-error-fields").hidden = f.verdict !== "error";
    for (const node of document.querySelectorAll(/** @type {"input"} */ ("[data-field]"))) {
      const v = f[node.dataset.field];
      if (document.activeElement !== node && node.value !== (v || "")) node.value = v || "";
      node.disabled = !page.editable();
    }
    const i = current();
    const tau = f.verdict === "error" ? f.tau : null;
    // τ's step says where its post-reflection goes: a τ far from the steps here (a version restored, an undo) waits
    // for its window, then everything is drawn again.
    if (tau && !steps.hasStep(tau)) steps.loadAround(tau).then((loaded) => { if (loaded) renderAll(); });
    const after = editor.reflectionScreen(tau);  // o_{τ+1}, or null when none can be given (the server's rule)
    // Why no post-reflection can be given ("" when one can): the server's words, which it records on submit.
    const reason = editor.serverNoReflectionReason(tau);
    const missing = !!tau && (after === null || !!reason);
    const showCorrection = tau && i === tau;
    // Without o_{τ+1} the reason there is no post-reflection is given beside the correction.
    const showReflection = tau && (i === after || (i === tau && missing));
    $("ws-correction").hidden = !showCorrection;
    $("ws-reflection").hidden = !showReflection;
    for (const node of document.querySelectorAll(".ws-tau")) node.textContent = tau || "";
    $("ws-reflection-missing").hidden = !missing;
    // Where the server records the reason itself, the annotator is not asked for one: its reason stands in place of
    // the editor.
    $("ws-no-reflection-wrap").hidden = !!reason;
    $("ws-reflection-body").hidden = missing;
    if (missing) $("ws-reflection-missing").textContent = reflectionMissingText(reason);
    const goto = $("ws-goto");
    goto.hidden = !tau || showCorrection || showReflection;
    // Without o_{τ+1} there is no post-reflection to go on to: the hint does not send the annotator looking for one.
    $("ws-goto-text").textContent = gotoText(tau, missing ? reason : "", keyLabel("t", shortcutMode()));
    if (showCorrection) editor.renderEditor("corrected");
    if (showReflection && !missing) editor.renderEditor("reflection");
    renderStarts();
  }

  function renderStarts() {
    const box = document.querySelector('[data-starts="corrected"]');
    box.replaceChildren();
    const tau = form().tau;
    const step = tau ? steps.step(tau) : null;
    if (!step || !page.editable()) return;
    const start = (cls, text, title, done, use) => {
      const b = el("button", { type: "button", class: cls }, text);
      if (title) b.title = title;
      // Starting over replaces what was written: one destructive change, with the undo banner (undo.js).
      b.addEventListener("click", () => undoable(done, () => { use(); editor.changed("corrected"); }));
      box.appendChild(b);
    };
    if (step.human_edit && step.human_edit.action) {
      start("ws-start human", gettext("Start from the human-edited reply"), gettext("The source kept a human correction of this step"),
        gettext("Started the correction from the human-edited reply"), () => {
        form().corrected_thought = step.human_edit.thought;
        form().editor_state.corrected = copy(step.human_edit.action);
      });
    }
    const suggestion = modelStarts[tau];
    if (suggestion) {
      start("ws-start model", gettext("Start from the model's reply"), gettext("The pre-scoring model's own thought and action at this step"),
        gettext("Started the correction from the model's reply"), () => {
        form().corrected_thought = suggestion.thought || form().corrected_thought;
        form().editor_state.corrected = copy(suggestion.action);
      });
    }
    if ((step.actions || []).length) {
      start("ws-start", gettext("Start from the recorded action"), "", gettext("Started the correction from the recorded action"), () => {
        form().editor_state.corrected = copy(step.actions[0]);
        if (!form().corrected_thought) form().corrected_thought = step.thought;
      });
    }
    const first = box.querySelector(".ws-start");
    if (first) { first.append(" "); first.appendChild(el("kbd", {}, "s")); }
  }
  document.addEventListener("prescore:starts", (/** @type {CustomEvent} */ event) => {
    if (String(event.detail.traceId) !== String(page.traceId)) return;
    modelStarts = event.detail.starts || {};
    renderStarts();
  });

  // --- marking ---
  // Returns whether the verdict was set (read only, or τ asked for on the final screen: not).
  // The fields a verdict keeps empty are emptied in the page at once, from the server's own table
  // (``verdict_answers``: annotation.services.answer_for_verdict), so the undo banner can say what went.
  function setVerdict(verdict) {
    if (!page.editable()) return false;
    const f = form();
    if (verdict === "error") {
      if (current() > N) { draft.banner("error", gettext("The final screen is not a step: mark τ on a step.")); return false; }
      f.verdict = "error"; f.tau = current();
    } else {
      f.verdict = verdict;
    }
    for (const [name, empty] of Object.entries((page.verdictAnswers || {})[verdict] || {})) {
      if (name in f) f[name] = copy(empty);
    }
    renderAll(); draft.edited();
    if (verdict === "error") { editor.checkAction("corrected"); if (editor.reflectionScreen(f.tau)) editor.checkAction("reflection"); }
    if (verdict === "unusable") $("f-unusable_reason").focus();
    return true;
  }
  const VERDICT_WORDS = { no_error: gettext("Marked No error"), unusable: gettext("Marked Unusable") };
  /* Set the verdict (a key or a button): one destructive change, with the undo banner (undo.js). Returns whether it
     was set (read only, or τ asked for on the final screen: not). */
  const setVerdictUndoably = (verdict) => undoable(() => VERDICT_WORDS[verdict] || interpolate(gettext("Marked the first error at step %(tau)s"), { tau: form().tau }),
    () => setVerdict(verdict));
  for (const b of document.querySelectorAll(/** @type {"button"} */ ("[data-verdict]"))) b.addEventListener("click", () => setVerdictUndoably(b.dataset.verdict));
  for (const node of document.querySelectorAll(/** @type {"input"} */ ("[data-field]"))) {
    node.addEventListener(node.tagName === "SELECT" ? "change" : "input", () => {
      form()[node.dataset.field] = node.value;
      draft.edited(`field:${node.dataset.field}`);
    });
  }

  // --- submit / skip ---
  function clearProblems() {
    for (const node of document.querySelectorAll(".ws-invalid")) { node.classList.remove("ws-invalid"); node.removeAttribute("aria-invalid"); }
    $("ws-submit-errors").hidden = true;
  }
  function showProblems(errors) {
    clearProblems();
    const box = $("ws-submit-errors");
    box.replaceChildren(el("strong", {}, gettext("Cannot submit yet:")));
    const list = el("ul");
    let first = null;
    for (const [field, message] of Object.entries(errors)) {
      list.appendChild(el("li", {}, message));
      const node = document.querySelector(PROBLEM_TARGETS[field] || `[data-field='${field}']`);
      if (!node || node.closest("[hidden]")) continue;
      node.classList.add("ws-invalid");
      node.setAttribute("aria-invalid", "true");
      first = first || node;
    }
    box.appendChild(list);
    box.hidden = false;
    if (first) {
      first.scrollIntoView({ block: "center" });
      const control = first.matches("input, select, textarea") ? first : first.querySelector("input, select, textarea, button");
      if (control) control.focus({ preventScroll: true });
    }
  }
  const unmark = (event) => { const bad = event.target.closest(".ws-invalid"); if (bad) { bad.classList.remove("ws-invalid"); bad.removeAttribute("aria-invalid"); } };
  document.addEventListener("input", unmark, true);
  document.addEventListener("change", unmark, true);

  async function submit() {
    if (!page.editable()) return;  // read only, or already submitted
    if (!(await draft.saveAll())) { draft.banner("error", gettext("Save the draft first (see the status above), then submit.")); return; }
    const res = await api("POST", `/api/annotations/${ANN_ID}/submit/`, { version: store.get("version") });
    if (res.status === 200) {
      draft.leaseEnded();
      clearProblems();
      draft.forgetLocalCopy();
      // The header says once what happened (the status, as the server names it) and offers what comes next; what
      // the annotator may still do is the server's answer, not a rule of the page.
      const answer = res.data;
      // A qualification answer goes on to its feedback: the reference beside it, part by part (the server says
      // which answers have one; a gold answer of the real queue has none and looks like any other).
      if (answer.feedback_url && root.dataset.feedbackUrl) { window.location.href = root.dataset.feedbackUrl; return; }
      $("ws-status-pill").textContent = answer.status_display;
      $("ws-status-pill").className = "pill " + answer.status;
      draft.banner("", "");
      draft.setSaveState("saved", "");
      if (!answer.editable) {
        root.dataset.editable = "0";
        for (const id of ["ws-save", "ws-skip", "ws-submit", "ws-undo", "ws-redo"]) { const node = $(id); if (node) node.hidden = true; }
        renderAll();  // every control drawn again as read only
        const next = $("ws-next");
        next.hidden = false;
        next.querySelector("button").focus();
      }
      const returned = $("ws-returned");
      if (returned) returned.hidden = true;
      return;
    }
    if (res.status === 409 && res.data.current) return draft.conflict(res.data);
    if (isAuthProblem(res)) return draft.sessionExpired();
    showProblems(submitProblems(res.data));
  }
  const submitBtn = $("ws-submit");
  if (submitBtn) submitBtn.addEventListener("click", submit);
  // Skipping gives the trace back for good (it is not offered to this annotator again): asked first, in the page.
  async function skip() {
    await draft.save();
    const res = await api("POST", `/api/annotations/${ANN_ID}/skip/`);
    if (res.status === 200) {
      draft.leaseEnded();
      window.location.href = `${root.dataset.queueUrl}?skipped=${encodeURIComponent(ANN_ID)}`;
      return;
    }
    if (isAuthProblem(res)) return draft.sessionExpired();
    draft.banner("error", interpolate(gettext("Not skipped: %(problem)s"), { problem: res.data.detail || gettext("the server could not be reached; try again.") }));
  }
  const skipBtn = $("ws-skip");
  if (skipBtn) skipBtn.addEventListener("click", () => {
    draft.banner("conflict", gettext("Skip this trace? It goes back to the pool and is not offered to you again; your draft is kept."), [
      [gettext("Skip it"), skip], [gettext("Keep working"), () => draft.banner("", "")],
    ]);
    const confirmBtn = $("ws-banner").querySelector("button");
    if (confirmBtn) confirmBtn.focus();
  });
  return { renderAll, renderPanels, renderStarts, setVerdict: setVerdictUndoably, submit };
}
