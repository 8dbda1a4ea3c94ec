// @ts-check
/* The whole trace on a review page: the filmstrip and the viewer (every verdict; the only screens of a "no error"
   answer). The page carries the screens around τ (annotation.review.selectors.review_viewer: a short trace's whole);
   the others come from GET /api/reviews/<id>/steps/ a window at a time, half a window kept loaded on either side of
   the screen shown (the workspace's rule, workspace/steps.js windowsToLoad), and are kept for the page's life.
   Screens are named by position (step index - 1; the final screen last). */
import { api } from "../api.js";
import { windowsToLoad } from "../workspace/steps.js";
import { clampPosition, missingTitle, screenLoaded, screenName, screenTitle, thumbNumber, viewerLayout, windowProblem } from "../review_logic.js";
import { gettext, interpolate } from "../i18n.js";

/**
 * A screen as the server gives it (annotation.review.selectors): its step's index, title, screenshot and thumbnail
 * (when recorded), the recorded thought and action, the marks of the actions on it.
 * @typedef {{ index: number, title: string, image?: string, thumb?: string, size?: import("../geometry.js").Shot,
 *   thought: string, action: string, is_tau?: boolean, markers: import("../review_logic.js").Marker[] }} Screen
 */
/**
 * The page's trace-viewer-data: the trace's steps, whether it kept a final screen, τ, the screens it carries, where
 * the others are read and how many at a time.
 * @typedef {{ step_count: number, has_final: boolean, tau: number | null, screens: Screen[], steps_url: string,
 *   window: number }} ViewerData
 */
/**
 * The viewer: the trace's steps and screens (``total``: the final screen too); ``screenAt(position)``: the screen
 * there once loaded; ``loadAround(position)`` loads what is missing around it and resolves to "" once its screen is
 * here, else why not; ``showScreen(position)``; ``step(delta)``: the screen ``delta`` after the one shown.
 * @typedef {{ stepCount: number, total: number, screenAt: (position: number | null) => Screen | undefined,
 *   loadAround: (position: number) => Promise<string>, showScreen: (position: number) => Promise<void>,
 *   step: (delta: number) => Promise<void> }} Viewer
 */

/**
 * The viewer over ``data`` (null on a page without one: then it has no screens), drawn into ``strip`` (a numbered
 * button for every screen) and ``frame`` (the screen shown; its caption's elements are found by id). Opens on τ's
 * screen, else the first.
 * @param {{ data: ViewerData | null, strip: HTMLElement | null, frame: HTMLElement | null,
 *   drawMarkers: (frame: Element, markers: import("../review_logic.js").Marker[]) => void }} parts
 * @returns {Viewer}
 */
export function createViewer({ data, strip, frame, drawMarkers }) {
  const { stepCount, total, start } = viewerLayout(data);
  /** @type {Screen[]} */
  const screens = new Array(total);  // position → its screen, once here
  if (data) for (const screen of data.screens) screens[screen.index - 1] = screen;
  /** @type {Map<number, Promise<string>>} */
  const pending = new Map();  // window start → its request
  let shown = 0;
  /** @param {number} index The final screen comes with the last step's window. */
  const hasScreen = (index) => screenLoaded(screens, index, stepCount, data.has_final);
  /** @param {number[]} range a window's first and last step @returns {Promise<string>} */
  function fetchWindow([first, last]) {
    if (pending.has(first)) return pending.get(first);
    const request = api("GET", `${data.steps_url}?first=${first}&last=${last}`).then((res) => {
      pending.delete(first);
      const problem = windowProblem(res);
      if (problem) return problem;
      for (const screen of res.data.screens) { screens[screen.index - 1] = screen; addThumb(screen.index - 1); }
      keepCurrentInView();
      return "";
    });
    pending.set(first, request);
    return request;
  }
  /**
   * Loads what is missing around ``position``; resolves to "" once its screen is here, else why it is not.
   * @param {number} position
   * @returns {Promise<string>}
   */
  function loadAround(position) {
    const index = Math.min(position + 1, stepCount);
    const requests = windowsToLoad(hasScreen, index, stepCount, data.window).map(fetchWindow);
    if (screens[position]) return Promise.resolve("");
    return requests[0] || Promise.resolve("not found");
  }
  /** @param {number} position */
  const thumbAt = (position) => /** @type {HTMLElement | undefined} */ (strip && strip.children[position]);
  function markCurrent() {
    if (!strip) return;
    const previous = strip.querySelector("button[aria-current]");
    if (previous) { previous.classList.remove("current"); previous.removeAttribute("aria-current"); }
    const b = thumbAt(shown);
    if (!b) return;
    b.classList.add("current");
    b.setAttribute("aria-current", "step");
    keepCurrentInView();
  }
  // The strip scrolls to the current screen; the page itself never jumps. Redone as thumbnails arrive (a button
  // widens when its thumbnail is added).
  function keepCurrentInView() {
    const b = thumbAt(shown);
    if (b && (b.offsetLeft < strip.scrollLeft || b.offsetLeft + b.offsetWidth > strip.scrollLeft + strip.clientWidth)) {
      strip.scrollLeft = b.offsetLeft - strip.clientWidth / 2;
    }
  }
  /**
   * @param {number} position
   * @param {string} problem why its screen could not be loaded ("" while loading)
   */
  function render(position, problem) {
    const screen = screens[position];
    const image = /** @type {HTMLImageElement} */ (document.getElementById("viewer-image"));
    const title = document.getElementById("viewer-title");
    if (!screen) {
      frame.hidden = true;
      title.textContent = missingTitle(position, stepCount, problem);
      document.getElementById("viewer-thought").textContent = "";
      document.getElementById("viewer-action").textContent = "";
      drawMarkers(frame, []);
      return;
    }
    if (screen.image) {
      image.src = screen.image;
      image.alt = interpolate(gettext("Screenshot of %(screen)s"), { screen: screen.title });
      frame.hidden = false;
    } else frame.hidden = true;
    title.textContent = screenTitle(screen);
    document.getElementById("viewer-thought").textContent = screen.thought;
    document.getElementById("viewer-action").textContent = screen.action;
    drawMarkers(frame, screen.markers);
  }
  /**
   * Shows the screen at ``position``, reading its window first when the page lacks it.
   * @param {number} position
   * @returns {Promise<void>}
   */
  function showScreen(position) {
    if (!total) return Promise.resolve();
    shown = clampPosition(position, total);
    const wanted = shown;
    markCurrent();
    render(wanted, "");
    return loadAround(wanted).then((problem) => { if (shown === wanted) render(wanted, problem); });
  }
  /** @param {number} position A screen's thumbnail once its data is here (the strip has a numbered button for every screen from the start). */
  function addThumb(position) {
    const b = thumbAt(position), screen = screens[position];
    if (!b || !screen || !screen.thumb || b.querySelector("img")) return;
    const im = document.createElement("img");
    im.src = screen.thumb; im.alt = ""; im.loading = "lazy";
    im.addEventListener("load", keepCurrentInView);
    b.prepend(im);
  }
  if (strip && total) {
    const sized = screens.find((screen) => screen && screen.size && screen.size.width > 0 && screen.size.height > 0);
    const aspect = sized ? sized.size.width / sized.size.height : 1.6;
    strip.style.setProperty("--viewer-thumb-aspect", String(Math.min(2.4, Math.max(0.45, aspect))));
    const buttons = [];
    for (let i = 0; i < total; i++) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "viewer-thumb" + (data.tau && i + 1 === data.tau ? " tau" : "");
      b.title = screenName(i, stepCount);
      const n = document.createElement("span");
      n.className = "viewer-num";
      n.textContent = thumbNumber(i, stepCount);
      b.append(n);
      b.addEventListener("click", () => showScreen(i));
      buttons.push(b);
    }
    strip.append(...buttons);
    screens.forEach((_, i) => addThumb(i));
    showScreen(start);
  }
  return {
    stepCount,
    total,
    /** @param {number | null} position @returns {Screen | undefined} the screen there, if loaded */
    screenAt: (position) => (position === null ? undefined : screens[position]),
    loadAround,
    showScreen,
    /** @param {number} delta shows the screen ``delta`` after the one shown (before it when negative) */
    step: (delta) => showScreen(shown + delta),
  };
}
