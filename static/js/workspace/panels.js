/* The side of the workspace: the step's text, the verdict and the answer's fields, the starting points of a
   correction, and submit / skip with the server's problems shown where each is fixed. */
import { $, el } from "../dom.js";
import { api, isAuthProblem } from "../api.js";
import { sub } from "./stage.js";

// Where each submit problem is typed or chosen: highlighted until it is edited.
const PROBLEM_TARGETS = {
  verdict: "#ws-verdict-panel .ws-verdict", tau: "#ws-verdict-panel .ws-verdict",
  corrected_action: ".ws-action-editor[data-slot='corrected']", reflection_action: ".ws-action-editor[data-slot='reflection']",
};

export function install(ws) {
  const { state, STEPS, N, ANN_ID, root } = ws;
  const copy = (value) => JSON.parse(JSON.stringify(value));

  ws.renderStep = () => { ws.renderStrip(); ws.renderStage(); renderStepInfo(); ws.renderPanels(); ws.announceStep(); };
  ws.renderAll = ws.renderStep;

  function renderStepInfo() {
    const i = state.current;
    const step = STEPS[i - 1];
    // The stage and the step's panel name the screen in the same words (they read "Step 1 of 3" and "Step 1 / 3").
    const title = i > N ? `Final screen (after step ${N})` : `Step ${i} of ${N}`;
    $("ws-step-num").textContent = title;
    $("ws-step-label").textContent = title;
    // The final screen has no recorded thought or action: "as recorded" would name nothing.
    $("ws-step-recorded").hidden = i > N;
    const tags = $("ws-step-tags");
    tags.replaceChildren();
    const tau = state.form.verdict === "error" ? state.form.tau : null;
    if (tau && i === tau) tags.appendChild(el("span", { class: "ws-tag tau" }, "τ · first error"));
    // Written as the screen's caption writes it (o₄), not in the underscore notation no other label uses.
    if (tau && i === ws.reflectionScreen(tau)) tags.appendChild(el("span", { class: "ws-tag refl" }, `o${sub(i)} · post-reflection`));
    if (tau && i > tau + 1) tags.appendChild(el("span", { class: "ws-tag after" }, "after τ"));
    $("ws-thought").textContent = step ? (step.thought || "(no thought recorded)") : "—";
    ws.fitThought();
    $("ws-action").textContent = step ? (step.action_text || "(no action)") : "—";
    const gap = step ? step.missing_before : 0;
    $("ws-gap").hidden = !gap;
    $("ws-gap").textContent = gap ? `The source dropped ${step.missing_before_words} right before this one: ` +
      "the screen before it is not the previous step's result." : "";
    $("ws-parse-error").hidden = !(step && step.parse_error);
    $("ws-parse-error").textContent = step && step.parse_error ? "Does not parse: " + step.parse_error : "";
    $("ws-off-screen").hidden = !(step && step.off_screen);
    $("ws-off-screen").textContent = step && step.off_screen ? "Off the screen: " + step.off_screen : "";
    // While correcting each of these notes is cut to a line (workspace.css): the whole text on hover.
    for (const id of ["ws-gap", "ws-parse-error", "ws-off-screen"]) $(id).title = $(id).textContent;
    const human = step && step.human_edit;
    $("ws-human").hidden = !human;
    $("ws-human-text").textContent = human ? human.raw : "";
  }

  ws.renderPanels = () => {
    const f = state.form;
    for (const b of document.querySelectorAll("[data-verdict]")) {
      b.classList.toggle("active", b.dataset.verdict === f.verdict);
      b.disabled = !ws.editable();
    }
    const vt = $("ws-verdict-text");
    vt.textContent = f.verdict === "error" ? `First error at step ${f.tau} (τ).` : f.verdict === "no_error" ? "The trace has no error."
      : f.verdict === "unusable" ? "Unusable." : "Not decided yet.";
    $("ws-unusable-wrap").hidden = f.verdict !== "unusable";
    $("ws-error-fields").hidden = f.verdict !== "error";
    for (const node of document.querySelectorAll("[data-field]")) {
      const v = f[node.dataset.field];
      if (document.activeElement !== node && node.value !== (v || "")) node.value = v || "";
      node.disabled = !ws.editable();
    }
    const i = state.current;
    const tau = f.verdict === "error" ? f.tau : null;
    // τ's step says where its post-reflection goes: a τ far from the steps here (a version restored, an undo) waits
    // for its window, then everything is drawn again.
    if (tau && !ws.hasStep(tau)) ws.loadAround(tau).then((loaded) => { if (loaded) ws.renderAll(); });
    const after = ws.reflectionScreen(tau);  // o_{τ+1}, or null when it was not kept (the server's rule)
    const missing = !!tau && after === null;
    const showCorrection = tau && i === tau;
    // Without o_{τ+1} the reason there is no post-reflection is given beside the correction.
    const showReflection = tau && (i === after || (i === tau && missing));
    $("ws-correction").hidden = !showCorrection;
    $("ws-reflection").hidden = !showReflection;
    for (const node of document.querySelectorAll(".ws-tau")) node.textContent = tau || "";
    $("ws-reflection-missing").hidden = !missing;
    // Where the server records the reason itself (o_{τ+1} not kept), the annotator is not asked for one.
    $("ws-no-reflection-wrap").hidden = !!ws.serverNoReflectionReason(tau);
    $("ws-reflection-body").hidden = missing;
    if (missing) {
      $("ws-reflection-missing").textContent = tau === N
        ? `τ is the last step and the runner kept no screen after it: there is no o${sub(tau + 1)}, so no post-reflection can be given. The annotation will record why.`
        : `Step ${tau + 1} has no screenshot: no post-reflection can be given. The annotation will record why.`;
    }
    const goto = $("ws-goto");
    goto.hidden = !tau || showCorrection || showReflection;
    // Without o_{τ+1} there is no post-reflection to go on to: the hint does not send the annotator looking for one.
    const why = tau === N ? "no screen was kept after the last step" : `step ${tau + 1} has no screenshot`;
    $("ws-goto-text").textContent = !tau ? "" : missing ? `τ = ${tau}. Press t to go to the correction (no post-reflection: ${why}).`
      : `τ = ${tau}. Press t to go to the correction, then → for the post-reflection.`;
    if (showCorrection) ws.renderEditor("corrected");
    if (showReflection && !missing) ws.renderEditor("reflection");
    ws.renderStarts();
  };

  ws.renderStarts = () => {
    const box = document.querySelector('[data-starts="corrected"]');
    box.replaceChildren();
    const tau = state.form.tau;
    const step = tau ? STEPS[tau - 1] : null;
    if (!step || !ws.editable()) return;
    const start = (cls, text, title, use) => {
      const b = el("button", { type: "button", class: cls }, text);
      if (title) b.title = title;
      // Starting over replaces what was written: one destructive change, with the undo banner (undo.js).
      b.addEventListener("click", () => ws.undoable(`Started the correction from ${text.replace(/^Start from /, "")}`, () => { use(); ws.changed("corrected"); }));
      box.appendChild(b);
    };
    if (step.human_edit && step.human_edit.action) {
      start("ws-start human", "Start from the human-edited reply", "The source kept a human correction of this step", () => {
        state.form.corrected_thought = step.human_edit.thought;
        state.form.editor_state.corrected = copy(step.human_edit.action);
      });
    }
    const suggestion = state.modelStarts[tau];
    if (suggestion) {
      start("ws-start model", "Start from the model's reply", "The pre-scoring model's own thought and action at this step", () => {
        state.form.corrected_thought = suggestion.thought || state.form.corrected_thought;
        state.form.editor_state.corrected = copy(suggestion.action);
      });
    }
    if ((step.actions || []).length) {
      start("ws-start", "Start from the recorded action", "", () => {
        state.form.editor_state.corrected = copy(step.actions[0]);
        if (!state.form.corrected_thought) state.form.corrected_thought = step.thought;
      });
    }
    const first = box.querySelector(".ws-start");
    if (first) { first.append(" "); first.appendChild(el("kbd", {}, "s")); }
  };
  document.addEventListener("prescore:starts", (event) => {
    if (String(event.detail.traceId) !== String(ws.DATA.trace.id)) return;
    state.modelStarts = event.detail.starts || {};
    ws.renderStarts();
  });

  // --- marking ---
  // Returns whether the verdict was set (read only, or τ asked for on the final screen: not).
  // The fields a verdict keeps empty are emptied in the page at once, from the server's own table
  // (``verdict_answers``: annotation.services.answer_for_verdict), so the undo banner can say what went.
  function setVerdict(verdict) {
    if (!ws.editable()) return false;
    const f = state.form;
    if (verdict === "error") {
      if (state.current > N) { ws.banner("error", "The final screen is not a step: mark τ on a step."); return false; }
      f.verdict = "error"; f.tau = state.current;
    } else {
      f.verdict = verdict;
    }
    for (const [name, empty] of Object.entries((ws.DATA.verdict_answers || {})[verdict] || {})) {
      if (name in f) f[name] = copy(empty);
    }
    ws.renderAll(); ws.edited();
    if (verdict === "error") { ws.checkAction("corrected"); if (ws.reflectionScreen(f.tau)) ws.checkAction("reflection"); }
    if (verdict === "unusable") $("f-unusable_reason").focus();
    return true;
  }
  const VERDICT_WORDS = { no_error: "Marked No error", unusable: "Marked Unusable" };
  /* Set the verdict (a key or a button): one destructive change, with the undo banner (undo.js). Returns whether it
     was set (read only, or τ asked for on the final screen: not). */
  ws.setVerdict = (verdict) => ws.undoable(() => VERDICT_WORDS[verdict] || `Marked the first error at step ${state.form.tau}`,
    () => setVerdict(verdict));
  for (const b of document.querySelectorAll("[data-verdict]")) b.addEventListener("click", () => ws.setVerdict(b.dataset.verdict));
  for (const node of document.querySelectorAll("[data-field]")) {
    node.addEventListener(node.tagName === "SELECT" ? "change" : "input", () => {
      state.form[node.dataset.field] = node.value;
      ws.edited(`field:${node.dataset.field}`);
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
    box.replaceChildren(el("strong", {}, "Cannot submit yet:"));
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

  ws.submit = async () => {
    if (!ws.editable()) return;  // read only, or already submitted
    for (let attempt = 0; attempt < 3 && (ws.dirty() || state.saving) && !state.blocked; attempt++) await ws.save();
    if (ws.dirty() || state.blocked) { ws.banner("error", "Save the draft first (see the status above), then submit."); return; }
    const res = await api("POST", `/api/annotations/${ANN_ID}/submit/`, { version: state.version });
    if (res.status === 200) {
      ws.leaseEnded();
      clearProblems();
      ws.forgetLocalCopy();
      // The header says once what happened (the status, as the server names it) and offers what comes next; what
      // the annotator may still do is the server's answer, not a rule of the page.
      const answer = res.data;
      $("ws-status-pill").textContent = answer.status_display;
      $("ws-status-pill").className = "pill " + answer.status;
      ws.banner("", "");
      ws.setSaveState("saved", "");
      if (!answer.editable) {
        root.dataset.editable = "0";
        for (const id of ["ws-save", "ws-skip", "ws-submit", "ws-undo", "ws-redo"]) { const node = $(id); if (node) node.hidden = true; }
        ws.renderAll();  // every control drawn again as read only
        const next = $("ws-next");
        next.hidden = false;
        next.querySelector("button").focus();
      }
      const returned = $("ws-returned");
      if (returned) returned.hidden = true;
      return;
    }
    if (res.status === 409 && res.data.current) return ws.conflict(res.data);
    if (isAuthProblem(res)) return ws.sessionExpired();
    showProblems(res.data.errors || { detail: res.data.detail || "the server could not be reached" });
  };
  const submitBtn = $("ws-submit");
  if (submitBtn) submitBtn.addEventListener("click", ws.submit);
  // Skipping gives the trace back for good (it is not offered to this annotator again): asked first, in the page.
  async function skip() {
    await ws.save();
    const res = await api("POST", `/api/annotations/${ANN_ID}/skip/`);
    if (res.status === 200) {
      ws.leaseEnded();
      window.location.href = `${root.dataset.queueUrl}?skipped=${encodeURIComponent(ANN_ID)}`;
      return;
    }
    if (isAuthProblem(res)) return ws.sessionExpired();
    ws.banner("error", "Not skipped: " + (res.data.detail || "the server could not be reached; try again."));
  }
  const skipBtn = $("ws-skip");
  if (skipBtn) skipBtn.addEventListener("click", () => {
    ws.banner("conflict", "Skip this trace? It goes back to the pool and is not offered to you again; your draft is kept.", [
      ["Skip it", skip], ["Keep working", () => ws.banner("", "")],
    ]);
    const confirmBtn = $("ws-banner").querySelector("button");
    if (confirmBtn) confirmBtn.focus();
  });
}
