// Each annotator's quality on the project dashboard, from the server's report (annotation.quality.selectors.
// quality_dashboard: every figure, every 95 % Wilson interval and every flag with its words is the server's; this
// module only writes them): the annotators' table, the gold accuracy per part, and the CSV, which is the server's own
// rows (quality_csv_rows, one function for the page's figures and the file). Pure: no DOM.
import { num, pct } from "./figures.js";

/* A share with the count it stands on and its 95 % interval: "80.0 % of 10 (49.0–94.3 %)"; ``none`` when n is 0. */
export function shareText(share, none) {
  if (!share || !share.n) return none === undefined ? "–" : none;
  const interval = share.interval ? " (" + (share.interval[0] * 100).toFixed(1) + "–" + (share.interval[1] * 100).toFixed(1) + " %)" : "";
  return pct(share.share) + " of " + share.n + interval;
}

/* The "no error" rate beside the project's: "60.0 % of 10 (project 25.0 %)". */
export function noErrorText(a, project) {
  if (!a.answers) return "–";
  return pct(a.no_error_rate) + " of " + a.answers + " (project " + pct(project.no_error_rate) + ")";
}

/* The flags' words, one a line (the server's words: the page makes none of its own). */
export const flagLines = (a) => a.flags.map((f) => f.words);

/* What the queue button says and does for an annotator: paused queues are resumed, open ones paused. */
export function pauseButton(a) {
  return a.paused ? { text: "Resume", paused: false, label: "Resume " + a.annotator + "'s queue" }
    : { text: "Pause queue", paused: true, label: "Pause " + a.annotator + "'s queue" };
}

const QUALIFICATION_WORDS = { open: "in progress", passed: "passed", failed: "failed" };

/* One annotator's row of the quality table: each cell's text and its figure's name (the cell's data-quality). */
export function qualityRow(a, report) {
  const c = a.identical_corrections, agreement = a.agreement;
  return [
    { text: a.annotator, figure: "annotator" },
    { text: shareText(a.gold, "no gold answers yet"), figure: "gold" },
    { text: agreement.pairs ? pct(agreement.exact) + " exact, " + pct(agreement.within_one) + " ±1 of " + agreement.pairs
      + (agreement.pairs === 1 ? " pair" : " pairs") : "no shared traces", figure: "agreement" },
    { text: a.median_time_s === null || a.median_time_s === undefined ? "–" : num(a.median_time_s, 0) + " s", figure: "median_time" },
    { text: noErrorText(a, report.project_figures), figure: "no_error" },
    { text: c.n ? pct(c.share) + " of " + c.n : "no corrections", figure: "identical" },
    { text: a.streak.current_no_error + " now, " + a.streak.longest_no_error + " longest", figure: "streak" },
    { text: a.qualification ? QUALIFICATION_WORDS[a.qualification] || a.qualification : "–", figure: "qualification" },
  ];
}

/* The headings of the quality table, in qualityRow's order (then the flags and the queue). */
export const QUALITY_HEADINGS = ["Annotator", "Gold accuracy (95 % interval)", "Agreement with peers (τ)",
  "Median time per trace", "“No error” rate", "Corrections identical to the recorded action", "“No error” streak",
  "Qualification"];

/* The gold accuracy per part: one row per annotator, a cell per part (the parts and their labels are the server's). */
export function partHeadings(report) {
  const first = report.annotators[0];
  return first ? first.gold.parts.map((p) => p.label) : [];
}

export function partRow(a) {
  return [{ text: a.annotator }, ...a.gold.parts.map((p) => ({ text: shareText(p, "–"), part: p.part }))];
}

/* The CSV table of the report: the server's own rows, header first. */
export function qualityCsv(report) {
  return { header: report.csv[0], rows: report.csv.slice(1) };
}

/* The line above the table: how many are flagged, in words. */
export function flaggedText(report) {
  const n = report.flagged;
  if (!report.annotators.length) return "No annotator in this project yet.";
  return n === 0 ? "No annotator is flagged." : n === 1 ? "1 annotator is flagged." : n + " annotators are flagged.";
}

/* The flags' bounds, from the project's settings: what a flag means on this project. */
export function boundsText(s) {
  return "Flagged: gold accuracy below " + pct(s.min_gold_accuracy) + " (once " + s.min_gold_answers + " gold answers are in), "
    + "a median under " + s.min_median_seconds + " s per trace, " + s.max_no_error_streak + " “no error” answers in a row.";
}
