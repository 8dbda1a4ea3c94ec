// The round dashboard: every round of a project side by side (oldest run first), from
// /api/projects/<id>/rounds/dashboard/ (annotation.dashboards.round_dashboard computes every figure and every
// change from the round before; this page only draws them). Each chart's numbers download as CSV (csv.js).
(function () {
  const root = document.getElementById("rounds");
  if (!root || !window.Chart || !window.studioCsv) return;
  const charts = {};
  const tables = {};
  const palette = ["#3b5bdb", "#2b8a3e", "#e67700", "#c92a2a", "#7048e8", "#0b7285", "#5c940d", "#a61e4d"];

  function pct(v) { return v === null || v === undefined ? "–" : (v * 100).toFixed(1) + " %"; }
  function num(v, digits) { return v === null || v === undefined ? "–" : Number(v).toFixed(digits); }
  function change(v, kind) {
    if (v === null || v === undefined) return "";
    const sign = v > 0 ? "+" : v < 0 ? "−" : "±";
    const size = Math.abs(v);
    const text = kind === "pp" ? (size * 100).toFixed(1) + " pp" : kind === "s" ? size.toFixed(0) + " s" : size.toFixed(kind === "ratio" ? 3 : 1);
    return " (" + sign + text + ")";
  }

  function draw(name, type, labels, datasets, options) {
    const section = root.querySelector('[data-chart="' + name + '"]');
    if (charts[name]) charts[name].destroy();
    charts[name] = new window.Chart(section.querySelector("canvas"), {
      type: type,
      data: { labels: labels, datasets: datasets },
      options: Object.assign({ animation: false, responsive: true, plugins: { legend: { display: datasets.length > 1 } } }, options || {}),
    });
    section.dataset.drawn = "1";
  }

  function perRound(rounds, labels, value) {
    return rounds.map((r, i) => ({ label: r.name, backgroundColor: palette[i % palette.length], data: labels.map((l) => value(r, l)) }));
  }

  function cell(row, text, attrs) {
    const td = document.createElement("td");
    td.textContent = text;
    for (const [k, v] of Object.entries(attrs || {})) td.dataset[k] = v;
    row.append(td);
  }

  function render(d) {
    const rounds = d.rounds;
    document.getElementById("rounds-empty").hidden = rounds.length > 0;
    // Nothing to compare: the line above says what to do, without an empty table and six bare axes under it.
    root.querySelectorAll("[data-when-rounds]").forEach((el) => { el.hidden = !rounds.length; });
    const names = rounds.map((r) => r.name);

    const body = root.querySelector("#round-table tbody");
    body.replaceChildren();
    for (const r of rounds) {
      const tr = document.createElement("tr");
      tr.dataset.round = r.name;
      const step = r.first_error_step, c = r.change;
      cell(tr, r.name);
      cell(tr, r.checkpoint + (r.weights_hash ? " · " + r.weights_hash.slice(0, 12) : ""));
      cell(tr, r.ran_at ? r.ran_at.slice(0, 10) : "–");
      cell(tr, String(r.traces));
      cell(tr, String(r.answers));
      cell(tr, pct(r.error_share) + change(c.error_share, "pp"), { figure: "error_share" });
      cell(tr, pct(r.unusable_share) + change(c.unusable_share, "pp"), { figure: "unusable_share" });
      cell(tr, num(step.median, 1) + change(c.first_error_step_median, "step"), { figure: "first_error_step" });
      cell(tr, num(step.mean_relative, 3) + change(c.first_error_relative_mean, "ratio"), { figure: "first_error_relative" });
      cell(tr, (r.median_time_s === null ? "–" : num(r.median_time_s, 0) + " s") + change(c.median_time_s, "s"), { figure: "median_time" });
      cell(tr, !r.suggestion_match ? "no pre-scoring" : !r.suggestion_match.compared ? "no suggestion on its errors" : pct(r.suggestion_match.rate) + " of " + r.suggestion_match.compared + change(c.suggestion_match_rate, "pp"), { figure: "suggestion_match" });
      body.append(tr);
    }
    tables.summary = {
      header: ["round", "checkpoint", "weights_hash", "ran_at", "traces", "answers", "error", "no_error", "unusable", "error_share", "unusable_share",
        "first_error_step_median", "first_error_step_mean", "first_error_relative_mean", "median_time_s", "suggestion_compared", "suggestion_matched", "suggestion_match_rate"],
      rows: rounds.map((r) => [r.name, r.checkpoint, r.weights_hash, r.ran_at, r.traces, r.answers, r.verdicts.error, r.verdicts.no_error, r.verdicts.unusable,
        r.error_share, r.unusable_share, r.first_error_step.median, r.first_error_step.mean, r.first_error_step.mean_relative, r.median_time_s,
        r.suggestion_match ? r.suggestion_match.compared : null, r.suggestion_match ? r.suggestion_match.matched : null, r.suggestion_match ? r.suggestion_match.rate : null]),
    };

    draw("shares", "bar", names, [
      { label: "with an error", backgroundColor: palette[3], data: rounds.map((r) => r.error_share) },
      { label: "unusable", backgroundColor: palette[2], data: rounds.map((r) => r.unusable_share) },
    ], { scales: { y: { beginAtZero: true, max: 1 } } });
    tables.shares = { header: ["round", "answers", "error", "unusable", "error_share", "unusable_share"],
      rows: rounds.map((r) => [r.name, r.answers, r.verdicts.error, r.verdicts.unusable, r.error_share, r.unusable_share]) };

    const steps = rounds.length ? rounds[0].first_error_step.histogram.map((h) => h.step) : [];
    draw("first_error_step", "bar", steps, perRound(rounds, steps, (r, s) => r.first_error_step.histogram.find((h) => h.step === s).count),
      { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } });
    tables.first_error_step = { header: ["round", "tau", "count"],
      rows: rounds.flatMap((r) => r.first_error_step.histogram.map((h) => [r.name, h.step, h.count])) };

    const buckets = rounds.length ? rounds[0].first_error_position.map((b) => b.bucket) : [];
    draw("first_error_position", "bar", buckets, perRound(rounds, buckets, (r, b) => r.first_error_position.find((x) => x.bucket === b).count),
      { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } });
    tables.first_error_position = { header: ["round", "tau_over_n", "count"],
      rows: rounds.flatMap((r) => r.first_error_position.map((b) => [r.name, b.bucket, b.count])) };

    const categories = [...new Set(rounds.flatMap((r) => r.error_categories.map((c) => c.category)))].sort();
    const share = (r, cat) => {
      const total = r.error_categories.reduce((sum, c) => sum + c.count, 0);
      const found = r.error_categories.find((c) => c.category === cat);
      return total && found ? found.count / total : 0;
    };
    draw("error_categories", "bar", categories, perRound(rounds, categories, share),
      { indexAxis: "y", scales: { x: { beginAtZero: true, max: 1 } } });
    tables.error_categories = { header: ["round", "category", "count", "share_of_round_errors"],
      rows: rounds.flatMap((r) => r.error_categories.map((c) => [r.name, c.category, c.count, share(r, c.category)])) };

    draw("median_time", "bar", names, [{ label: "median s", backgroundColor: palette[0], data: rounds.map((r) => r.median_time_s) }],
      { scales: { y: { beginAtZero: true } } });
    tables.median_time = { header: ["round", "median_seconds"], rows: rounds.map((r) => [r.name, r.median_time_s]) };

    draw("suggestion_match", "bar", names, [{ label: "matched", backgroundColor: palette[5],
      data: rounds.map((r) => (r.suggestion_match ? r.suggestion_match.rate : null)) }], { scales: { y: { beginAtZero: true, max: 1 } } });
    tables.suggestion_match = { header: ["round", "compared", "matched", "rate"],
      rows: rounds.map((r) => [r.name, r.suggestion_match ? r.suggestion_match.compared : null, r.suggestion_match ? r.suggestion_match.matched : null,
        r.suggestion_match ? r.suggestion_match.rate : null]) };
    root.dataset.loaded = String(Date.now());
  }

  window.studioCsv.wire(root, tables);

  async function load() {
    const error = document.getElementById("rounds-error");
    try {
      const response = await fetch(root.dataset.url, { credentials: "same-origin" });
      const body = await response.json();
      if (!response.ok) {
        error.textContent = body.detail || `The round dashboard could not be loaded (the server answered ${response.status}).`;
        error.hidden = false;
        return;
      }
      error.hidden = true;
      render(body);
    } catch (e) {
      error.textContent = "Could not load the round dashboard; reload the page to try again.";
      error.hidden = false;
    }
  }
  load();
})();
