// The review page's keys and its queue's rows (static/js/review_keys.js, wired by static/js/review.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { queueRowTexts, reviewCommandFor } from "../../static/js/review_keys.js";

const key = (k, extra) => Object.assign({ key: k, ctrlKey: false, metaKey: false, altKey: false, defaultPrevented: false }, extra);
const outside = { typing: false, inComment: false };

test("outside any field: a accepts, r rejects, → goes on, j k step the viewer, + - 0 zoom", () => {
  const commands = ["a", "r", "ArrowRight", "j", "k", "+", "=", "-", "0"].map((k) => reviewCommandFor(key(k), outside));
  assert.deepEqual(commands, ["accept", "reject", "next", "screen_next", "screen_previous", "zoom_in", "zoom_in", "zoom_out", "zoom_reset"]);
  assert.equal(reviewCommandFor(key("x"), outside), null);
});

test("a modifier, a key handled already, or a field with the focus leave the keys alone", () => {
  assert.equal(reviewCommandFor(key("a", { ctrlKey: true }), outside), null);
  assert.equal(reviewCommandFor(key("a", { altKey: true }), outside), null);
  assert.equal(reviewCommandFor(key("a", { metaKey: true }), outside), null);
  assert.equal(reviewCommandFor(key("a", { defaultPrevented: true }), outside), null);
  assert.equal(reviewCommandFor(key("a"), { typing: true, inComment: false }), null);
  assert.equal(reviewCommandFor(key("r"), { typing: true, inComment: true }), null);  // an r typed in the comment
});

test("Ctrl+Enter in the comment sends the rejection; not from another field, not Enter alone", () => {
  assert.equal(reviewCommandFor(key("Enter", { ctrlKey: true }), { typing: true, inComment: true }), "reject_send");
  assert.equal(reviewCommandFor(key("Enter", { ctrlKey: true }), { typing: true, inComment: false }), null);
  assert.equal(reviewCommandFor(key("Enter"), { typing: true, inComment: true }), null);
  assert.equal(reviewCommandFor(key("Enter", { ctrlKey: true }), outside), null);
});

test("a queue row: the trace, the annotator, the verdict and when it was submitted, to the minute", () => {
  const review = { external_id: "t-7", annotator: "ann", verdict_text: "Error at step 3", submitted_at: "2026-11-28T10:52:12.123456Z" };
  assert.deepEqual(queueRowTexts(review), ["t-7", "ann", "Error at step 3", "2026-11-28 10:52"]);
  assert.equal(queueRowTexts({ ...review, submitted_at: null })[3], "");
});
