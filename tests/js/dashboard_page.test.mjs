// The quality dashboard on a page (static/js/dashboard.js's start, run as the module loads where there is a
// document), on a stand-in document with a stand-in Chart.js and fetch: the project's figures and charts from the
// server's answer (a chart with nothing to show says so instead), each annotator's quality with the lead's Pause /
// Resume, each chart's numbers as CSV, what a refused or failed load says, and a refetch after a live event.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Event, standInDocument } from "./stand_in_dom.mjs";
import { project, report } from "./dashboard_answers.mjs";

const doc = standInDocument();
const m = doc.make;
const chartSection = (name) => m("section", { data: { chart: name } }, m("canvas"), m("p", { data: { chartEmpty: "" }, hidden: true }, "Nothing yet."));
const CHARTS = ["done_per_day", "review", "median_time", "error_categories", "first_error_position", "agreement"];
const root = m("div", { id: "dashboard", data: { url: "/api/projects/3/dashboard/", from: "2026-11-01", to: "2026-11-28" } },
  m("span", { data: { counter: "accepted" } }), m("span", { data: { counter: "submitted" } }),
  m("span", { data: { figure: "median_time" } }), m("span", { data: { figure: "pairs" } }),
  m("button", { data: { csv: "review" } }), m("button", { data: { csv: "quality" } }), m("button", { data: { csv: "nothing" } }),
  ...CHARTS.map(chartSection));
const quality = m("div", { id: "quality", data: { url: "/api/projects/3/quality/", canPause: "1", pauseUrl: "/api/projects/3/quality/pause/" } },
  m("p", { id: "quality-flagged" }), m("p", { id: "quality-bounds" }), m("p", { id: "quality-error", hidden: true }),
  m("table", { id: "quality-table" }, m("thead"), m("tbody")),
  m("div", { id: "quality-parts" }, m("table", {}, m("thead"), m("tbody"))),
  m("div", { id: "gold-changes" }, m("ul")));
doc.body.append(root, quality, m("span", { id: "range-label" }), m("p", { id: "dashboard-error", hidden: true }));

const charts = [];
window.Chart = class {
  constructor(canvas, config) { Object.assign(this, { canvas, config, destroyed: false }); charts.push(this); }
  destroy() { this.destroyed = true; }
};
const sent = [];
let answers = { dashboard: [200, project], quality: [200, report], pause: [200, {}] };
globalThis.fetch = async (url, init = {}) => {
  sent.push([init.method || "GET", url, init.body === undefined ? undefined : JSON.parse(init.body)]);
  const which = url.includes("/pause/") ? "pause" : url.includes("/quality/") ? "quality" : "dashboard";
  const answer = answers[which];
  if (answer === "offline") throw new TypeError("fetch failed");
  const [status, data] = answer;
  return { status, ok: status < 300, json: async () => data };
};
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };
await import("../../static/js/dashboard.js");
await settle();

const $ = (id) => doc.getElementById(id);
const section = (name) => root.querySelector(`[data-chart="${name}"]`);
const drawn = (name) => charts.filter((chart) => chart.canvas === section(name).querySelector("canvas"));

test("the figures and counters come from the project's answer, for the page's range", () => {
  assert.deepEqual(sent.slice(0, 2).map(([, url]) => url), [
    "/api/projects/3/dashboard/?from=2026-11-01&to=2026-11-28", "/api/projects/3/quality/?from=2026-11-01&to=2026-11-28",
  ]);
  assert.equal(root.querySelector("[data-counter=accepted]").textContent, "5");
  assert.equal(root.querySelector("[data-counter=submitted]").textContent, "2");
  assert.equal($("range-label").textContent, "2026-11-01 – 2026-11-28");
  assert.equal(root.querySelector("[data-figure=median_time]").textContent, "95 s");
  assert.equal(root.querySelector("[data-figure=pairs]").textContent, "4 / 1");
  assert.equal($("dashboard-error").hidden, true);
  assert.ok(root.dataset.loaded);
});

test("each chart is drawn from the figures: one dataset per annotator a day, stacked; counts on whole ticks", () => {
  assert.deepEqual(CHARTS.map((name) => drawn(name).length), [1, 1, 1, 1, 1, 1]);
  const [done] = drawn("done_per_day");
  assert.equal(done.config.type, "bar");
  assert.deepEqual(done.config.data.labels, ["2026-11-27", "2026-11-28"]);
  assert.deepEqual(done.config.data.datasets.map((d) => [d.label, d.data]), [["ann", [2, 0]], ["bob", [0, 1]]]);
  assert.equal(done.config.options.plugins.legend.display, true);
  assert.deepEqual(done.config.options.scales.y.ticks, { precision: 0 });
  const [review] = drawn("review");
  assert.deepEqual(review.config.data.datasets.map((d) => [d.label, d.data]), [["accepted", [4]], ["rejected", [1]]]);
  const [agreement] = drawn("agreement");
  assert.deepEqual(agreement.config.data.datasets[0].data, [0.5, 1, -0.125, 0.75]);
  assert.equal(agreement.config.options.scales.y.min, -0.125);  // a negative α shows below zero
  assert.equal(drawn("error_categories")[0].config.options.indexAxis, "y");
  for (const name of CHARTS) assert.equal(section(name).dataset.drawn, "1");
  assert.equal(section("review").querySelector("[data-chart-empty]").hidden, true);
});

test("each annotator's quality: flags, the parts, no gold changes yet, and a Pause / Resume for the lead", () => {
  assert.equal($("quality-flagged").textContent, "1 annotator is flagged.");
  const rows = $("quality-table").querySelector("tbody").children;
  assert.deepEqual(rows.map((tr) => [tr.dataset.annotator, tr.dataset.flags, tr.dataset.paused, tr.classList.contains("flagged")]),
    [["ann", "too_fast", "0", true], ["bob", "", "1", false]]);
  assert.equal(rows[0].children[0].querySelector(".flag-marker").textContent, "⚑ flagged");
  assert.equal(rows[0].querySelector("ul.flags").textContent, "Too fast: median 4.5 s per trace, below 10 s.");
  assert.equal(rows[1].querySelector(".flag-none").textContent, "none");
  assert.equal(rows[1].querySelector(".paused-note").textContent, "Queue paused");
  const headings = $("quality-table").querySelector("thead").children[0].children;
  assert.deepEqual(headings.slice(-2).map((th) => [th.textContent, th.scope]), [["Flags", "col"], ["Queue", "col"]]);
  assert.equal(rows[0].children[0].scope, "row");
  assert.deepEqual($("quality-parts").querySelector("tbody").children.map((tr) => tr.children.map((td) => td.textContent)),
    [["ann", "100.0 % of 5 (50.0–100.0 %)", "0.0 % of 1 (0.0–79.0 %)"], ["bob", "–", "–"]]);
  assert.deepEqual($("gold-changes").querySelector("ul").children.map((li) => li.textContent), ["No gold trace marked yet."]);
  assert.deepEqual(rows.map((tr) => tr.querySelector("button[data-pause]").textContent), ["Pause queue", "Resume"]);
});

test("a pause is sent for the annotator; a refused one says why and gives the button back", async () => {
  sent.length = 0;
  const pause = $("quality-table").querySelector("button[data-pause=ann]");
  pause.click();
  assert.equal(pause.disabled, true);
  await settle();
  assert.deepEqual(sent.map(([method, url, body]) => [method, url, body]), [
    ["POST", "/api/projects/3/quality/pause/", { annotator: "ann", paused: true }],
    ["GET", "/api/projects/3/quality/?from=2026-11-01&to=2026-11-28", undefined],  // the table read again
  ]);
  answers.pause = [403, { detail: "Only a lead can pause a queue.", kind: "forbidden" }];
  const again = $("quality-table").querySelector("button[data-pause=bob]");
  again.click();
  await settle();
  assert.equal($("quality-error").textContent, "Not changed: Only a lead can pause a queue.");
  assert.equal($("quality-error").hidden, false);
  assert.equal(again.disabled, false);
});

test("each chart's numbers download as CSV; the quality table's are the server's own rows", async () => {
  const blobs = [];
  const realCreate = URL.createObjectURL;
  URL.createObjectURL = (blob) => { blobs.push(blob); return `blob:${blobs.length}`; };
  const links = [];
  doc.body.addEventListener("click", (event) => { if (event.target.tagName === "A") links.push([event.target.download, event.target.href]); });
  try {
    root.querySelector("[data-csv=review]").click();
    root.querySelector("[data-csv=quality]").click();
    root.querySelector("[data-csv=nothing]").click();  // no such table: nothing
  } finally { URL.createObjectURL = realCreate; }
  assert.deepEqual(links, [["review.csv", "blob:1"], ["quality.csv", "blob:2"]]);
  assert.equal(await blobs[0].text(), "annotator,accepted,rejected,acceptance_rate\r\nann,4,1,0.8\r\n");
  assert.equal(await blobs[1].text(), "annotator,answers,flags\r\nann,10,too_fast\r\nbob,0,\r\n");
  assert.equal(doc.body.querySelector("a"), null);  // the link is taken away once clicked
});

test("a live event about an annotation refetches both, once for a burst; a quality event only the table", async () => {
  const timers = [];
  const real = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
  globalThis.setTimeout = (fn, ms) => { timers.push({ fn, ms, cleared: false }); return timers.length; };
  globalThis.clearTimeout = (id) => { if (id) timers[id - 1].cleared = true; };
  try {
    for (let i = 0; i < 3; i++) doc.dispatchEvent(new Event("studio:live", { detail: { type: "annotation" } }));
    doc.dispatchEvent(new Event("studio:live", { detail: { type: "presence" } }));
  } finally { Object.assign(globalThis, real); }
  const live = timers.filter((t) => !t.cleared);
  assert.equal(live.length, 2);  // the figures and the table, each once
  assert.deepEqual(live.map((t) => t.ms), [300, 300]);
  sent.length = 0;
  const before = charts.length;
  live.forEach((t) => t.fn());
  await settle();
  assert.deepEqual(sent.map(([, url]) => url.split("?")[0]), ["/api/projects/3/dashboard/", "/api/projects/3/quality/"]);
  assert.equal(charts.length, before + CHARTS.length);
  assert.ok(charts.slice(0, before).every((chart) => chart.destroyed), "the old charts are destroyed, not drawn over");
});

test("a chart with nothing to show says so; a refused load says why; a failed one says it will retry", async () => {
  const empty = { ...project, done_per_day: [], review: { ...project.review, per_annotator: [] }, median_time: { overall_s: null, per_annotator_s: {} },
    error_categories: [{ category: "wrong element", count: 0 }], first_error_position: [], agreement: { ...project.agreement, pairs: 0 } };
  answers.dashboard = [200, empty];
  doc.dispatchEvent(new Event("studio:live", { detail: { type: "annotation" } }));
  await new Promise((resolve) => setTimeout(resolve, 350));
  await settle();
  for (const name of CHARTS) {
    assert.equal(section(name).dataset.empty, "1", name);
    assert.equal(section(name).querySelector("[data-chart-empty]").hidden, false, name);
    assert.equal(section(name).querySelector("canvas").hidden, true, name);
  }
  answers.dashboard = [403, { detail: "Only this project's leads see its dashboard.", kind: "forbidden" }];
  answers.quality = [500, { detail: "database down" }];
  doc.dispatchEvent(new Event("studio:live", { detail: { type: "annotation" } }));
  await new Promise((resolve) => setTimeout(resolve, 350));
  await settle();
  assert.equal($("dashboard-error").textContent, "Only this project's leads see its dashboard.");
  assert.equal($("dashboard-error").hidden, false);
  assert.equal($("quality-error").textContent, "Each annotator's quality could not be loaded: database down");
  answers.dashboard = [502, {}];
  answers.quality = "offline";
  doc.dispatchEvent(new Event("studio:live", { detail: { type: "annotation" } }));
  await new Promise((resolve) => setTimeout(resolve, 350));
  await settle();
  assert.equal($("dashboard-error").textContent, "The dashboard could not be loaded (the server answered 502).");
  assert.equal($("quality-error").textContent, "Each annotator's quality could not be loaded: the server could not be reached; retrying on the next update.");
  answers.dashboard = "offline";
  doc.dispatchEvent(new Event("studio:live", { detail: { type: "annotation" } }));
  await new Promise((resolve) => setTimeout(resolve, 350));
  await settle();
  assert.equal($("dashboard-error").textContent, "Could not load the dashboard; retrying on the next update.");
});
