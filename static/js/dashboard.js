// The quality dashboard: fetches the project's figures (annotation.dashboards computes them), draws each chart with
// Chart.js (served from static/vendor), offers each chart's numbers as CSV, and refetches when a live event says
// work moved. An ES module: the figures' words and the CSV tables are pure functions of the server's answer.
import { csvWire } from "./csv.js";
import { num, pct } from "./figures.js";

/* The agreement measures the chart draws, as [name, value] rows. */
export function agreementRows(a) {
  return [["first error exact", a.first_error_exact], ["first error ±1", a.first_error_within_one],
    ["category alpha", a.category_alpha], ["action type", a.action_type_agreement]];
}

/* The figures above the charts, by their data-figure name, in words. */
export function dashboardFigures(d) {
  const a = d.agreement;
  return {
    median_time: d.median_time.overall_s === null ? "–" : num(d.median_time.overall_s, 0) + " s",
    acceptance_rate: pct(d.review.acceptance_rate) + " (" + d.review.accepted + ")",
    rejection_rate: pct(d.review.rejection_rate) + " (" + d.review.rejected + ")",
    first_error: pct(a.first_error_exact) + " / " + pct(a.first_error_within_one),
    alpha: num(a.category_alpha, 3),
    action_type: pct(a.action_type_agreement) + " of " + d.agreement_words.action_type_pairs,
    click: num(a.click_distance_median, 3) + " (" + d.agreement_words.click_pairs + ")",
    box_iou: num(a.box_iou_median, 3) + " (" + d.agreement_words.box_pairs + ")",
    pairs: a.pairs + " / " + a.open_disagreements,
    suggestion: d.suggestion_match ? pct(d.suggestion_match.rate) + " of " + d.suggestion_match.compared : "no pre-scoring yet",
  };
}

/* Each chart's numbers as a CSV table, by chart name. */
export function dashboardTables(d) {
  const a = d.agreement;
  const per = d.review.per_annotator;
  return {
    done_per_day: { header: ["day", "annotator", "done"], rows: d.done_per_day.map((r) => [r.day, r.annotator, r.done]) },
    review: { header: ["annotator", "accepted", "rejected", "acceptance_rate"],
      rows: per.map((r) => [r.annotator, r.accepted, r.rejected, r.acceptance_rate]) },
    median_time: { header: ["annotator", "median_seconds"],
      rows: [["(all)", d.median_time.overall_s], ...Object.entries(d.median_time.per_annotator_s)] },
    error_categories: { header: ["category", "count"], rows: d.error_categories.map((r) => [r.category, r.count]) },
    first_error_position: { header: ["tau_over_n", "count"], rows: d.first_error_position.map((r) => [r.bucket, r.count]) },
    agreement: { header: ["measure", "value"], rows: [...agreementRows(a), ["click distance median", a.click_distance_median],
      ["click distance mean", a.click_distance_mean], ["element box IoU median", a.box_iou_median],
      ["element box IoU mean", a.box_iou_mean], ["element box pairs", a.box_pairs], ["pairs", a.pairs], ["open disagreements", a.open_disagreements]] },
  };
}

if (typeof document !== "undefined") start();

function start() {
  const root = document.getElementById("dashboard");
  if (!root || !window.Chart) return;
  const charts = {};
  const tables = {};  // chart name -> {header: [...], rows: [[...]]} for the CSV download
  const COUNTS = { precision: 0 };  // an axis of counts has whole-number ticks (no "0.5 traces")
  const palette = ["#3b5bdb", "#2b8a3e", "#e67700", "#c92a2a", "#7048e8", "#0b7285", "#5c940d", "#a61e4d"];

  function setFigure(name, text) {
    const el = root.querySelector('[data-figure="' + name + '"]');
    if (el) el.textContent = text;
  }

  // A chart with nothing to show says why in its own words (the page's data-chart-empty line) instead of drawing
  // bare axes; `empty` is read from the server's figures by the caller.
  function draw(name, type, labels, datasets, options, empty) {
    const section = root.querySelector('[data-chart="' + name + '"]');
    if (!section) return;
    if (charts[name]) charts[name].destroy();
    delete charts[name];
    const note = section.querySelector("[data-chart-empty]");
    if (note) note.hidden = !empty;
    section.querySelector("canvas").hidden = Boolean(empty && note);
    section.dataset.empty = empty ? "1" : "";
    if (empty && note) { section.dataset.drawn = "1"; return; }
    charts[name] = new window.Chart(section.querySelector("canvas"), {
      type: type,
      data: { labels: labels, datasets: datasets },
      options: Object.assign({ animation: false, responsive: true, plugins: { legend: { display: datasets.length > 1 } } }, options || {}),
    });
    section.dataset.drawn = "1";
  }

  function render(d) {
    for (const [status, n] of Object.entries(d.counters)) {
      const el = root.querySelector('[data-counter="' + status + '"]');
      if (el) el.textContent = String(n);
    }
    document.getElementById("range-label").textContent = d.range.from + " – " + d.range.to;
    const a = d.agreement;
    for (const [name, text] of Object.entries(dashboardFigures(d))) setFigure(name, text);
    Object.assign(tables, dashboardTables(d));

    // done per annotator per day: one dataset per annotator
    const days = [...new Set(d.done_per_day.map((r) => r.day))].sort();
    const people = [...new Set(d.done_per_day.map((r) => r.annotator))].sort();
    const count = new Map(d.done_per_day.map((r) => [r.day + "|" + r.annotator, r.done]));
    draw("done_per_day", "bar", days, people.map((p, i) => ({
      label: p, backgroundColor: palette[i % palette.length], data: days.map((day) => count.get(day + "|" + p) || 0),
    })), { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: COUNTS } } }, !d.done_per_day.length);

    const per = d.review.per_annotator;
    draw("review", "bar", per.map((r) => r.annotator), [
      { label: "accepted", backgroundColor: palette[1], data: per.map((r) => r.accepted) },
      { label: "rejected", backgroundColor: palette[3], data: per.map((r) => r.rejected) },
    ], { scales: { y: { beginAtZero: true, ticks: COUNTS } } }, !per.length);

    const med = Object.entries(d.median_time.per_annotator_s);
    draw("median_time", "bar", med.map((m) => m[0]), [{ label: "median s", backgroundColor: palette[0], data: med.map((m) => m[1]) }],
      { scales: { y: { beginAtZero: true } } }, !med.length);

    draw("error_categories", "bar", d.error_categories.map((r) => r.category),
      [{ label: "annotations", backgroundColor: palette[2], data: d.error_categories.map((r) => r.count) }],
      { indexAxis: "y", scales: { x: { beginAtZero: true, ticks: COUNTS } } }, !d.error_categories.some((r) => r.count));

    draw("first_error_position", "bar", d.first_error_position.map((r) => r.bucket),
      [{ label: "annotations", backgroundColor: palette[4], data: d.first_error_position.map((r) => r.count) }],
      { scales: { y: { beginAtZero: true, ticks: COUNTS } } }, !d.first_error_position.some((r) => r.count));

    const measures = agreementRows(a);
    draw("agreement", "bar", measures.map((r) => r[0]),
      [{ label: "agreement", backgroundColor: palette[5], data: measures.map((r) => r[1]) }],
      { scales: { y: { min: Math.min(0, ...measures.map((r) => r[1] || 0)), max: 1 } } }, !a.pairs);
    root.dataset.loaded = String(Date.now());
  }

  csvWire(root, tables);

  async function load() {
    const params = new URLSearchParams();
    if (root.dataset.from) params.set("from", root.dataset.from);
    if (root.dataset.to) params.set("to", root.dataset.to);
    const error = document.getElementById("dashboard-error");
    try {
      const response = await fetch(root.dataset.url + "?" + params, { credentials: "same-origin" });
      const body = await response.json();
      if (!response.ok) {
        error.textContent = body.detail || `The dashboard could not be loaded (the server answered ${response.status}).`;
        error.hidden = false;
        return;
      }
      error.hidden = true;
      render(body);
    } catch (e) {
      error.textContent = "Could not load the dashboard; retrying on the next update.";
      error.hidden = false;
    }
  }

  let pending = null;
  document.addEventListener("studio:live", (e) => {
    if (e.detail.type !== "annotation") return;
    clearTimeout(pending);
    pending = setTimeout(load, 300);  // a burst of reviews costs one refetch
  });
  load();
}
