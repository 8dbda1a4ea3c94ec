// The dashboards' pure parts: the CSV writer (static/js/csv.js), the figures' words (figures.js) and what the
// quality dashboard (dashboard.js) and the round dashboard (round_dashboard.js) make of the server's figures
// (annotation.dashboards: project_dashboard and round_dashboard).
import { test } from "node:test";
import assert from "node:assert/strict";
import { csvCell, csvText } from "../../static/js/csv.js";
import { agreementRows, dashboardFigures, dashboardTables } from "../../static/js/dashboard.js";
import { change, num, pct } from "../../static/js/figures.js";
import { categoryShare, loadReplays, replayRow, replayTable, roundRow, roundTables } from "../../static/js/round_dashboard.js";
import { project } from "./dashboard_answers.mjs";
import { round } from "./round_dashboard_answers.mjs";

test("a CSV cell: numbers as they are, text quoted when it must be, formulas defused", () => {
  assert.equal(csvCell(-0.25), "-0.25");  // a negative α stays a number
  assert.equal(csvCell(null), "");
  assert.equal(csvCell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
  assert.equal(csvCell("-1"), "\"'-1\"");
  assert.equal(csvCell("@sum"), "\"'@sum\"");
  assert.equal(csvCell("a,b"), "\"a,b\"");
  assert.equal(csvCell("plain"), "plain");
  assert.equal(csvText({ header: ["a", "b"], rows: [[1, "x"], [null, "y\nz"]] }), "a,b\r\n1,x\r\n,\"y\nz\"\r\n");
});

test("figures: a share, a number, a change from the round before", () => {
  assert.equal(pct(0.1234), "12.3 %");
  assert.equal(pct(null), "–");
  assert.equal(num(2.5, 0), "3");
  assert.equal(num(undefined, 2), "–");
  assert.equal(change(0.015, "pp"), " (+1.5 pp)");
  assert.equal(change(-12.4, "s"), " (−12 s)");
  assert.equal(change(0, "ratio"), " (±0.000)");
  assert.equal(change(-0.5, "step"), " (−0.5)");
  assert.equal(change(null, "pp"), "");
});

test("the quality dashboard's figures in words", () => {
  const figures = dashboardFigures(project);
  assert.equal(figures.median_time, "95 s");
  assert.equal(figures.acceptance_rate, "83.3 % (5)");
  assert.equal(figures.first_error, "50.0 % / 100.0 %");
  assert.equal(figures.alpha, "-0.125");
  assert.equal(figures.box_iou, "– (no pairs)");
  assert.equal(figures.pairs, "4 / 1");
  assert.equal(figures.suggestion, "no pre-scoring yet");
  assert.equal(dashboardFigures({ ...project, suggestion_match: { rate: 0.5, compared: 8 } }).suggestion, "50.0 % of 8");
  assert.equal(dashboardFigures({ ...project, median_time: { overall_s: null, per_annotator_s: {} } }).median_time, "–");
});

test("the quality dashboard's CSV tables hold each chart's numbers", () => {
  const tables = dashboardTables(project);
  assert.deepEqual(Object.keys(tables).sort(),
    ["agreement", "done_per_day", "error_categories", "first_error_position", "median_time", "review"]);
  assert.deepEqual(tables.median_time.rows, [["(all)", 95.4], ["ann", 80], ["bob", 120.5]]);
  assert.deepEqual(tables.agreement.rows.slice(0, 4), agreementRows(project.agreement));
  assert.ok(csvText(tables.error_categories).includes("\"'=cmd\",1"));
});

test("a round's row: its figures with the change from the round before", () => {
  const later = round("r2", {
    weights_hash: "", ran_at: null, suggestion_match: { compared: 4, matched: 3, rate: 0.75 },
    change: { error_share: -0.1, unusable_share: 0, first_error_step_median: 1, first_error_relative_mean: 0.05,
      median_time_s: -4, suggestion_match_rate: 0.25 },
  });
  assert.deepEqual(roundRow(later).map((c) => c.text), [
    "r2", "ckpt-r2", "–", "10", "8", "50.0 % (−10.0 pp)", "12.5 % (±0.0 pp)", "2.0 (+1.0)", "0.400 (+0.050)", "61 s (−4 s)",
    "75.0 % of 4 (+25.0 pp)",
  ]);
  assert.deepEqual(roundRow(round("r1")).slice(1, 3).map((c) => c.text), ["ckpt-r1 · abababababab", "Nov 20, 2026"]);
  assert.equal(roundRow(round("r1")).at(-1).text, "no pre-scoring");
  assert.equal(roundRow(round("r1", { suggestion_match: { compared: 0, matched: 0, rate: null } })).at(-1).text,
    "no suggestion on its errors");
  assert.deepEqual(roundRow(round("r1")).filter((c) => c.figure).map((c) => c.figure), ["error_share", "unusable_share",
    "first_error_step", "first_error_relative", "median_time", "suggestion_match"]);
});

test("the round dashboard's CSV tables and category shares", () => {
  const r = round("r1");
  assert.equal(categoryShare(r, "wrong element"), 0.75);
  assert.equal(categoryShare(r, "absent"), 0);
  assert.equal(categoryShare(round("r0", { error_categories: [] }), "typo"), 0);
  const tables = roundTables({ rounds: [r, round("r2")] });
  assert.equal(tables.summary.header.length, tables.summary.rows[0].length);
  assert.deepEqual(tables.first_error_step.rows, [["r1", 1, 1], ["r1", 2, 3], ["r2", 1, 1], ["r2", 2, 3]]);
  assert.deepEqual(tables.error_categories.rows[0], ["r1", "wrong element", 3, 0.75]);
  assert.deepEqual(tables.suggestion_match.rows, [["r1", null, null, null], ["r2", null, null, null]]);
  assert.deepEqual(roundTables({ rounds: [] }).summary.rows, []);
});

test("the replay table: a round's corrections by standing, a round-less row named, and the same counts as CSV", () => {
  const counts = { rounds: [
    { round_name: "r1", verified: 3, refuted: 1, waiting: 0, not_replayed: 2 },
    { round_name: "", verified: 0, refuted: 0, waiting: 1, not_replayed: 0 },
  ] };
  assert.deepEqual(replayRow(counts.rounds[0]).map((c) => c.text), ["r1", "3", "1", "0", "2"]);
  assert.deepEqual(replayRow(counts.rounds[0]).map((c) => c.figure), ["round", "verified", "refuted", "waiting", "not_replayed"]);
  assert.equal(replayRow(counts.rounds[1])[0].text, "no round");
  assert.deepEqual(replayTable(counts), {
    header: ["round", "verified", "refuted", "waiting", "not_replayed"],
    rows: [["r1", 3, 1, 0, 2], ["", 0, 0, 1, 0]],
  });
});

test("the replay section: a row per round from the counts, shown; hidden with no round; left as it was on a refusal", async () => {
  const made = (tag) => ({ tag, dataset: {}, children: [], append(...n) { this.children.push(...n); } });
  globalThis.document = { createElement: made };
  const body = { ...made("tbody"), replaceChildren() { this.children = []; } };
  const section = { dataset: { url: "/api/projects/3/replays/counts/" }, hidden: true, querySelector: () => body };
  const answers = [
    [true, { rounds: [{ round_name: "r1", verified: 2, refuted: 1, waiting: 0, not_replayed: 0 }] }],
    [true, { rounds: [] }],
    [false, {}],
  ];
  const asked = [];
  globalThis.fetch = async (url) => {
    asked.push(url);
    const [ok, data] = answers.shift();
    return { ok, json: async () => data };
  };
  const tables = {};
  await loadReplays(section, tables);
  assert.deepEqual(asked, ["/api/projects/3/replays/counts/"]);
  assert.equal(section.hidden, false);
  assert.deepEqual(body.children.map((tr) => [tr.dataset.round, tr.children.map((td) => [td.textContent, td.dataset.figure])]), [
    ["r1", [["r1", "round"], ["2", "verified"], ["1", "refuted"], ["0", "waiting"], ["0", "not_replayed"]]],
  ]);
  assert.deepEqual(tables.replays.rows, [["r1", 2, 1, 0, 0]]);
  assert.ok(section.dataset.loaded);
  await loadReplays(section, tables);
  assert.equal(section.hidden, true);
  assert.deepEqual(body.children, []);
  section.hidden = false;
  await loadReplays(section, tables);
  assert.equal(section.hidden, false);  // a refused count changes nothing
  delete globalThis.document;
});
