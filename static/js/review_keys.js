/* The review page's rules that need no page: its keys and the queue's row. Pure (tests/js/review.test.mjs);
   static/js/review.js wires them. */

/* The command of a key press on one review, or null: "reject_send" (Ctrl+Enter in the comment), else, outside any
   field and with no modifier, "zoom_in" / "zoom_out" (+ = -), "zoom_reset" (0), "screen_next" / "screen_previous"
   (j k: the trace viewer's screens), "accept" (a), "reject" (r: the comment takes the focus), "next" (→: the next
   undecided review). ``inComment``: the comment has the focus; ``typing``: some field has it. */
export function reviewCommandFor(event, { typing, inComment }) {
  if (event.defaultPrevented || event.altKey || event.metaKey) return null;
  if (typing) return inComment && event.key === "Enter" && event.ctrlKey ? "reject_send" : null;
  if (event.ctrlKey) return null;
  return REVIEW_KEYS[event.key] || null;
}

const REVIEW_KEYS = {
  "+": "zoom_in", "=": "zoom_in", "-": "zoom_out", "0": "zoom_reset", j: "screen_next", k: "screen_previous",
  a: "accept", r: "reject", ArrowRight: "next",
};

/* The texts of a review queue's row for ``review`` (an entry of GET /api/reviews/): the trace, the annotator, the
   verdict, when it was submitted (to the minute, as the page's template writes it). */
export function queueRowTexts(review) {
  const submitted = review.submitted_at ? review.submitted_at.slice(0, 16).replace("T", " ") : "";
  return [review.external_id, review.annotator, review.verdict_text, submitted];
}
