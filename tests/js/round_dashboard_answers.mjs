// The round dashboard's page for its page tests (round_dashboard_*.test.mjs, one page each: the module starts once per
// load, and a load is a test file's own): a
// stand-in document laid out as frontend_templates/dashboard/rounds.html lays it out, a stand-in Chart.js, a fetch
// that answers the rounds and the replay counts as the server would (annotation.dashboards.round_dashboard, the
// replay counts), and the CSV downloads caught.
import { standInDocument } from "./stand_in_dom.mjs";

export const round = (name, extra) => ({
  name, checkpoint: "ckpt-" + name, weights_hash: "ab".repeat(32), ran_at: "2026-11-20T10:00:00+00:00",
  traces: 10, answers: 8, verdicts: { error: 4, no_error: 3, unusable: 1 }, error_share: 0.5, unusable_share: 0.125,
  first_error_step: { median: 2, mean: 2.5, mean_relative: 0.4, histogram: [{ step: 1, count: 1 }, { step: 2, count: 3 }] },
  first_error_position: [{ bucket: "0-0.5", count: 4 }],
  error_categories: [{ category: "wrong element", count: 3 }, { category: "typo", count: 1 }],
  median_time_s: 61, suggestion_match: null,
  change: { error_share: null, unusable_share: null, first_error_step_median: null, first_error_relative_mean: null,
    median_time_s: null, suggestion_match_rate: null },
  ...extra,
});

export const ROUNDS = { rounds: [
  round("r1", { error_share: 0.6 }),
  round("r2", {
    suggestion_match: { compared: 4, matched: 3, rate: 0.75 }, median_time_s: 57,
    first_error_step: { median: 1.5, mean: 1.5, mean_relative: 0.3, histogram: [{ step: 1, count: 2 }, { step: 2, count: 2 }] },
    first_error_position: [{ bucket: "0-0.5", count: 3 }], error_categories: [{ category: "wrong element", count: 2 }],
    change: { error_share: -0.1, unusable_share: 0, first_error_step_median: -0.5, first_error_relative_mean: -0.1,
      median_time_s: -4, suggestion_match_rate: null },
  }),
] };

export const REPLAYS = { rounds: [
  { round_name: "r1", verified: 2, refuted: 1, waiting: 0, not_replayed: 4 },
  { round_name: "", verified: 0, refuted: 0, waiting: 1, not_replayed: 0 },
] };

const CHARTS = ["shares", "first_error_step", "first_error_position", "error_categories", "median_time", "suggestion_match"];

/** The page, answered with ``answers`` ({rounds, replays}: each [status, data], or "offline" for a fetch that fails). */
export function roundsPage(answers = { rounds: [200, ROUNDS], replays: [200, REPLAYS] }) {
  const doc = standInDocument();
  const m = doc.make;
  const csv = (name) => m("button", { type: "button", data: { csv: name } });
  const root = m("div", { id: "rounds", data: { url: "/api/projects/3/rounds/dashboard/" } },
    m("p", { id: "rounds-error", hidden: true }), m("p", { id: "rounds-empty", hidden: true }),
    m("section", { data: { whenRounds: "" } }, csv("summary"), m("table", { id: "round-table" }, m("thead"), m("tbody"))),
    m("section", { id: "round-replays", hidden: true, data: { url: "/api/projects/3/replays/counts/" } },
      csv("replays"), m("table", { id: "round-replay-table" }, m("thead"), m("tbody"))),
    m("div", { data: { whenRounds: "" } }, ...CHARTS.map((name) => m("section", { data: { chart: name } }, csv(name), m("canvas")))));
  doc.body.append(root);

  const charts = [];
  window.Chart = class {
    constructor(canvas, config) { Object.assign(this, { canvas, config, destroyed: false }); charts.push(this); }
    destroy() { this.destroyed = true; }
  };
  const asked = [];
  globalThis.fetch = async (url, init) => {
    asked.push([url, init.credentials]);
    const answer = url.includes("/replays/") ? answers.replays : answers.rounds;
    if (answer === "offline") throw new TypeError("fetch failed");
    const [status, data] = answer;
    return { status, ok: status >= 200 && status < 300, json: async () => data };
  };
  const blobs = [];
  URL.createObjectURL = (blob) => { blobs.push(blob); return `blob:${blobs.length - 1}`; };
  const downloads = [];
  doc.body.addEventListener("click", (event) => {
    if (event.target.tagName === "A") downloads.push({ name: event.target.download, blob: blobs[Number(event.target.href.slice(5))] });
  });
  const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };
  return { doc, root, charts, asked, downloads, answers, settle };
}

/** The page answered with ``answers``, once static/js/round_dashboard.js has started on it and its answers are in. */
export async function startedPage(answers) {
  const page = roundsPage(answers);
  await import("../../static/js/round_dashboard.js");
  await page.settle();
  return { ...page, error: page.doc.getElementById("rounds-error") };
}
