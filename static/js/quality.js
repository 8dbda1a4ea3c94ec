// @ts-check
// Each annotator's quality on the project dashboard, from the server's report (annotation.quality.selectors.
// quality_dashboard: every figure, every 95 % Wilson interval and every flag with its words is the server's; this
// module only writes them): the annotators' table, the gold accuracy per part, and the CSV, which is the server's own
// rows (quality_csv_rows, one function for the page's figures and the file). Pure: no DOM.
import { num, pct } from "./figures.js";
import { gettext, interpolate, ngettext } from "./i18n.js";

/**
 * A share with the count it stands on and its 95 % Wilson interval (none without answers); a part of the gold
 * accuracy has its name and label too.
 * @typedef {{ share: number | null, n: number, right?: number, interval?: number[] | null, part?: string,
 *   label?: string }} Share
 */
/**
 * One annotator's figures in the server's report (annotation.quality.selectors.quality_dashboard).
 * @typedef {{ annotator: string, answers: number, no_error_rate: number | null, median_time_s: number | null,
 *   identical_corrections: { n: number, share: number | null }, agreement: { pairs: number, exact: number | null,
 *   within_one: number | null }, streak: { current_no_error: number, longest_no_error: number },
 *   gold: Share & { parts: Share[] }, qualification: string | null, paused: boolean,
 *   flags: { flag: string, words: string }[] }} AnnotatorQuality
 */
/**
 * The server's quality report: the annotators, the project's own figures, how many are flagged and the CSV's rows
 * (header first).
 * @typedef {{ annotators: AnnotatorQuality[], project_figures: { no_error_rate: number | null }, flagged: number,
 *   csv: any[][] }} QualityReport
 */
/** One cell of a table: its text and its figure's or part's name. @typedef {{ text: string, figure?: string, part?: string }} Cell */
/** The flags' bounds among the project's settings. @typedef {{ min_gold_accuracy: number, min_gold_answers: number,
 *   min_median_seconds: number, max_no_error_streak: number }} FlagBounds */

/* A share with the count it stands on and its 95 % interval: "80.0 % of 10 (49.0–94.3 %)"; ``none`` when n is 0. */
/** @param {Share | null | undefined} share @param {string} [none] @returns {string} */
export function shareText(share, none) {
  if (!share || !share.n) return none === undefined ? "–" : none;
  const interval = share.interval ? " (" + (share.interval[0] * 100).toFixed(1) + "–" + (share.interval[1] * 100).toFixed(1) + " %)" : "";
  return interpolate(gettext("%(share)s of %(n)s"), { share: pct(share.share), n: share.n }) + interval;
}

/* The "no error" rate beside the project's: "60.0 % of 10 (project 25.0 %)". */
/** @param {AnnotatorQuality} a @param {{ no_error_rate: number | null }} project @returns {string} */
export function noErrorText(a, project) {
  if (!a.answers) return "–";
  return interpolate(gettext("%(share)s of %(n)s (project %(project)s)"), { share: pct(a.no_error_rate), n: a.answers, project: pct(project.no_error_rate) });
}

/* The flags' words, one a line (the server's words: the page makes none of its own). */
/** @type {(a: AnnotatorQuality) => string[]} */
export const flagLines = (a) => a.flags.map((f) => f.words);

/* What the queue button says and does for an annotator: paused queues are resumed, open ones paused. */
/** @param {AnnotatorQuality} a @returns {{ text: string, paused: boolean, label: string }} */
export function pauseButton(a) {
  return a.paused ? { text: gettext("Resume"), paused: false, label: interpolate(gettext("Resume %(annotator)s's queue"), { annotator: a.annotator }) }
    : { text: gettext("Pause queue"), paused: true, label: interpolate(gettext("Pause %(annotator)s's queue"), { annotator: a.annotator }) };
}

const QUALIFICATION_WORDS = { open: gettext("in progress"), passed: gettext("passed"), failed: gettext("failed") };

/* One annotator's row of the quality table: each cell's text and its figure's name (the cell's data-quality). */
/** @param {AnnotatorQuality} a @param {QualityReport} report @returns {Cell[]} */
export function qualityRow(a, report) {
  const c = a.identical_corrections, agreement = a.agreement;
  return [
    { text: a.annotator, figure: "annotator" },
    { text: shareText(a.gold, gettext("no gold answers yet")), figure: "gold" },
    { text: agreement.pairs ? interpolate(ngettext("%(exact)s exact, %(within)s ±1 of %(pairs)s pair", "%(exact)s exact, %(within)s ±1 of %(pairs)s pairs", agreement.pairs),
      { exact: pct(agreement.exact), within: pct(agreement.within_one), pairs: agreement.pairs }) : gettext("no shared traces"), figure: "agreement" },
    { text: a.median_time_s === null || a.median_time_s === undefined ? "–" : interpolate(gettext("%(seconds)s s"), { seconds: num(a.median_time_s, 0) }), figure: "median_time" },
    { text: noErrorText(a, report.project_figures), figure: "no_error" },
    { text: c.n ? interpolate(gettext("%(share)s of %(n)s"), { share: pct(c.share), n: c.n }) : gettext("no corrections"), figure: "identical" },
    { text: interpolate(gettext("%(now)s now, %(longest)s longest"), { now: a.streak.current_no_error, longest: a.streak.longest_no_error }), figure: "streak" },
    { text: a.qualification ? QUALIFICATION_WORDS[a.qualification] || a.qualification : "–", figure: "qualification" },
  ];
}

/* The headings of the quality table, in qualityRow's order (then the flags and the queue). */
/** @type {string[]} */
export const QUALITY_HEADINGS = [gettext("Annotator"), gettext("Gold accuracy (95 % interval)"), gettext("Agreement with peers (τ)"),
  gettext("Median time per trace"), gettext("“No error” rate"), gettext("Corrections identical to the recorded action"), gettext("“No error” streak"),
  gettext("Qualification")];

/* The gold accuracy per part: one row per annotator, a cell per part (the parts and their labels are the server's). */
/** @param {QualityReport} report @returns {string[]} */
export function partHeadings(report) {
  const first = report.annotators[0];
  return first ? first.gold.parts.map((p) => p.label) : [];
}

/** @param {AnnotatorQuality} a @returns {Cell[]} */
export function partRow(a) {
  return [{ text: a.annotator }, ...a.gold.parts.map((p) => ({ text: shareText(p, "–"), part: p.part }))];
}

/* The CSV table of the report: the server's own rows, header first. */
/** @param {QualityReport} report @returns {{ header: any[], rows: any[][] }} */
export function qualityCsv(report) {
  return { header: report.csv[0], rows: report.csv.slice(1) };
}

/* The line above the table: how many are flagged, in words. */
/** @param {QualityReport} report @returns {string} */
export function flaggedText(report) {
  const n = report.flagged;
  if (!report.annotators.length) return gettext("No annotator in this project yet.");
  return n === 0 ? gettext("No annotator is flagged.") : interpolate(ngettext("%(n)s annotator is flagged.", "%(n)s annotators are flagged.", n), { n });
}

/* The flags' bounds, from the project's settings: what a flag means on this project. */
/** @param {FlagBounds} s @returns {string} */
export function boundsText(s) {
  return interpolate(gettext("Flagged: gold accuracy below %(accuracy)s (once %(answers)s gold answers are in), a median under %(seconds)s s per trace, %(streak)s “no error” answers in a row."),
    { accuracy: pct(s.min_gold_accuracy), answers: s.min_gold_answers, seconds: s.min_median_seconds, streak: s.max_no_error_streak });
}
