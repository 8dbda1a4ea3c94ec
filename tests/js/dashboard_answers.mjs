// The server's answers the dashboards draw, in the shape annotation.dashboards.project_dashboard and
// annotation.quality.selectors.quality_dashboard give them: shared by the tests of their pure parts
// (dashboards.test.mjs, quality.test.mjs) and of the dashboard page (dashboard_page.test.mjs).

export const project = {
  counters: { unassigned: 3, in_progress: 1, submitted: 2, accepted: 5 },
  range: { from: "2026-11-01", to: "2026-11-28" },
  done_per_day: [{ day: "2026-11-27", annotator: "ann", done: 2 }, { day: "2026-11-28", annotator: "bob", done: 1 }],
  review: { accepted: 5, rejected: 1, acceptance_rate: 5 / 6, rejection_rate: 1 / 6,
    per_annotator: [{ annotator: "ann", accepted: 4, rejected: 1, acceptance_rate: 0.8 }] },
  median_time: { overall_s: 95.4, per_annotator_s: { ann: 80, bob: 120.5 } },
  error_categories: [{ category: "wrong element", count: 3 }, { category: "=cmd", count: 1 }],
  first_error_position: [{ bucket: "0-0.25", count: 2 }],
  agreement: { first_error_exact: 0.5, first_error_within_one: 1, category_alpha: -0.125, action_type_agreement: 0.75,
    click_distance_median: 0.0123, click_distance_mean: 0.02, box_iou_median: null, box_iou_mean: null, box_pairs: 0,
    pairs: 4, open_disagreements: 1 },
  agreement_words: { action_type_pairs: "4 pairs", click_pairs: "3 pairs", box_pairs: "no pairs" },
  suggestion_match: null,
};

export const share = (right, n, interval) => ({ right, n, share: n ? right / n : null, interval: interval || null });
const parts = (n) => [
  { part: "verdict", label: "Verdict", ...share(n, n, [0.5, 1]) },
  { part: "point", label: "Point", ...share(0, n ? 1 : 0, n ? [0, 0.79] : null) },
];
const row = (name, extra) => ({
  annotator: name, annotator_id: 1, answers: 10, no_error_rate: 0.6, median_time_s: 4.5,
  identical_corrections: { n: 4, identical: 3, share: 0.75 }, agreement: { pairs: 1, exact: 1, within_one: 1 },
  streak: { current_no_error: 6, longest_no_error: 9 },
  gold: { ...share(3, 5, [0.2307, 0.8824]), parts: parts(5), removed: 0, rescored: 0 },
  qualification: "passed", paused: false, pause_reason: "",
  flags: [{ flag: "too_fast", value: 4.5, bound: 10, words: "Too fast: median 4.5 s per trace, below 10 s." }],
  ...extra,
});
export const report = {
  settings: { gold_every: 10, point_tolerance: 0.05, qualification_size: 5, qualification_pass_mark: 0.8,
    min_gold_accuracy: 0.8, min_gold_answers: 5, min_median_seconds: 10, max_no_error_streak: 15 },
  project_figures: { answers: 30, no_error_rate: 0.25, gold: share(3, 5) },
  annotators: [row("ann"), row("bob", { flags: [], paused: true, qualification: null, median_time_s: null,
    agreement: { pairs: 0, exact: null, within_one: null }, identical_corrections: { n: 0, identical: 0, share: null },
    gold: { ...share(0, 0), parts: parts(0), removed: 0, rescored: 0 }, answers: 0 })],
  flagged: 1,
  gold_changes: [],
  csv: [["annotator", "answers", "flags"], ["ann", 10, "too_fast"], ["bob", 0, ""]],
};
