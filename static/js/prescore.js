// @ts-check
// Pre-scoring suggestions in the workspace: a suspicion strip along the filmstrip, the suggested first
// error, rule flags as badges and the model's own action as a ghost in the screenshot overlay.
// The workspace dispatches `workspace:step` {traceId, index, stepCount, svg, shot} on each step change; the model's
// points come in the project's convention, placed with the step's screenshot (static/js/geometry.js, the one form).
// All server text is set with textContent. A blind project's API answer is {hidden: true}: nothing is shown.
// An ES module, loaded before the workspace's (document order), so it hears the first step.
import { toPx } from "./geometry.js";
import { gettext, interpolate } from "./i18n.js";

/* Per step: the highest suspicion of any scorer, the flags (the rules scorer's) and the model's row (any other
   scorer's). */
export function byStep(data) {
  const steps = new Map();
  for (const [scorer, run] of Object.entries(data.scorers || {})) {
    for (const row of run.steps) {
      const entry = steps.get(row.index) || { suspicion: 0, flags: [], model: null };
      entry.suspicion = Math.max(entry.suspicion, row.suspicion);
      if (scorer === "rules") entry.flags = row.flags;
      else entry.model = row;
      steps.set(row.index, entry);
    }
  }
  return steps;
}

/* The suggested first error: the model's when it ran, else the rules'; null when neither did. */
export function firstError(data) {
  const runs = data.scorers || {};
  const run = runs.qwen2vl || runs.rules;
  return run ? run.suggested_tau : null;
}

/* The strip's cells, one per step (the trace's steps, or as many as were scored): what each shows and says. */
export function stripCells(data, steps, current, stepCount) {
  const tau = firstError(data);
  const count = Math.max(stepCount || 0, ...steps.keys());
  const cells = [];
  for (let i = 1; i <= count; i++) {
    const entry = steps.get(i);
    const label = entry ? interpolate(gettext("step %(step)s: suspicion %(suspicion)s"), { step: i, suspicion: entry.suspicion.toFixed(2) })
      : interpolate(gettext("step %(step)s: not scored"), { step: i });
    cells.push({
      index: i,
      className: "cell" + (entry ? "" : " unscored") + (i === current ? " current" : "") + (i === tau ? " first-error" : ""),
      opacity: entry ? 0.12 + 0.88 * entry.suspicion : null,
      title: label + (i === tau ? " " + gettext("(suggested first error)") : ""),
    });
  }
  return cells;
}

/* The line under the badges: the model's own action, whether it agrees with the recorded one, and the mean
   log-likelihood of the recorded reply when it could be scored; "" without a model row. */
export function modelLine(model) {
  if (!model) return "";
  const agree = model.agrees === null ? "" : " " + (model.agrees ? gettext("(agrees)") : gettext("(differs)"));
  const loglik =
    typeof model.loglik_mean === "number"
      ? " · " + interpolate(gettext("mean log-likelihood of the recorded reply %(value)s"), { value: model.loglik_mean.toFixed(3) })
      : "";
  return interpolate(gettext("Model's own action: %(action)s"), { action: model.model_action || "—" }) + agree + loglik;
}

/* The model's own reply per step that has one ({index: text}), offered to the workspace as a correction's start. */
export function modelStarts(steps) {
  const starts = {};
  for (const [index, entry] of steps) if (entry.model && entry.model.model_start) starts[index] = entry.model.model_start;
  return starts;
}

/* The ghost's points in the screenshot's pixels: the model's points (project convention) placed on ``shot``. */
export function ghostPoints(shot, entry) {
  if (!shot) return [];
  return ((entry && entry.model && entry.model.model_points) || []).map((p) => toPx(shot, p));
}

if (typeof document !== "undefined") start();

function start() {
  const box = document.getElementById("prescore");
  const strip = document.getElementById("suspicion-strip");
  if (!box || !strip) return;
  const SVGNS = "http://www.w3.org/2000/svg";
  const flagsBox = document.getElementById("prescore-flags");
  const modelBox = document.getElementById("prescore-model");
  const source = document.getElementById("prescore-source");
  let loaded = null; // {traceId, data}
  let pending = null;

  function load(traceId) {
    if (loaded && loaded.traceId === traceId) return Promise.resolve(loaded.data);
    if (pending && pending.traceId === traceId) return pending.promise;
    const promise = fetch(`/api/traces/${encodeURIComponent(traceId)}/suggestions/`, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null)
      .then((data) => { loaded = { traceId, data }; pending = null; return data; });
    pending = { traceId, promise };
    return promise;
  }

  function drawStrip(data, steps, current, stepCount) {
    const cells = stripCells(data, steps, current, stepCount).map((c) => {
      const cell = document.createElement("button");
      cell.type = "button";
      cell.className = c.className;
      cell.setAttribute("role", "listitem");
      if (c.opacity !== null) cell.style.opacity = String(c.opacity);
      cell.title = c.title;
      cell.setAttribute("aria-label", c.title);
      cell.addEventListener("click", () =>
        document.dispatchEvent(new CustomEvent("workspace:goto", { detail: { index: c.index } })));
      return cell;
    });
    strip.replaceChildren(...cells);
  }

  function badge(text, extra) {
    const span = document.createElement("span");
    span.className = "prescore-flag" + (extra ? " " + extra : "");
    span.textContent = text;
    return span;
  }

  function drawStep(data, entry, index) {
    const badges = [];
    if (index === firstError(data)) badges.push(badge(gettext("suggested first error"), "first-error"));
    for (const flag of (entry && entry.flags) || []) {
      const b = badge(flag.label);  // the server's words for the flag (prescoring.rules.FLAG_LABELS)
      b.title = flag.message;
      badges.push(b);
    }
    flagsBox.replaceChildren(...badges);
    modelBox.textContent = modelLine(entry && entry.model);
  }

  function drawGhost(svg, shot, entry) {
    if (!svg) return;
    svg.querySelectorAll(".prescore-ghost").forEach((g) => g.remove());
    const points = ghostPoints(shot, entry);
    if (!points.length) return;
    const view = svg.viewBox && svg.viewBox.baseVal;
    const scale = view && view.width ? view.width / 1000 : 1;
    const g = document.createElementNS(SVGNS, "g");
    g.setAttribute("class", "prescore-ghost");
    const make = (tag, attrs) => {
      const el = document.createElementNS(SVGNS, tag);
      for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
      g.appendChild(el);
      return el;
    };
    const [x, y] = points[0];
    make("circle", { cx: x, cy: y, r: 16 * scale, "stroke-width": 3 * scale });
    if (points[1]) make("line", { x1: x, y1: y, x2: points[1][0], y2: points[1][1], "stroke-width": 3 * scale });
    make("text", { x: x + 20 * scale, y: y + 6 * scale, "font-size": 16 * scale }).textContent = gettext("model");
    svg.appendChild(g);
  }

  // The model's own reply per step, offered by the workspace as a starting point for a correction (once per trace).
  let announced = null;
  function announceStarts(traceId, steps) {
    if (announced === traceId) return;
    announced = traceId;
    const starts = modelStarts(steps);
    document.dispatchEvent(new CustomEvent("prescore:starts", { detail: { traceId, starts } }));
  }

  document.addEventListener("workspace:step", async (/** @type {CustomEvent} */ event) => {
    const detail = event.detail || {};
    if (detail.traceId == null) return;
    const data = await load(String(detail.traceId));
    if (!data || data.hidden || !Object.keys(data.scorers || {}).length) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const steps = byStep(data);
    announceStarts(String(detail.traceId), steps);
    const runs = Object.entries(data.scorers).map(([scorer, run]) => (run.model_name ? `${scorer}: ${run.model_name}` : scorer));
    source.textContent = runs.join(" · ");
    drawStrip(data, steps, detail.index, detail.stepCount);
    const entry = steps.get(detail.index);
    drawStep(data, entry, detail.index);
    drawGhost(detail.svg, detail.shot, entry);
  });
}
