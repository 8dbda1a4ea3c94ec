// The round dashboard as it runs on a page (static/js/round_dashboard.js's start, run as the module loads where there
// is a document), on a stand-in document with a stand-in Chart.js, fetch and downloads: the rounds' table and six
// charts from the server's answer, the corrections' standing per round beside them, and each chart's numbers as CSV.
// What a refused, failed or empty answer shows: round_dashboard_refused, _offline and _empty.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startedPage } from "./round_dashboard_answers.mjs";

const { doc, root, charts, asked, downloads } = await startedPage();

const $ = (id) => doc.getElementById(id);
const chart = (name) => charts.filter((c) => c.canvas === root.querySelector(`[data-chart="${name}"] canvas`));

test("the page asks for the rounds and the replay counts, once each", () => {
  assert.deepEqual(asked, [["/api/projects/3/rounds/dashboard/", "same-origin"], ["/api/projects/3/replays/counts/", "same-origin"]]);
  assert.ok(root.dataset.loaded);
  assert.equal($("rounds-error").hidden, true);
  assert.equal($("rounds-empty").hidden, true);
  assert.deepEqual(root.querySelectorAll("[data-when-rounds]").map((el) => el.hidden), [false, false]);
});

test("a row per round, oldest first, each figure's cell named", () => {
  const rows = root.querySelectorAll("#round-table tbody tr");
  assert.deepEqual(rows.map((tr) => tr.dataset.round), ["r1", "r2"]);
  assert.equal(rows[1].children.length, 11);
  assert.deepEqual(rows[1].children.map((td) => td.textContent).slice(5, 7), ["50.0 % (−10.0 pp)", "12.5 % (±0.0 pp)"]);
  assert.deepEqual(rows[0].children.filter((td) => td.dataset.figure).map((td) => td.dataset.figure),
    ["error_share", "unusable_share", "first_error_step", "first_error_relative", "median_time", "suggestion_match"]);
  assert.equal(rows[0].children[0].dataset.figure, undefined);
});

test("six charts, each drawn once: the shares, a dataset per round over the steps, buckets and categories", () => {
  for (const name of ["shares", "first_error_step", "first_error_position", "error_categories", "median_time", "suggestion_match"]) {
    assert.equal(chart(name).length, 1, name);
    assert.equal(root.querySelector(`[data-chart="${name}"]`).dataset.drawn, "1");
    assert.equal(chart(name)[0].config.options.animation, false);
  }
  const [shares] = chart("shares");
  assert.deepEqual(shares.config.data.labels, ["r1", "r2"]);
  assert.deepEqual(shares.config.data.datasets.map((d) => [d.label, d.data]), [["with an error", [0.6, 0.5]], ["unusable", [0.125, 0.125]]]);
  assert.equal(shares.config.options.plugins.legend.display, true);
  assert.equal(shares.config.options.scales.y.max, 1);
  const [steps] = chart("first_error_step");
  assert.deepEqual(steps.config.data.labels, [1, 2]);
  assert.deepEqual(steps.config.data.datasets.map((d) => [d.label, d.data]), [["r1", [1, 3]], ["r2", [2, 2]]]);
  assert.notEqual(steps.config.data.datasets[0].backgroundColor, steps.config.data.datasets[1].backgroundColor);
  assert.deepEqual(chart("first_error_position")[0].config.data.datasets.map((d) => d.data), [[4], [3]]);
  const [categories] = chart("error_categories");
  assert.deepEqual(categories.config.data.labels, ["typo", "wrong element"]);  // every round's, sorted
  assert.deepEqual(categories.config.data.datasets.map((d) => d.data), [[0.25, 0.75], [0, 1]]);
  assert.equal(categories.config.options.indexAxis, "y");
  const [time] = chart("median_time");
  assert.deepEqual(time.config.data.datasets[0].data, [61, 57]);
  assert.equal(time.config.options.plugins.legend.display, false);
  assert.deepEqual(chart("suggestion_match")[0].config.data.datasets[0].data, [null, 0.75]);
});

test("the corrections' standing per round is shown beside the rounds", () => {
  const section = $("round-replays");
  assert.equal(section.hidden, false);
  assert.deepEqual(section.querySelectorAll("tbody tr").map((tr) => tr.children.map((td) => td.textContent)),
    [["r1", "2", "1", "0", "4"], ["no round", "0", "0", "1", "0"]]);
});

test("each CSV button downloads its chart's numbers, the replay counts among them", async () => {
  root.querySelector('[data-csv="first_error_step"]').click();
  root.querySelector('[data-csv="replays"]').click();
  assert.deepEqual(downloads.map((d) => d.name), ["first_error_step.csv", "replays.csv"]);
  assert.equal(await downloads[0].blob.text(), "round,tau,count\r\nr1,1,1\r\nr1,2,3\r\nr2,1,2\r\nr2,2,2\r\n");
  assert.equal(await downloads[1].blob.text(), "round,verified,refuted,waiting,not_replayed\r\nr1,2,1,0,4\r\n,0,0,1,0\r\n");
  assert.equal(doc.body.querySelectorAll("a").length, 0);  // each download's link is gone once clicked
});
