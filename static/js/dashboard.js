// @ts-check
// The quality dashboard: fetches the project's figures (annotation.dashboards computes them), draws each chart with
// Chart.js (served from static/vendor), offers each chart's numbers as CSV, and refetches when a live event says
// work moved. An ES module: the figures' words and the CSV tables are pure functions of the server's answer.
import { api, describeErrors } from "./api.js";
import { csvWire } from "./csv.js";
import { num, pct } from "./figures.js";
import {
  boundsText, flaggedText, flagLines, partHeadings, partRow, pauseButton, QUALITY_HEADINGS, qualityCsv, qualityRow,
} from "./quality.js";
import { formatDate, gettext, interpolate } from "./i18n.js";

/* The agreement measures the chart draws, as [name, value] rows. */
export function agreementRows(a) {
  return [[gettext("first error exact"), a.first_error_exact], [gettext("first error ±1"), a.first_error_within_one],
    [gettext("category alpha"), a.category_alpha], [gettext("action type"), a.action_type_agreement]];
}

/* The figures above the charts, by their data-figure name, in words. */
export function dashboardFigures(d) {
  const a = d.agreement;
  return {
    median_time: d.median_time.overall_s === null ? "–" : interpolate(gettext("%(seconds)s s"), { seconds: num(d.median_time.overall_s, 0) }),
    acceptance_rate: pct(d.review.acceptance_rate) + " (" + d.review.accepted + ")",
    rejection_rate: pct(d.review.rejection_rate) + " (" + d.review.rejected + ")",
    first_error: pct(a.first_error_exact) + " / " + pct(a.first_error_within_one),
    alpha: num(a.category_alpha, 3),
    action_type: interpolate(gettext("%(share)s of %(n)s"), { share: pct(a.action_type_agreement), n: d.agreement_words.action_type_pairs }),
    click: num(a.click_distance_median, 3) + " (" + d.agreement_words.click_pairs + ")",
    box_iou: num(a.box_iou_median, 3) + " (" + d.agreement_words.box_pairs + ")",
    pairs: a.pairs + " / " + a.open_disagreements,
    suggestion: d.suggestion_match ? interpolate(gettext("%(share)s of %(n)s"), { share: pct(d.suggestion_match.rate), n: d.suggestion_match.compared }) : gettext("no pre-scoring yet"),
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
    const section = /** @type {HTMLElement | null} */ (root.querySelector('[data-chart="' + name + '"]'));
    if (!section) return;
    if (charts[name]) charts[name].destroy();
    delete charts[name];
    const note = /** @type {HTMLElement | null} */ (section.querySelector("[data-chart-empty]"));
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
      { label: gettext("accepted"), backgroundColor: palette[1], data: per.map((r) => r.accepted) },
      { label: gettext("rejected"), backgroundColor: palette[3], data: per.map((r) => r.rejected) },
    ], { scales: { y: { beginAtZero: true, ticks: COUNTS } } }, !per.length);

    const med = Object.entries(d.median_time.per_annotator_s);
    draw("median_time", "bar", med.map((m) => m[0]), [{ label: "median s", backgroundColor: palette[0], data: med.map((m) => m[1]) }],
      { scales: { y: { beginAtZero: true } } }, !med.length);

    draw("error_categories", "bar", d.error_categories.map((r) => r.category),
      [{ label: gettext("annotations"), backgroundColor: palette[2], data: d.error_categories.map((r) => r.count) }],
      { indexAxis: "y", scales: { x: { beginAtZero: true, ticks: COUNTS } } }, !d.error_categories.some((r) => r.count));

    draw("first_error_position", "bar", d.first_error_position.map((r) => r.bucket),
      [{ label: gettext("annotations"), backgroundColor: palette[4], data: d.first_error_position.map((r) => r.count) }],
      { scales: { y: { beginAtZero: true, ticks: COUNTS } } }, !d.first_error_position.some((r) => r.count));

    const measures = agreementRows(a);
    draw("agreement", "bar", measures.map((r) => r[0]),
      [{ label: gettext("agreement"), backgroundColor: palette[5], data: measures.map((r) => r[1]) }],
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
        error.textContent = body.detail || interpolate(gettext("The dashboard could not be loaded (the server answered %(status)s)."), { status: response.status });
        error.hidden = false;
        return;
      }
      error.hidden = true;
      render(body);
    } catch (e) {
      error.textContent = gettext("Could not load the dashboard; retrying on the next update.");
      error.hidden = false;
    }
  }

  // Each annotator's quality (annotation.quality.selectors.quality_dashboard): the table with its flags and a
  // Pause / Resume button per annotator, the gold accuracy part by part, the latest gold changes; its CSV is the
  // server's own rows.
  const quality = document.getElementById("quality");

  // A row of cells; ``tag`` "th" for a heading row (each a column's heading), else the first cell heads its row.
  function cellsRow(cells, tag) {
    const tr = document.createElement("tr");
    for (const [i, cell] of cells.entries()) {
      const td = document.createElement(tag || (i === 0 ? "th" : "td"));
      td.scope = tag ? "col" : i === 0 ? "row" : "";
      td.textContent = cell.text === undefined ? cell : cell.text;
      if (cell.figure) td.dataset.quality = cell.figure;  // not data-figure: the figures above are found by that
      if (cell.part) td.dataset.part = cell.part;
      tr.append(td);
    }
    return tr;
  }

  function pauseControl(a) {
    const wrap = document.createElement("div");
    if (a.paused) {
      const note = document.createElement("span");
      note.className = "paused-note";
      note.textContent = gettext("Queue paused") + (a.pause_reason ? ": " + a.pause_reason : "");
      wrap.append(note);
    }
    if (quality.dataset.canPause !== "1") return wrap;
    const how = pauseButton(a);
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = how.text;
    button.setAttribute("aria-label", how.label);
    button.dataset.pause = a.annotator;
    button.className = a.paused ? "" : "danger";
    button.addEventListener("click", async () => {
      button.disabled = true;
      const res = await api("POST", quality.dataset.pauseUrl, { annotator: a.annotator, paused: how.paused });
      const error = document.getElementById("quality-error");
      if (res.status !== 200) {
        error.textContent = interpolate(gettext("Not changed: %(problem)s"), { problem: describeErrors(res.data) || gettext("the server could not be reached; try again.") });
        error.hidden = false;
        button.disabled = false;
        return;
      }
      error.hidden = true;
      loadQuality();
    });
    wrap.append(button);
    return wrap;
  }

  function renderQuality(report) {
    document.getElementById("quality-flagged").textContent = flaggedText(report);
    document.getElementById("quality-bounds").textContent = boundsText(report.settings);
    const table = document.getElementById("quality-table");
    table.querySelector("thead").replaceChildren(cellsRow([...QUALITY_HEADINGS, "Flags", "Queue"], "th"));
    table.querySelector("tbody").replaceChildren(...report.annotators.map((a) => {
      const tr = cellsRow(qualityRow(a, report));
      tr.dataset.annotator = a.annotator;
      tr.dataset.flags = a.flags.map((f) => f.flag).join(" ");
      tr.dataset.paused = a.paused ? "1" : "0";
      tr.classList.toggle("flagged", a.flags.length > 0);
      if (a.flags.length) {
        const marker = document.createElement("span");
        marker.className = "flag-marker";
        marker.textContent = gettext("⚑ flagged");
        tr.firstElementChild.append(marker);
      }
      const flags = document.createElement("td");
      if (a.flags.length) {
        const list = document.createElement("ul");
        list.className = "flags";
        for (const words of flagLines(a)) { const li = document.createElement("li"); li.textContent = words; list.append(li); }
        flags.append(list);
      } else {
        flags.className = "flag-none";
        flags.textContent = gettext("none");
      }
      const queue = document.createElement("td");
      queue.append(pauseControl(a));
      tr.append(flags, queue);
      return tr;
    }));
    const parts = document.querySelector("#quality-parts table");
    parts.querySelector("thead").replaceChildren(cellsRow(["Annotator", ...partHeadings(report)], "th"));
    parts.querySelector("tbody").replaceChildren(...report.annotators.map((a) => cellsRow(partRow(a))));
    const changes = document.querySelector("#gold-changes ul");
    changes.replaceChildren(...(report.gold_changes.length ? report.gold_changes : [{ words: gettext("No gold trace marked yet.") }]).map((c) => {
      const li = document.createElement("li");
      li.textContent = (c.at ? formatDate(c.at) + " · " : "") + c.words + (c.actor ? " (" + c.actor + ")" : "");
      return li;
    }));
    tables.quality = qualityCsv(report);
    quality.dataset.loaded = String(Date.now());
  }

  async function loadQuality() {
    if (!quality) return;
    const params = new URLSearchParams();
    if (root.dataset.from) params.set("from", root.dataset.from);
    if (root.dataset.to) params.set("to", root.dataset.to);
    const res = await api("GET", quality.dataset.url + "?" + params);
    const error = document.getElementById("quality-error");
    if (res.status !== 200) {
      error.textContent = interpolate(gettext("Each annotator's quality could not be loaded: %(problem)s"), { problem: describeErrors(res.data) || gettext("the server could not be reached; retrying on the next update.") });
      error.hidden = false;
      return;
    }
    error.hidden = true;
    renderQuality(res.data);
  }

  let pending = null, pendingQuality = null;
  document.addEventListener("studio:live", (/** @type {CustomEvent} */ e) => {
    // An answer submitted or reviewed moves the figures and the flags; a gold answer scored, a re-score or a queue
    // paused moves the quality table.
    if (e.detail.type === "annotation") {
      clearTimeout(pending);
      pending = setTimeout(load, 300);  // a burst of reviews costs one refetch
    }
    if (e.detail.type === "annotation" || e.detail.type === "quality") {
      clearTimeout(pendingQuality);
      pendingQuality = setTimeout(loadQuality, 300);
    }
  });
  load();
  loadQuality();
}
