// The dashboard's table of each annotator's quality (static/js/quality.js) from the server's report
// (annotation.quality.selectors.quality_dashboard): the words of its figures, its flags (the server's words), the
// Pause / Resume button and the CSV, which is the server's own rows.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  boundsText, flaggedText, flagLines, noErrorText, partHeadings, partRow, pauseButton, QUALITY_HEADINGS, qualityCsv,
  qualityRow, shareText,
} from "../../static/js/quality.js";
import { report, share } from "./dashboard_answers.mjs";

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
