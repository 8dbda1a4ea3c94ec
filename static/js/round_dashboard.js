// @ts-check
// The round dashboard: every round of a project side by side (oldest run first), from
// /api/projects/<id>/rounds/dashboard/ (annotation.dashboards.round_dashboard computes every figure and every
// change from the round before; this page only draws them). Each chart's numbers download as CSV (csv.js). An ES
// module: the table's cells and the CSV tables are pure functions of the server's answer.
import { csvWire } from "./csv.js";
import { change, num, pct } from "./figures.js";
import { formatDate, gettext, interpolate } from "./i18n.js";

/* One round's row of the table: each cell's text and, for a figure, its data-figure name. */
export function roundRow(r) {
  const step = r.first_error_step, c = r.change;
  const match = !r.suggestion_match ? gettext("no pre-scoring")
    : !r.suggestion_match.compared ? gettext("no suggestion on its errors")
      : interpolate(gettext("%(share)s of %(n)s"), { share: pct(r.suggestion_match.rate), n: r.suggestion_match.compared }) + change(c.suggestion_match_rate, "pp");
  return [
    { text: r.name },
    { text: r.checkpoint + (r.weights_hash ? " · " + r.weights_hash.slice(0, 12) : "") },
    { text: formatDate(r.ran_at) || "–" },
    { text: String(r.traces) },
    { text: String(r.answers) },
    { text: pct(r.error_share) + change(c.error_share, "pp"), figure: "error_share" },
    { text: pct(r.unusable_share) + change(c.unusable_share, "pp"), figure: "unusable_share" },
    { text: num(step.median, 1) + change(c.first_error_step_median, "step"), figure: "first_error_step" },
    { text: num(step.mean_relative, 3) + change(c.first_error_relative_mean, "ratio"), figure: "first_error_relative" },
    { text: (r.median_time_s === null ? "–" : interpolate(gettext("%(seconds)s s"), { seconds: num(r.median_time_s, 0) })) + change(c.median_time_s, "s"), figure: "median_time" },
    { text: match, figure: "suggestion_match" },
  ];
}

/* A round's share of its errors in one category (0 when it has none). */
export function categoryShare(r, category) {
  const total = r.error_categories.reduce((sum, c) => sum + c.count, 0);
  const found = r.error_categories.find((c) => c.category === category);
  return total && found ? found.count / total : 0;
}

/* Each chart's numbers (and the summary table's) as a CSV table, by name. */
export function roundTables(d) {
  const rounds = d.rounds;
  const matched = (r, key) => (r.suggestion_match ? r.suggestion_match[key] : null);
  return {
    summary: {
      header: ["round", "checkpoint", "weights_hash", "ran_at", "traces", "answers", "error", "no_error", "unusable", "error_share", "unusable_share",
        "first_error_step_median", "first_error_step_mean", "first_error_relative_mean", "median_time_s", "suggestion_compared", "suggestion_matched", "suggestion_match_rate"],
      rows: rounds.map((r) => [r.name, r.checkpoint, r.weights_hash, r.ran_at, r.traces, r.answers, r.verdicts.error, r.verdicts.no_error, r.verdicts.unusable,
        r.error_share, r.unusable_share, r.first_error_step.median, r.first_error_step.mean, r.first_error_step.mean_relative, r.median_time_s,
        matched(r, "compared"), matched(r, "matched"), matched(r, "rate")]),
    },
    shares: { header: ["round", "answers", "error", "unusable", "error_share", "unusable_share"],
      rows: rounds.map((r) => [r.name, r.answers, r.verdicts.error, r.verdicts.unusable, r.error_share, r.unusable_share]) },
    first_error_step: { header: ["round", "tau", "count"],
      rows: rounds.flatMap((r) => r.first_error_step.histogram.map((h) => [r.name, h.step, h.count])) },
    first_error_position: { header: ["round", "tau_over_n", "count"],
      rows: rounds.flatMap((r) => r.first_error_position.map((b) => [r.name, b.bucket, b.count])) },
    error_categories: { header: ["round", "category", "count", "share_of_round_errors"],
      rows: rounds.flatMap((r) => r.error_categories.map((c) => [r.name, c.category, c.count, categoryShare(r, c.category)])) },
    median_time: { header: ["round", "median_seconds"], rows: rounds.map((r) => [r.name, r.median_time_s]) },
    suggestion_match: { header: ["round", "compared", "matched", "rate"],
      rows: rounds.map((r) => [r.name, matched(r, "compared"), matched(r, "matched"), matched(r, "rate")]) },
  };
}

/** One round's row of the replay table (/api/projects/<id>/replays/counts/): the corrections by standing.
    @returns {{ text: string, figure: string }[]} */
export function replayRow(r) {
  return [
    { text: r.round_name || gettext("no round"), figure: "round" },
    ...["verified", "refuted", "waiting", "not_replayed"].map((name) => ({ text: String(r[name]), figure: name })),
  ];
}

/* The replay counts as a CSV table. */
export function replayTable(d) {
  return { header: ["round", "verified", "refuted", "waiting", "not_replayed"],
    rows: d.rounds.map((r) => [r.round_name, r.verified, r.refuted, r.waiting, r.not_replayed]) };
}

/* A table cell of ``text`` at the end of ``row``, with ``attrs`` as its data attributes. */
function cell(row, text, attrs) {
  const td = document.createElement("td");
  td.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) td.dataset[k] = v;
  row.append(td);
}

/* The corrections' standing per round in ``section`` (its tbody), from its data-url, beside the rounds; the section
   stays hidden where no correction was replayed (and where the counts cannot be read: the figures above stand
   without them). ``tables`` gets the counts as CSV. */
export async function loadReplays(section, tables) {
  try {
    const response = await fetch(section.dataset.url, { credentials: "same-origin" });
    if (!response.ok) return;
    const d = await response.json();
    const body = section.querySelector("tbody");
    body.replaceChildren();
    for (const r of d.rounds) {
      const tr = document.createElement("tr");
      tr.dataset.round = r.round_name;
      for (const c of replayRow(r)) cell(tr, c.text, { figure: c.figure });
      body.append(tr);
    }
    tables.replays = replayTable(d);
    section.hidden = !d.rounds.length;
  } catch (e) {
    // The server out of reach: the section stays as it was, as on a refusal.
  } finally {
    section.dataset.loaded = String(Date.now());
  }
}

if (typeof document !== "undefined") start();

function start() {
  const root = document.getElementById("rounds");
  if (!root || !window.Chart) return;
  const charts = {};
  const tables = {};
  const palette = ["#3b5bdb", "#2b8a3e", "#e67700", "#c92a2a", "#7048e8", "#0b7285", "#5c940d", "#a61e4d"];

  function draw(name, type, labels, datasets, options) {
    const section = root.querySelector('[data-chart="' + name + '"]');
    if (charts[name]) charts[name].destroy();
    charts[name] = new window.Chart(section.querySelector("canvas"), {
      type: type,
      data: { labels: labels, datasets: datasets },
      options: Object.assign({ animation: false, responsive: true, plugins: { legend: { display: datasets.length > 1 } } }, options || {}),
    });
    /** @type {HTMLElement} */ (section).dataset.drawn = "1";
  }

  function perRound(rounds, labels, value) {
    return rounds.map((r, i) => ({ label: r.name, backgroundColor: palette[i % palette.length], data: labels.map((l) => value(r, l)) }));
  }

  function render(d) {
    const rounds = d.rounds;
    document.getElementById("rounds-empty").hidden = rounds.length > 0;
    // Nothing to compare: the line above says what to do, without an empty table and six bare axes under it.
    root.querySelectorAll("[data-when-rounds]").forEach((/** @type {HTMLElement} */ el) => { el.hidden = !rounds.length; });
    const names = rounds.map((r) => r.name);

    const body = root.querySelector("#round-table tbody");
    body.replaceChildren();
    for (const r of rounds) {
      const tr = document.createElement("tr");
      tr.dataset.round = r.name;
      for (const c of roundRow(r)) cell(tr, c.text, c.figure ? { figure: c.figure } : undefined);
      body.append(tr);
    }
    Object.assign(tables, roundTables(d));

    draw("shares", "bar", names, [
      { label: gettext("with an error"), backgroundColor: palette[3], data: rounds.map((r) => r.error_share) },
      { label: gettext("unusable"), backgroundColor: palette[2], data: rounds.map((r) => r.unusable_share) },
    ], { scales: { y: { beginAtZero: true, max: 1 } } });

    const steps = rounds.length ? rounds[0].first_error_step.histogram.map((h) => h.step) : [];
    draw("first_error_step", "bar", steps, perRound(rounds, steps, (r, s) => r.first_error_step.histogram.find((h) => h.step === s).count),
      { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } });

    const buckets = rounds.length ? rounds[0].first_error_position.map((b) => b.bucket) : [];
    draw("first_error_position", "bar", buckets, perRound(rounds, buckets, (r, b) => r.first_error_position.find((x) => x.bucket === b).count),
      { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } });

    const categories = [...new Set(rounds.flatMap((r) => r.error_categories.map((c) => c.category)))].sort();
    draw("error_categories", "bar", categories, perRound(rounds, categories, categoryShare),
      { indexAxis: "y", scales: { x: { beginAtZero: true, max: 1 } } });

    draw("median_time", "bar", names, [{ label: "median s", backgroundColor: palette[0], data: rounds.map((r) => r.median_time_s) }],
      { scales: { y: { beginAtZero: true } } });

    draw("suggestion_match", "bar", names, [{ label: "matched", backgroundColor: palette[5],
      data: rounds.map((r) => (r.suggestion_match ? r.suggestion_match.rate : null)) }], { scales: { y: { beginAtZero: true, max: 1 } } });
    root.dataset.loaded = String(Date.now());
  }

  csvWire(root, tables);

  async function load() {
    const error = document.getElementById("rounds-error");
    try {
      const response = await fetch(root.dataset.url, { credentials: "same-origin" });
      const body = await response.json();
      if (!response.ok) {
        error.textContent = body.detail || interpolate(gettext("The round dashboard could not be loaded (the server answered %(status)s)."), { status: response.status });
        error.hidden = false;
        return;
      }
      error.hidden = true;
      render(body);
    } catch (e) {
      error.textContent = gettext("Could not load the round dashboard; reload the page to try again.");
      error.hidden = false;
    }
  }
  load();
  loadReplays(document.getElementById("round-replays"), tables);
}
