// @ts-check
/* On-policy alternatives (annotation/alternatives/api.py). The server samples them, parses them and
   says whether a model is configured (else what to set); the page lists every reply, draws the parsed ones as
   numbered markers on their step with the overlay's drawAction (the served actions are in the project's convention,
   like the recorded ones) and sends marks. A 403 (a blind project for annotators) hides it. */
import { $, el } from "../dom.js";
import { api, describeErrors, isAuthProblem } from "../api.js";
import { gettext, interpolate, jobStatusWord } from "../i18n.js";
import { copy } from "../values.js";

const JOB_ENDED = ["succeeded", "failed", "cancelled"];
const done = (job) => !job || JOB_ENDED.includes(job.status);

/* The markers of the parsed alternatives ``data`` (the server's answer) sampled at step ``index``, ``hot``: the
   number of the one pointed at: [{action, extra}] (extra: what overlay.js's drawAction takes: the numbers as its
   label, its row of badges, its attributes). Replies that act the same (a checkpoint sampling at a low temperature
   repeats itself) share one marker numbered with all of them: drawn one over the other, the last would hide the
   rest. Pure (tests/js/alternatives.test.mjs). */
/**
 * @param {any} data the server's answer (GET /api/annotations/<id>/alternatives/), null before it
 * @param {number} index @param {number | null} hot
 * @returns {{ action: import("../action_editor.js").Action, extra: { label: string, row: number,
 *   attrs: Record<string, string> } }[]}
 */
export function alternativeMarks(data, index, hot) {
  if (!data || !data.job || data.job.step !== index) return [];
  const groups = new Map();
  for (const row of data.alternatives || []) {
    if (!row.parsed) continue;  // listed as text, never drawn
    for (const action of row.actions || []) {
      const key = JSON.stringify(action);
      if (!groups.has(key)) groups.set(key, { action, rows: [] });
      groups.get(key).rows.push(row);
    }
  }
  return [...groups.values()].map(({ action, rows }) => {
    const numbers = rows.map((row) => row.number);
    const marks = new Set(rows.map((row) => row.mark || ""));
    const mark = marks.size === 1 ? [...marks][0] : "";  // a mark the group's replies share
    return { action, extra: { label: numbers.join(","), row: 2 + numbers[0],
      attrs: { "data-alt": numbers.join(" "), class: `mark alt${mark ? " " + mark : ""}${numbers.includes(hot) ? " hot" : ""}` } } };
  });
}

/**
 * How a module draws an action on a screen (stage.js's overlay): ``draw(action, tone, extra)``, ``extra`` what
 * overlay.js's drawAction takes (label, row, attrs).
 * @typedef {(action: import("../action_editor.js").Action, tone: string, extra?: Record<string, any>) => void} DrawAction
 */
/**
 * The alternatives: ``load()``, ``drawAlternatives(index, draw)`` (the parsed ones sampled at step ``index``),
 * ``hotAlternative()`` (the number pointed at, or null), ``markAlternative(number, verdict)`` (the server's answer,
 * null when not marked) and ``takeAlternative(number)`` (as the correction).
 * @typedef {{ load: () => Promise<void>, drawAlternatives: (index: number, draw: DrawAction) => void,
 *   hotAlternative: () => number | null, markAlternative: (number: number, verdict: string) => Promise<any>,
 *   takeAlternative: (number: number) => Promise<void> }} Alternatives
 */

/* The alternatives. ``page``: {annotationId, editable()}; ``store``: the workspace's state (form); ``draft``:
   autosave.js's banner(kind, message) and sessionExpired(); ``editor``: editor.js's startSlot(slot, action);
   ``undoable(label, change)``: undo.js's; ``hooks``: redrawOverlays(). Returns load(), drawAlternatives(index,
   draw), hotAlternative(), markAlternative(number, verdict), takeAlternative(number). */
/**
 * @param {{ page: Pick<import("./state.js").WorkspacePage, "annotationId" | "editable">,
 *   store: import("./state.js").Store, draft: Pick<import("./autosave.js").Draft, "banner" | "sessionExpired">,
 *   editor: Pick<import("./editor.js").WorkspaceEditor, "startSlot">, undoable: import("./undo.js").Undoable,
 *   hooks: { redrawOverlays: () => void } }} parts
 * @returns {Alternatives}
 */
export function createAlternatives({ page, store, draft, editor, undoable, hooks }) {
  const ANN_ID = page.annotationId;
  const form = () => store.get("form");
  const URL = `/api/annotations/${ANN_ID}/alternatives/`;
  const alts = { data: null, hidden: false, hot: null, timer: null };

  async function load() {
    const res = await api("GET", URL);
    if (res.status === 403 && !isAuthProblem(res)) { alts.hidden = true; render(); return; }
    if (res.status === 200) show(res.data);
  }
  function show(data) {
    alts.data = Object.assign({}, alts.data || {}, data);
    render();
    hooks.redrawOverlays();
    clearTimeout(alts.timer);
    if (!done(alts.data.job)) alts.timer = setTimeout(load, 1500);  // a job on the gpu queue: poll
  }
  /* The parsed alternatives sampled at step ``index``, each drawn with ``draw(action, tone, extra)``. */
  function drawAlternatives(index, draw) {
    if (alts.hidden) return;
    for (const mark of alternativeMarks(alts.data, index, alts.hot)) draw(mark.action, "alt", mark.extra);
  }
  async function ask() {
    const res = await api("POST", URL, { step: form().tau });
    if (res.status === 202) { show(res.data); return; }
    if (isAuthProblem(res)) return draft.sessionExpired();
    draft.banner("error", interpolate(gettext("No alternatives: %(problem)s"), { problem: describeErrors(res.data) || gettext("the server could not be reached") }));
  }
  const rowOf = (number) => (alts.data ? alts.data.alternatives.find((r) => r.number === number) : null);
  async function mark(number, verdict) {
    const row = rowOf(number);
    if (!row || !row.parsed || !page.editable()) return null;
    const res = await api("POST", `${URL}${row.id}/mark/`, { verdict });
    if (res.status !== 200) {
      if (isAuthProblem(res)) draft.sessionExpired();
      else draft.banner("error", interpolate(gettext("Alternative %(number)s not marked: %(problem)s"), { number, problem: describeErrors(res.data) || gettext("the server could not be reached") }));
      return null;
    }
    show(res.data);
    return res.data;
  }
  // Taking one: the server marks it (one per annotation) and answers the starting point's thought; the editor gets
  // the served action, and the draft saves it as any edit.
  async function takeAlternative(number) {
    const row = rowOf(number), job = alts.data && alts.data.job;
    if (!row || !row.parsed || !page.editable() || !job) return;
    if (form().verdict !== "error" || job.step !== form().tau) {
      draft.banner("error", interpolate(gettext("The alternatives are for step %(step)s; τ is %(tau)s: ask again at τ."), { step: job.step, tau: form().tau || gettext("not set") }));
      return;
    }
    const answer = await mark(number, "taken");
    if (!answer) return;
    const start = answer.starting_point || {};
    undoable(interpolate(gettext("Took alternative %(number)s as the correction"), { number }), () => {
      if (start.thought) form().corrected_thought = start.thought;
      editor.startSlot("corrected", copy(row.actions[0]));
    });
  }
  function setHot(number) {
    if (alts.hot === number) return;
    alts.hot = number;
    for (const li of document.querySelectorAll(/** @type {"li"} */ ("#ws-alts-list li"))) li.classList.toggle("hot", Number(li.dataset.alt) === number);
    hooks.redrawOverlays();
  }
  function render() {
    const box = $("ws-alts");
    if (alts.hidden || !alts.data) { box.hidden = true; return; }
    const { job, model = {}, alternatives = [] } = alts.data;
    // No model and nothing sampled before: nothing to take, mark or ask for. The block would only tell the
    // annotator which setting an operator lacks, in every correction; it shows again once there is something.
    if (!model.configured && !job && !alternatives.length) { box.hidden = true; return; }
    box.hidden = false;
    const askBox = $("ws-alts-ask");
    askBox.replaceChildren();
    if (!model.configured) askBox.appendChild(el("p", { class: "notice small", id: "ws-alts-problem" }, model.problem));
    else if (page.editable()) {
      const k = job && job.settings && job.settings.k;
      const b = el("button", { type: "button", id: "ws-alts-ask-btn", disabled: !done(job) },
        job ? (k ? interpolate(gettext("Ask the model again (%(k)s)"), { k }) : gettext("Ask the model again")) : gettext("Ask the model"));
      b.title = gettext("Sample the configured checkpoint's own replies at τ (a job on the gpu queue)");
      b.addEventListener("click", ask);
      askBox.appendChild(b);
    }
    const status = $("ws-alts-status");
    status.textContent = !job ? "" : !done(job) ? interpolate(gettext("Sampling at step %(step)s… (%(status)s)"), { step: job.step, status: jobStatusWord(job.status) })
      : job.status !== "succeeded" ? `${jobStatusWord(job.status)}: ${job.message}`
        : `${job.message || interpolate(gettext("%(count)s alternatives"), { count: alternatives.length })} · ${interpolate(gettext("step %(step)s"), { step: job.step })} · ${job.model_name}${job.reused ? " " + gettext("(stored)") : ""}`;
    const list = $("ws-alts-list");
    list.replaceChildren();
    for (const row of alternatives) {
      const li = el("li", { class: `ws-alt${row.parsed ? "" : " unparsed"}${row.mark ? " " + row.mark : ""}${alts.hot === row.number ? " hot" : ""}`, "data-alt": row.number, tabIndex: 0 });
      li.appendChild(el("span", { class: "ws-alt-num" }, row.number));
      li.appendChild(el("code", { class: "ws-alt-text" }, row.parsed ? row.reply : row.text));
      const side = el("span", { class: "ws-alt-side" });
      side.appendChild(el("span", { class: "ws-alt-mark", "data-alt-mark": row.number },
        !row.parsed ? gettext("not an action: text only") : row.mark === "taken" ? gettext("taken") : row.mark === "wrong" ? gettext("wrong") : ""));
      if (row.parsed && page.editable()) {
        const take = el("button", { type: "button", class: "ws-ghost small", "data-alt-take": row.number }, gettext("Take") + " ");
        take.appendChild(el("kbd", {}, `Alt+${row.number}`));
        take.title = interpolate(gettext("Start the correction from alternative %(number)s (Alt+%(number)s)"), { number: row.number });
        take.addEventListener("click", () => takeAlternative(row.number));
        const wrong = el("button", { type: "button", class: "ws-ghost small", "data-alt-wrong": row.number }, row.mark === "wrong" ? gettext("Not wrong") : gettext("Wrong"));
        wrong.title = gettext("Mark it wrong: it becomes a rejected side of a DPO pair (w on the hovered or focused one)");
        wrong.addEventListener("click", () => mark(row.number, row.mark === "wrong" ? "" : "wrong"));
        side.append(take, wrong);
      }
      li.appendChild(side);
      li.addEventListener("mouseenter", () => setHot(row.number));
      li.addEventListener("focusin", () => setHot(row.number));
      list.appendChild(li);
    }
  }
  return { load, drawAlternatives, hotAlternative: () => alts.hot, markAlternative: mark, takeAlternative };
}
