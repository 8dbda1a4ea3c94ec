// @ts-check
/* The review page's zoom: one view for every screenshot on the page (o_τ and o_τ+1 stay aligned). The rule is
   static/js/zoom.js's, as in the workspace: a wheel notch at most a quarter, "100 %" the screenshot's own pixels (the
   level button), "Fit" apart. The level is read on the frame last zoomed (the first at the start). */
import * as Zoom from "../zoom.js";
import { gettext } from "../i18n.js";

/** @typedef {{ scale: number, ox: number, oy: number }} View */
/**
 * The page's zoom: whether it has screenshots to zoom (``any``), a copy of the view now, the buttons' steps in and
 * out, 100 % (the screenshot's own pixels) and the fit.
 * @typedef {{ any: boolean, view: () => View, zoomIn: () => void, zoomOut: () => void, actualSize: () => void,
 *   fit: () => void }} ReviewZoom
 */

/**
 * Attaches the shared view to ``frames`` (each a .shot-frame with a .zoom-layer and an img) and shows its level on
 * ``levelButton`` and ``fitButton`` (either may be absent). ``relabel(frame)`` is called on every frame once a zoom
 * settles (the marks' labels are measured on screen).
 * @param {{ frames: HTMLElement[], levelButton: HTMLElement | null, fitButton: HTMLElement | null,
 *   relabel: (frame: HTMLElement) => void }} parts
 * @returns {ReviewZoom}
 */
export function createReviewZoom({ frames, levelButton, fitButton, relabel }) {
  /** @type {View} */
  let view = { ...Zoom.FIT };
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let settle;
  let measured = frames[0] || null;
  /** @param {HTMLElement} frame */
  const imageOf = (frame) => /** @type {HTMLImageElement} */ (frame.querySelector("img"));
  // The measured frame's width on the screen and its screenshot's own width; null until its image has loaded.
  function shownFrame() {
    const frame = [measured, ...frames].find((f) => f && f.clientWidth && !f.hidden && imageOf(f).naturalWidth);
    return frame ? { width: frame.clientWidth, imageWidth: imageOf(frame).naturalWidth } : null;
  }
  function showLevel() {
    if (!levelButton) return;
    const shown = shownFrame();
    levelButton.textContent = shown ? Zoom.levelText(view, shown.width, shown.imageWidth) : gettext("Fit");
    fitButton.setAttribute("aria-pressed", String(view.scale === 1));
  }
  /** @param {View} next */
  function setView(next) {
    view = next;
    for (const frame of frames) {
      const layer = /** @type {HTMLElement} */ (frame.querySelector(".zoom-layer"));
      layer.style.transform = Zoom.transform(view);
      layer.style.setProperty("--zoom", String(view.scale));  // marks keep their size on screen
      frame.classList.toggle("zoomed", view.scale > 1);
    }
    showLevel();
    clearTimeout(settle);
    settle = setTimeout(() => frames.forEach(relabel), 120);
  }
  for (const frame of frames) {
    Zoom.attach(frame, { get: () => view, set: (next) => { measured = frame; setView(next); } });
    imageOf(frame).addEventListener("load", showLevel);
  }
  window.addEventListener("resize", showLevel);
  showLevel();
  return {
    /** Whether the page has screenshots to zoom. */
    any: frames.length > 0,
    /** A copy of the view now. */
    view: () => ({ ...view }),
    /** One button's step in or out, about the frames' centre. */
    zoomIn: () => setView(Zoom.zoomAt(view, 0.5, 0.5, Zoom.BUTTON_STEP)),
    zoomOut: () => setView(Zoom.zoomAt(view, 0.5, 0.5, 1 / Zoom.BUTTON_STEP)),
    /** The screenshot's own pixels (once an image has loaded). */
    actualSize: () => {
      const shown = shownFrame();
      if (shown) setView(Zoom.actualSize(view, shown.width, shown.imageWidth));
    },
    fit: () => setView({ ...Zoom.FIT }),
  };
}
