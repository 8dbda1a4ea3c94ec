// The on-policy alternatives' markers (static/js/workspace/alternatives.js): what is drawn over the screenshot of the
// step they were sampled at, from the server's answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { alternativeMarks } from "../../static/js/workspace/alternatives.js";

const click = (x, y) => ({ type: "click", args: { start_box: [x, y] } });
const answer = (rows) => ({ job: { step: 4, status: "succeeded" }, alternatives: rows });

test("only parsed replies sampled at the step shown are drawn", () => {
  const data = answer([
    { number: 1, parsed: true, actions: [click(1, 1)] },
    { number: 2, parsed: false, text: "I would click", actions: [] },
  ]);
  assert.deepEqual(alternativeMarks(data, 4, null).map((m) => m.extra.label), ["1"]);
  assert.deepEqual(alternativeMarks(data, 3, null), []);
  assert.deepEqual(alternativeMarks(null, 4, null), []);
  assert.deepEqual(alternativeMarks({ alternatives: [] }, 4, null), []);
});

test("replies that act the same share one marker numbered with all of them, on the first one's row", () => {
  const data = answer([
    { number: 1, parsed: true, actions: [click(5, 5)] },
    { number: 2, parsed: true, actions: [click(9, 9)] },
    { number: 3, parsed: true, actions: [click(5, 5)] },
  ]);
  const marks = alternativeMarks(data, 4, null);
  assert.deepEqual(marks.map((m) => [m.action, m.extra.label, m.extra.row, m.extra.attrs["data-alt"]]), [
    [click(5, 5), "1,3", 3, "1 3"],
    [click(9, 9), "2", 4, "2"],
  ]);
});

test("a marker carries the mark its replies share and is hot when any of them is pointed at", () => {
  const data = answer([
    { number: 1, parsed: true, mark: "wrong", actions: [click(5, 5)] },
    { number: 2, parsed: true, mark: "wrong", actions: [click(5, 5)] },
    { number: 3, parsed: true, mark: "taken", actions: [click(7, 7)] },
    { number: 4, parsed: true, mark: "", actions: [click(7, 7)] },
  ]);
  const classes = alternativeMarks(data, 4, 2).map((m) => m.extra.attrs.class);
  assert.deepEqual(classes, ["mark alt wrong hot", "mark alt"]);  // 3 and 4 disagree: no mark shown
});
