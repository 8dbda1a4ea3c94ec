// The dashboard's table of each annotator's quality (static/js/quality.js) from the server's report
// (annotation.quality.selectors.quality_dashboard): the words of its figures, its flags (the server's words), the
// Pause / Resume button and the CSV, which is the server's own rows.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  boundsText, flaggedText, flagLines, noErrorText, partHeadings, partRow, pauseButton, QUALITY_HEADINGS, qualityCsv,
  qualityRow, shareText,
} from "../../static/js/quality.js";

const share = (right, n, interval) => ({ right, n, share: n ? right / n : null, interval: interval || null });
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
const report = {
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

test("a share with its count and 95 % interval, or the page's words for none", () => {
  assert.equal(shareText(report.annotators[0].gold), "60.0 % of 5 (23.1–88.2 %)");
  assert.equal(shareText(share(0, 0), "no gold answers yet"), "no gold answers yet");
  assert.equal(shareText(share(2, 2)), "100.0 % of 2");  // no interval served: none written
  assert.equal(shareText(undefined), "–");
});

test("an annotator's row: every figure in words, in the headings' order", () => {
  const cells = qualityRow(report.annotators[0], report);
  assert.equal(cells.length, QUALITY_HEADINGS.length);
  assert.deepEqual(cells.map((c) => c.text), [
    "ann", "60.0 % of 5 (23.1–88.2 %)", "100.0 % exact, 100.0 % ±1 of 1 pair", "5 s", "60.0 % of 10 (project 25.0 %)",
    "75.0 % of 4", "6 now, 9 longest", "passed",
  ]);
  assert.deepEqual(qualityRow(report.annotators[1], report).map((c) => c.text), [
    "bob", "no gold answers yet", "no shared traces", "–", "–", "no corrections", "6 now, 9 longest", "–",
  ]);
  assert.equal(noErrorText(report.annotators[0], { no_error_rate: null }), "60.0 % of 10 (project –)");
});

test("the flags are the server's words; the queue's button says what it will do", () => {
  assert.deepEqual(flagLines(report.annotators[0]), ["Too fast: median 4.5 s per trace, below 10 s."]);
  assert.deepEqual(flagLines(report.annotators[1]), []);
  assert.deepEqual(pauseButton(report.annotators[0]), { text: "Pause queue", paused: true, label: "Pause ann's queue" });
  assert.deepEqual(pauseButton(report.annotators[1]), { text: "Resume", paused: false, label: "Resume bob's queue" });
  assert.equal(flaggedText(report), "1 annotator is flagged.");
  assert.equal(flaggedText({ ...report, flagged: 2 }), "2 annotators are flagged.");
  assert.equal(flaggedText({ ...report, flagged: 0 }), "No annotator is flagged.");
  assert.equal(flaggedText({ ...report, annotators: [], flagged: 0 }), "No annotator in this project yet.");
  assert.equal(boundsText(report.settings), "Flagged: gold accuracy below 80.0 % (once 5 gold answers are in), a median "
    + "under 10 s per trace, 15 “no error” answers in a row.");
});

test("the gold accuracy part by part, with the server's parts and labels", () => {
  assert.deepEqual(partHeadings(report), ["Verdict", "Point"]);
  assert.deepEqual(partHeadings({ ...report, annotators: [] }), []);
  assert.deepEqual(partRow(report.annotators[0]).map((c) => c.text), ["ann", "100.0 % of 5 (50.0–100.0 %)", "0.0 % of 1 (0.0–79.0 %)"]);
  assert.deepEqual(partRow(report.annotators[1]).map((c) => c.text), ["bob", "–", "–"]);
});

test("the CSV is the server's rows, header first", () => {
  assert.deepEqual(qualityCsv(report), { header: ["annotator", "answers", "flags"], rows: [["ann", 10, "too_fast"], ["bob", 0, ""]] });
});
