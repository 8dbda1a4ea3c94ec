// @ts-check
/* Keys on one review: a accept, r reject (focus the comment; Ctrl+Enter sends), → next undecided, j k the viewer's
   screens, + - 0 the zoom (review_logic.js reviewCommandFor decides; this module runs the command). The key hints
   follow the person's choice (on, with Alt, off) and keyboard layout (static/js/keys.js). */
import { layoutKeys, shortcutMode, showKeyHints } from "../keys.js";
import { reviewCommandFor } from "../review_logic.js";

/**
 * Runs the review's commands on the page's key presses (a listener on the document; the key hints are written once,
 * then again as the layout's letters become known).
 * @param {{ zoom: Pick<import("./zoom.js").ReviewZoom, "any" | "zoomIn" | "zoomOut" | "fit">,
 *   viewer: Pick<import("./viewer.js").Viewer, "total" | "step"> }} parts
 * @returns {void}
 */
export function installReviewKeys({ zoom, viewer }) {
  const acceptButton = document.getElementById("accept-button");
  const rejectButton = document.getElementById("reject-button");
  const comment = document.getElementById("review-comment");
  const nextLink = document.getElementById("next-review");
  const keyMode = shortcutMode();
  layoutKeys((printed) => showKeyHints(document, keyMode, printed));
  // Each command: [whether its control is on this page, what it does]. A key whose control is not here is left alone.
  /** @type {Record<string, [() => boolean, () => unknown]>} */
  const reviewCommands = {
    reject_send: [() => !!rejectButton, () => rejectButton.click()],
    zoom_in: [() => zoom.any, zoom.zoomIn],
    zoom_out: [() => zoom.any, zoom.zoomOut],
    zoom_reset: [() => zoom.any, zoom.fit],
    screen_next: [() => !!viewer.total, () => viewer.step(1)],
    screen_previous: [() => !!viewer.total, () => viewer.step(-1)],
    accept: [() => !!acceptButton, () => acceptButton.click()],
    reject: [() => !!(comment && rejectButton), () => comment.focus()],
    next: [() => !!nextLink, () => nextLink.click()],
  };
  document.addEventListener("keydown", (event) => {
    const target = /** @type {Element} */ (event.target);
    const typing = !!(target.closest && target.closest("input, textarea, select, [contenteditable]"));
    const command = reviewCommandFor(event, { typing, inComment: !!comment && target === comment, mode: keyMode });
    if (!command) return;
    const [available, run] = reviewCommands[command];
    if (!available()) return;
    event.preventDefault();
    run();
  });
}
