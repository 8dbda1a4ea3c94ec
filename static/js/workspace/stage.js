// @ts-check
/* The stage: the screenshot panes with their overlays, zoom and pan (static/js/zoom.js), the loupe, element boxes
   drawn or snapped to, the filmstrip, and stepping between screens (measured by bench/annotate.py). */
import { $, el, svg } from "../dom.js";
import * as Zoom from "../zoom.js";
import { boxToPx, elementAt, inBox, pixelAt, toModel, toPx } from "../geometry.js";
import { asPrinted } from "../keys.js";
import { arrowHeads, drawAction, markUnit } from "./overlay.js";
import { gettext, interpolate } from "../i18n.js";

/** @type {(n: number) => string} ``n`` in subscript digits */
const sub = (n) => String(n).split("").map((d) => "₀₁₂₃₄₅₆₇₈₉"[+d]).join("");
export { sub };

const LOUPE_RADIUS = 75, LOUPE_POWER = 3;

/* A pane's caption: o with the screen's index, "step N", or the final screen after the last of ``stepCount``. */
/** @param {number} index @param {number} stepCount @returns {string} */
export function paneCaption(index, stepCount) {
  return index === stepCount + 1 ? `o${sub(stepCount + 1)} · ${gettext("final screen")}`
    : `o${sub(index)} · ${interpolate(gettext("step %(step)s"), { step: index })}`;
}

/* What a pane without a screenshot says: no final screen kept, the step still loading (``loaded``: its step is
   here), or a step recorded without one. */
/** @param {number} index @param {number} stepCount @param {boolean} loaded @returns {string} */
export function missingShotText(index, stepCount, loaded) {
  return index > stepCount ? gettext("No screen after the last step was kept.")
    : !loaded ? gettext("Loading this step…") : gettext("No screenshot was recorded for this step.");
}

/* The loupe for the pointer at (clientX, clientY): null off the image, else its background's size and position
   (LOUPE_POWER times the image, ``image`` its on-screen box, centred on the point) and its [left, top] in the frame
   (``box`` its on-screen box): up and to the right of the point, so it never hides it; flipped near the edges. */
/**
 * @param {{ left: number, top: number, width: number, height: number }} image
 * @param {{ left: number, top: number, width: number, height: number }} box
 * @param {number} clientX @param {number} clientY
 * @returns {{ size: number[], position: number[], at: number[] } | null}
 */
export function loupePlacement(image, box, clientX, clientY) {
  const fx = (clientX - image.left) / image.width, fy = (clientY - image.top) / image.height;
  if (fx < 0 || fx > 1 || fy < 0 || fy > 1) return null;
  const width = image.width * LOUPE_POWER, height = image.height * LOUPE_POWER;
  let left = clientX - box.left + 24, top = clientY - box.top - 2 * LOUPE_RADIUS - 24;
  if (left + 2 * LOUPE_RADIUS > box.width) left = clientX - box.left - 2 * LOUPE_RADIUS - 24;
  if (top < 0) top = clientY - box.top + 24;
  return { size: [width, height], position: [LOUPE_RADIUS - fx * width, LOUPE_RADIUS - fy * height], at: [left, top] };
}

/* The placing hint under a correction's screen, {text, outside}: ``text`` null once the action's points are placed;
   ``outside`` when a placed point is outside the element box drawn for it (the action is invalid, saving waits).
   ``slot``: "corrected" / "reflection"; ``action``: the slot's action (null before a type); ``points``: its type's
   point arguments (editor.js pointArgsOf); ``hints``: the hint labels open on this slot, if any; ``hasShot``: the
   screen has a screenshot. */
/**
 * @param {{ slot: string, action: import("../action_editor.js").Action | null,
 *   points: import("../action_editor.js").ArgSpec[], hints: { kind: string } | null | undefined, hasShot: boolean }} parts
 * @returns {{ text: string | null, outside: boolean }}
 */
export function placeHint({ slot, action, points, hints, hasShot }) {
  const pts = points.filter((p) => p.required || points.every((q) => !q.required));
  const name = slot === "corrected" ? gettext("corrected") : gettext("post-reflection");
  const placed = pts.length && pts.every((p) => Array.isArray(action.args[p.name]));
  const outside = !!(action && Array.isArray(action.target_box) && pts.map((p) => action.args[p.name]).find((v) => Array.isArray(v) && !inBox(action.target_box, v)));
  // A step the source kept without a screenshot has nothing to click: say so rather than ask for a click.
  const text = hints ? (hints.kind === "cells"
    ? gettext("Type a cell's number to move the point into it (the arrows then halve within it); Esc closes the labels.")
    : gettext("Type an element's label to move the point onto it (Enter then places it as a click there would); Esc closes the labels."))
    : !hasShot ? gettext("This step has no screenshot, so no point can be placed on it: choose an action without a point, or mark the trace unusable.")
    : !action ? interpolate(gettext("Choose the %(name)s action type, then click the screenshot to place it."), { name })
    : outside ? interpolate(gettext("The point is outside the element box drawn for it, so the %(name)s action is invalid and saving waits: click inside the box, or clear the box."), { name })
    : placed ? null
    : pts.length ? interpolate(gettext("Click the screenshot to place %(points)s of the %(name)s %(type)s."), { points: pts.map((p) => p.name).join(gettext(" then ")), name, type: action.type })
      : interpolate(gettext("The %(type)s action has no point to place."), { type: action.type });
  return { text, outside };
}

/**
 * The stage: ``renderStage()``, ``renderStrip()``, ``redrawOverlays()``, ``announceStep()``, ``goTo(index)``,
 * ``prefetch(index)``, ``stepsLoaded(first, last)`` (a window of steps arrived), ``placeOnElement(slot, index,
 * element, px)`` (a click at pixel ``px``, on the recorded element ``element`` or null), the zoom's ``zoomAt(u, v,
 * factor)``, ``zoomReset()`` and ``zoomActual()``, and the keyboard cursor's ``showCursorLoupe()`` and
 * ``keepCursorInView()``.
 * @typedef {{ renderStage: () => void, renderStrip: () => void, redrawOverlays: () => void, announceStep: () => void,
 *   goTo: (index: number) => void, prefetch: (index: number) => void, stepsLoaded: (first: number, last: number) => void,
 *   placeOnElement: (slot: string, index: number, element: number | null, px: number[]) => void,
 *   zoomAt: (u: number, v: number, factor: number) => void, zoomReset: () => void, zoomActual: () => void,
 *   showCursorLoupe: () => void, keepCursorInView: () => void }} Stage
 */

/* The stage. ``page``: {root (the workspace's element), editable(), traceId, strip (the served marks of the
   filmstrip)}; ``store``: the workspace's state (current, form, cursor, zoom, overlay, compare, boxMode, table);
   ``steps``: steps.js's; ``editor``: editor.js's slotAt, pointArgsOf, takesBox, snaps, placePoint, setTargetBox,
   drawBox, clearBox; ``draft``: autosave.js's dirty() and save(); ``drawAlternatives(index, draw)``:
   alternatives.js's; ``undoable(label, change)``: undo.js's; ``hooks``: renderStep() (the whole page drawn for the
   screen shown: panels.js). Returns the functions below. */
/**
 * @param {{ page: Pick<import("./state.js").WorkspacePage, "root" | "editable" | "traceId" | "strip">,
 *   store: import("./state.js").Store, steps: import("./steps.js").Steps,
 *   editor: Pick<import("./editor.js").WorkspaceEditor, "slotAt" | "pointArgsOf" | "takesBox" | "snaps" | "placePoint" | "setTargetBox" | "drawBox" | "clearBox">,
 *   draft: Pick<import("./autosave.js").Draft, "dirty" | "save">,
 *   drawAlternatives: import("./alternatives.js").Alternatives["drawAlternatives"],
 *   undoable: import("./undo.js").Undoable, hooks: { renderStep: () => void } }} parts
 * @returns {Stage}
 */
export function createStage({ page, store, steps, editor, draft, drawAlternatives, undoable, hooks }) {
  const N = steps.count, LAST_VIEW = steps.lastView;
  const shotOf = steps.shotOf, elementsOf = steps.elementsOf;
  const current = () => store.get("current");
  const form = () => store.get("form");
  const cursor = () => store.get("cursor");
  const zoom = () => store.get("zoom");
  // An element box being drawn with the mouse ({slot, a, b}: corners in screenshot pixels), and the imported
  // element under the pointer ({index, element}: the screen and its element's index) that a click would snap to.
  let boxDrag = null, hoverElementAt = null;
  let wanted = null;  // the screen last asked for (shown once its window arrives, unless another was asked for since)

  // --- overlay drawing ---
  /* ``frame``: the pane's frame, whose width is the screenshot's on the screen at fit (0 before it is laid out). */
  function overlayLayer(index, options, shot, frame) {
    const layer = svg("svg", { viewBox: `0 0 ${shot.width} ${shot.height}`, class: "ws-overlay", preserveAspectRatio: "none" });
    layer.appendChild(arrowHeads());
    const imagePerScreen = frame && frame.clientWidth ? shot.width / frame.clientWidth : 0;
    const unit = markUnit(shot, zoom().scale, imagePerScreen);
    const draw = (action, tone, extra) => drawAction(layer, store.get("table"), shot, action, tone, Object.assign({ zoom: zoom().scale, imagePerScreen }, extra));
    if (store.get("overlay") && options.drawRecorded && index <= N) for (const a of (steps.step(index) || {}).actions || []) draw(a, "recorded");
    const slot = options.slot;
    // The alternatives under the correction: one taken sits where the correction starts, which stays on top.
    if (store.get("overlay")) drawAlternatives(index, draw);
    if (store.get("overlay") && slot && form().editor_state[slot]) draw(form().editor_state[slot], "fix");
    const box = (a, b, cls) => layer.appendChild(svg("rect", {
      x: Math.min(a[0], b[0]), y: Math.min(a[1], b[1]), width: Math.abs(b[0] - a[0]), height: Math.abs(b[1] - a[1]),
      "stroke-width": unit * 2, class: cls,
    }));
    // The element under the pointer, of those the source recorded on this screen (on a correction's screen: what a
    // click snaps to; on any other, what the recorded action was meant to hit).
    // The element the keyboard cursor jumped to is outlined as the hovered one is.
    const elements = elementsOf(index);
    const jumped = cursor() && slot && cursor().slot === slot && cursor().element != null ? { index, element: cursor().element } : null;
    const outlined = jumped || hoverElementAt;
    if (outlined !== null && outlined.index === index && elements[outlined.element]) {
      const e = boxToPx(shot, elements[outlined.element].box);
      box(e.slice(0, 2), e.slice(2), "ws-element-hover");
    }
    if (boxDrag && slot && boxDrag.slot === slot) box(boxDrag.a, boxDrag.b, "ws-box-draft");
    if (cursor() && slot && cursor().slot === slot && cursor().anchor) box(cursor().anchor, cursor().px, "ws-box-draft");
    if (cursor() && slot && cursor().slot === slot) {
      const [cx, cy] = cursor().px, arm = unit * 25;
      const g = svg("g", { class: "ws-cursor", "stroke-width": unit * 3 });
      g.appendChild(svg("line", { x1: cx - arm, y1: cy, x2: cx + arm, y2: cy }));
      g.appendChild(svg("line", { x1: cx, y1: cy - arm, x2: cx, y2: cy + arm }));
      g.appendChild(svg("circle", { cx, cy, r: arm / 3 }));
      layer.appendChild(g);
    }
    if (cursor() && slot && cursor().slot === slot && cursor().hints) drawHints(layer, shot, elements, cursor().hints, unit);
    return layer;
  }

  /* The hint labels (keyboard.js's hints key; workspace/hints.js): each at its element's top left corner, inside
     its box, the element's box outlined thinly so the label's element is plain; the cells' labels at their centres
     with the grid drawn. Only the labels that the keys typed so far begin stay, the typed part dimmed. A label is
     written as the person's layout prints its keys (keys.js ``asPrinted``: фв on a Russian one for the keys of ad). */
  function drawHints(layer, shot, elements, hints, unit) {
    // A cell's number is read from across the view: larger than an element's label.
    const font = (hints.kind === "cells" ? 24 : 14) * unit, pad = 3 * unit;
    const group = svg("g", { class: "ws-hints" });
    const label = (x, y, text, element) => {
      const g = svg("g", { class: "ws-hint", "data-label": text });
      if (element !== undefined) g.dataset.element = String(element);
      g.appendChild(svg("rect", { x, y, width: text.length * font * 0.72 + 2 * pad, height: font * 1.25, rx: 2 * unit, "stroke-width": unit }));
      const t = svg("text", { x: x + pad, y: y + font * 0.98, "font-size": font });
      const done = svg("tspan", { class: "ws-hint-typed" });
      done.textContent = asPrinted(text.slice(0, hints.typed.length)).toUpperCase();
      const rest = svg("tspan", {});
      rest.textContent = asPrinted(text.slice(hints.typed.length)).toUpperCase();
      t.append(done, rest);
      g.appendChild(t);
      group.appendChild(g);
    };
    const open = hints.items.filter((h) => h.label.startsWith(hints.typed));
    if (hints.kind === "cells") {
      for (const cell of hints.items) {
        const [[x0, x1], [y0, y1]] = cell.range;
        group.appendChild(svg("rect", { x: x0 * shot.width, y: y0 * shot.height, width: (x1 - x0) * shot.width, height: (y1 - y0) * shot.height, class: "ws-hint-cell", "stroke-width": unit }));
      }
      for (const cell of open) label(cell.at[0] * shot.width - font * 0.5, cell.at[1] * shot.height - font * 0.6, cell.label);
    } else {
      for (const h of open) {
        const b = boxToPx(shot, elements[h.element].box);
        group.appendChild(svg("rect", { x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1], class: "ws-hint-box", "stroke-width": unit }));
      }
      for (const h of open) { const b = boxToPx(shot, elements[h.element].box); label(b[0], b[1], h.label, h.element); }
    }
    layer.appendChild(group);
  }

  // A point on the transformed layer, in screenshot pixels (exact at every zoom and pan).
  const pxAt = (view, shot, event) => pixelAt(view.getBoundingClientRect(), shot, event.clientX, event.clientY);

  function shotPane(index, options) {
    const shot = shotOf(index);
    const pane = el("figure", { class: "ws-pane" });
    const caption = el("figcaption", {}, paneCaption(index, N));
    if (!shot) {
      pane.appendChild(el("div", { class: "ws-missing" }, missingShotText(index, N, steps.hasStep(index))));
      pane.appendChild(caption);
      return pane;
    }
    /** @type {HTMLDivElement & { redrawOverlay?: () => void }} */
    const frame = el("div", { class: "ws-frame" });
    frame.style.aspectRatio = `${shot.width} / ${shot.height}`;
    frame.style.setProperty("--shot-ratio", `${shot.width} / ${shot.height}`);  // fits it to the pane (workspace.css)
    // The image and its overlay move together inside the frame: zoom and pan transform this layer only.
    const view = el("div", { class: "ws-zoom" });
    view.style.transform = Zoom.transform(zoom());
    const img = el("img", { src: shot.url, alt: interpolate(gettext("screenshot of step %(step)s"), { step: index }), draggable: false, decoding: "async" });
    img.width = shot.width; img.height = shot.height;
    view.appendChild(img);
    view.appendChild(overlayLayer(index, options, shot, null));
    frame.appendChild(view);
    frame.redrawOverlay = () => view.replaceChild(overlayLayer(index, options, shot, frame), view.querySelector(".ws-overlay"));
    // Marker sizes depend on the screenshot's size on the screen, known once the frame is laid out (and again when
    // the window changes it); every overlay is redrawn, and pre-scoring's ghost into it (redrawOverlays).
    // Only a change of the frame's width changes marker sizes: a redraw on any other notice would replace the
    // overlay (and the keyboard cursor in it) for nothing.
    let drawnForWidth = null;  // the first notice, once the frame is laid out, always redraws
    new ResizeObserver(() => {
      if (frame.clientWidth === drawnForWidth) return;
      drawnForWidth = frame.clientWidth;
      redrawOverlays();
    }).observe(frame);
    const loupe = el("div", { class: "ws-loupe" });
    loupe.setAttribute("aria-hidden", "true");
    loupe.hidden = true;
    loupe.style.backgroundImage = `url("${shot.url}")`;
    frame.appendChild(loupe);
    const slot = options.slot;
    if (slot && page.editable()) {
      frame.classList.add("placing");
      frame.dataset.slot = slot;
      frame.addEventListener("click", (event) => {
        // (The click that ends a drag never reaches here: static/js/zoom.js swallows it.) Measured on the transformed layer: exact at every zoom and pan.
        const px = pxAt(view, shot, event);
        endKeyboardPlacement();
        placeOnElement(slot, index, elementAt(elementsOf(index), shot, px), px);
      });
    }
    attachZoomGestures(frame, view, loupe, !!(slot && page.editable()), { index, shot, slot });
    pane.appendChild(frame);
    pane.appendChild(caption);
    return pane;
  }

  /* A point placed (or a box drawn) with the mouse ends a keyboard placement, as Enter does: the keyboard cursor goes
     in, so the keys after it are the page's again (→ the next step, f the thought of the screen shown) and Enter
     places nothing where the cursor was left. */
  function endKeyboardPlacement() {
    if (cursor()) store.set("cursor", null);
  }

  /* A point placed at ``px`` (screenshot pixels) on screen ``index``, over recorded element ``element`` (its index,
     or null): a click, or Enter after the keyboard cursor jumped to an element. On an element outside the action's
     box, an action that snaps takes the element's box (its point goes to the box's centre); else the point is placed. */
  function placeOnElement(slot, index, element, px) {
    const shot = shotOf(index), action = form().editor_state[slot];
    if (element !== null && action && !inBox(action.target_box, toModel(shot, px)) && editor.snaps(action)) {
      editor.setTargetBox(slot, elementsOf(index)[element].box.slice());
    } else editor.placePoint(slot, toModel(shot, px));
  }

  // --- zoom, pan and the loupe ---
  // Gestures and the zoom arithmetic are static/js/zoom.js's (shared with the review page); + - 0 from the keyboard.
  // Every pane shares the one zoom (the store's), so o_i | o_i+1 stay aligned. While the view moves only a CSS
  // transform changes (cheap, every frame); the markers are redrawn at their on-screen size once it settles.
  let settleTimer = null;
  function setZoom(view) {
    store.set("zoom", view);
    const stage = $("ws-stage");
    for (const layer of stage.querySelectorAll(/** @type {"div"} */ (".ws-zoom"))) layer.style.transform = Zoom.transform(zoom());
    stage.classList.toggle("zoomed", zoom().scale > 1);
    showZoomLevel();
    clearTimeout(settleTimer);
    settleTimer = setTimeout(() => {
      redrawOverlays();
      if (cursor()) showCursorLoupe();
    }, 120);
  }
  const zoomAt = (u, v, factor) => setZoom(Zoom.zoomAt(zoom(), u, v, factor));
  const zoomReset = () => setZoom({ ...Zoom.FIT });
  // The frame the zoom is read against: the first pane's (every pane shares the view).
  const shownFrame = () => {
    const frame = $("ws-stage").querySelector(".ws-frame"), shot = shotOf(current());
    return frame && frame.clientWidth && shot ? { width: frame.clientWidth, shot } : null;
  };
  function zoomActual() {
    const shown = shownFrame();
    if (shown) setZoom(Zoom.actualSize(zoom(), shown.width, shown.shot.width));
  }
  // "100 %" is the screenshot's own pixels; fitted, the level says so ("Fit · 53 %").
  function showZoomLevel() {
    const shown = shownFrame();
    $("ws-zoom-level").textContent = shown ? Zoom.levelText(zoom(), shown.width, shown.shot.width) : "Fit";
    $("ws-zoom-fit").setAttribute("aria-pressed", String(zoom().scale === 1));
  }
  window.wsZoom = () => ({ ...zoom() });  // for tests

  /* Every pane's overlay drawn again (the zoom settled, alternatives arrived), then pre-scoring's ghost into it. */
  function redrawOverlays() {
    for (const frame of $("ws-stage").querySelectorAll(".ws-frame")) {
      const pane = /** @type {HTMLElement & { redrawOverlay?: () => void }} */ (frame);
      if (pane.redrawOverlay) pane.redrawOverlay();
    }
    showZoomLevel();
    announceStep();
  }

  function attachZoomGestures(frame, view, loupe, placing, pane) {
    Zoom.attach(frame, {
      get: () => zoom(),
      set: setZoom,
      hover: (event) => {
        if (placing && !cursor()) showLoupe(frame, view, loupe, event.clientX, event.clientY);
        hoverElement(frame, pane.index, pane.shot, pxAt(view, pane.shot, event));
      },
      leave: () => {
        if (!cursor()) loupe.hidden = true;
        if (hoverElementAt !== null) { hoverElementAt = null; if (frame.redrawOverlay) frame.redrawOverlay(); }
      },
      // Shift+drag (or any drag while "Draw box" is on) draws the target's element box instead of panning.
      draw: placing ? {
        start: (event) => {
          const action = form().editor_state[pane.slot];
          if (!(event.shiftKey || store.get("boxMode")) || !action || !editor.takesBox(action)) return false;
          const px = pxAt(view, pane.shot, event);
          boxDrag = { slot: pane.slot, a: px, b: px };
          return true;
        },
        move: (event) => { boxDrag.b = pxAt(view, pane.shot, event); frame.redrawOverlay(); },
        end: (event, cancelled) => {
          const drag = boxDrag;
          boxDrag = null;
          if (cancelled) { frame.redrawOverlay(); return; }
          drag.b = pxAt(view, pane.shot, event);
          endKeyboardPlacement();
          editor.drawBox(pane.slot, pane.shot, drag.a, drag.b);
        },
      } : null,
    });
  }

  function hoverElement(frame, index, shot, px) {
    const found = elementAt(elementsOf(index), shot, px);
    const now = hoverElementAt;
    if ((found === null && now === null) || (now && now.index === index && now.element === found)) return;
    hoverElementAt = found === null ? null : { index, element: found };
    frame.redrawOverlay();
  }

  // The loupe: LOUPE_POWER times what the frame shows, centred on the point that a click (or Enter) would place.
  function showLoupe(frame, view, loupe, clientX, clientY) {
    const placement = loupePlacement(view.getBoundingClientRect(), frame.getBoundingClientRect(), clientX, clientY);
    if (!placement) { loupe.hidden = true; return; }
    const { size: [width, height], position: [x, y], at: [left, top] } = placement;
    loupe.style.backgroundSize = `${width}px ${height}px`;
    loupe.style.backgroundPosition = `${x}px ${y}px`;
    loupe.style.left = `${left}px`;
    loupe.style.top = `${top}px`;
    loupe.hidden = false;
  }
  function showCursorLoupe() {
    const frame = document.querySelector("#ws-stage .ws-frame.placing");
    const shot = shotOf(current());
    if (!frame || !cursor() || !shot) return;
    const view = frame.querySelector(".ws-zoom"), image = view.getBoundingClientRect();
    const [x, y] = cursor().px;
    showLoupe(frame, view, frame.querySelector(".ws-loupe"), image.left + x / shot.width * image.width, image.top + y / shot.height * image.height);
  }
  // The keyboard cursor stays in view: when it leaves the zoomed region, the view centres on it.
  function keepCursorInView() {
    const shot = shotOf(current()), z = zoom();
    if (!cursor() || !shot || z.scale === 1) return;
    const fx = cursor().px[0] / shot.width, fy = cursor().px[1] / shot.height;
    const u = fx * z.scale + z.ox, v = fy * z.scale + z.oy;
    if (u > 0.05 && u < 0.95 && v > 0.05 && v < 0.95) return;
    store.set("zoom", Zoom.clamp(z.scale, 0.5 - fx * z.scale, 0.5 - fy * z.scale));
  }

  // --- step switch ---
  const prefetched = new Set();
  function prefetch(index) {
    steps.loadAround(index);  // the step data half a window either way (workspace/steps.js)
    for (const i of [index + 1, index - 1, index + 2]) {
      const shot = shotOf(i);
      if (shot && !prefetched.has(shot.url)) { prefetched.add(shot.url); const im = new Image(); im.decoding = "async"; im.src = shot.url; }
    }
  }

  function goTo(index) {
    index = Math.max(1, Math.min(LAST_VIEW, index));
    // A step whose data is not here yet (a jump far away) is shown once its window arrives, unless the annotator
    // has gone elsewhere meanwhile.
    wanted = index;
    if (!steps.hasStep(index)) {
      page.root.dataset.loadingStep = String(index);
      steps.loadAround(index).then((loaded) => {
        if (wanted !== index) return;
        delete page.root.dataset.loadingStep;
        if (loaded) goTo(index);
      });
      return;
    }
    delete page.root.dataset.loadingStep;
    store.set("cursor", null);
    performance.mark("ws-step-start");
    if (index !== current() && draft.dirty()) draft.save();
    const moved = index !== current();
    store.set("current", index);
    hooks.renderStep();
    if (moved) revealStepText();
    performance.mark("ws-step-end");
    performance.measure("ws-step-switch", "ws-step-start", "ws-step-end");
    prefetch(index);
  }
  window.wsGoTo = goTo; // for the benchmark and tests

  /* The side panel keeps its scroll from step to step, so the new step's text could start above its top, cut
     mid-sentence: scrolled back to show where it starts, with the step's suggestions above it when shown (nothing
     moves when the text's start is in view). */
  function revealStepText() {
    const side = document.querySelector(".ws-side");
    const panel = $("ws-step-num").closest(".ws-panel");
    const top = (node) => node.getBoundingClientRect().top - side.getBoundingClientRect().top;
    // (While correcting the step's panel is pinned in view and the suggestions go below the form: nothing to show.)
    if (side.classList.contains("correcting")) return;
    const suggestions = document.querySelector("#prescore:not([hidden])");
    if (top(panel) >= 0) return;
    side.scrollTop += top(suggestions || panel) - 8;
  }

  // What the strip marks on every step comes with the page (annotation.selectors.workspace_strip); the thumbnails
  // come with each step's data, filled in as its window arrives (the strip asks for the windows scrolled into view).
  const marks = page.strip || { without_shot: [], off_screen: [], gaps: {} };
  const withoutShot = new Set(marks.without_shot), offScreen = new Set(marks.off_screen);
  const thumbs = [];  // thumbs[i - 1]: the strip's button of screen i
  function fillThumb(b, i) {
    if (b.dataset.filled) return;
    const shot = shotOf(i);
    if (shot) {
      // Sized by the strip's box (workspace.css), so nothing moves while thumbnails stream in.
      b.prepend(el("img", { src: shot.thumb, alt: "", loading: "lazy", decoding: "async" }));
    } else if (i > N || withoutShot.has(i)) b.prepend(el("span", { class: "ws-thumb-missing" }, "—"));
    else return;  // its window has not arrived yet
    b.dataset.filled = "1";
    seen.unobserve(b);
  }
  const seen = new IntersectionObserver((entries) => {
    for (const entry of entries) if (entry.isIntersecting) steps.loadAround(+/** @type {HTMLElement} */ (entry.target).dataset.step);
  }, { root: $("ws-strip") });
  function stepsLoaded(first, last) {
    for (let i = first; i <= last; i++) if (thumbs[i - 1]) fillThumb(thumbs[i - 1], i);
    // o_{i+1} beside the step shown was waiting for its window.
    if (store.get("compare") && current() + 1 >= first && current() + 1 <= last) renderStage();
  }
  let marked = { current: null, tau: undefined };  // what the strip's classes show now
  const markThumb = (i, tau) => {
    const b = thumbs[i - 1];
    if (!b) return;
    b.classList.toggle("current", i === current());
    b.classList.toggle("tau", i === tau);
    b.classList.toggle("after-tau", !!tau && i > tau);
    if (i === current()) b.setAttribute("aria-current", "step"); else b.removeAttribute("aria-current");
  };

  /* The shape of every thumbnail's box: the first screenshot the page came with (a trace keeps one screen size,
     mostly), kept between a phone's portrait and a wide desktop's. */
  function thumbAspect() {
    const first = steps.list().find((step) => step && step.shot && step.shot.width > 0 && step.shot.height > 0);
    return Math.min(2.4, Math.max(0.45, first ? first.shot.width / first.shot.height : 1.6));
  }

  function renderStrip() {
    const strip = $("ws-strip");
    if (!strip.childElementCount) {
      strip.style.setProperty("--ws-thumb-aspect", String(thumbAspect()));
      for (let i = 1; i <= LAST_VIEW; i++) {
        // Out of the Tab order (j/k and the digits reach every step): Tab walks the form, not 30 thumbnails.
        const b = el("button", { type: "button", class: "ws-thumb", "data-step": i, title: i > N ? gettext("final screen") : interpolate(gettext("step %(step)s"), { step: i }), tabIndex: -1 });
        b.appendChild(el("span", { class: "ws-thumb-num" }, i > N ? "end" : i));
        // A recorded point off the screen (the server measured it at import): marked on its thumbnail.
        if (offScreen.has(i)) b.appendChild(el("span", { class: "ws-off-screen-mark", title: gettext("a recorded point outside the screen") }, gettext("off")));
        b.addEventListener("click", () => goTo(i));
        const gap = marks.gaps[i];
        if (gap) {
          // A gap in the recording: a visible break in the strip before this step.
          strip.appendChild(el("span", { class: "ws-gap-mark", title: interpolate(gettext("%(missing)s missing here"), { missing: gap.missing_before_words }) }, `⋯ ${gap.missing_before}`));
        }
        strip.appendChild(b);
        thumbs.push(b);
        fillThumb(b, i);
        if (!b.dataset.filled) seen.observe(b);
      }
    }
    const tau = form().verdict === "error" ? form().tau : null;
    // Only the thumbnails whose marks change are touched: a long trace's strip has thousands.
    if (tau !== marked.tau) for (let i = 1; i <= LAST_VIEW; i++) markThumb(i, tau);
    else for (const i of new Set([marked.current, current()])) markThumb(i, tau);
    marked = { current: current(), tau };
    const cur = thumbs[current() - 1];
    if (cur) cur.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  function renderStage() {
    const stage = $("ws-stage");
    const i = current();
    const slot = editor.slotAt(i);
    const panes = [shotPane(i, { drawRecorded: true, slot })];
    if (store.get("compare") && i < LAST_VIEW) panes.push(shotPane(i + 1, { drawRecorded: false, slot: null }));
    stage.replaceChildren(...panes);
    stage.classList.toggle("compare", store.get("compare"));
    stage.classList.toggle("zoomed", zoom().scale > 1);
    showZoomLevel();
    const tau = form().verdict === "error" ? form().tau : null;
    stage.classList.toggle("dimmed", !!tau && i > tau + 1);
    const hint = $("ws-place-hint");
    document.querySelector(".ws-side").classList.toggle("correcting", !!(slot && page.editable()));
    if (slot && page.editable()) {
      const a = form().editor_state[slot];
      const { text, outside } = placeHint({
        slot, action: a, points: a ? editor.pointArgsOf(a.type) : [],
        hints: cursor() && cursor().slot === slot && cursor().hints, hasShot: !!shotOf(i),
      });
      // A point outside the element box drawn for it makes the action invalid, and saves wait: said here, under
      // the click that did it, with the way out.
      hint.classList.toggle("ws-place-warning", outside);
      // Placed, the hint goes but keeps its room: the screenshot must not move under the next click.
      hint.hidden = false;
      hint.classList.toggle("ws-place-done", text === null);
      hint.replaceChildren(text || "\u00a0");
      if (outside) {
        const clear = el("button", { type: "button", class: "ws-ghost", id: "ws-hint-clear-box" }, gettext("Clear box"));
        clear.addEventListener("click", () => undoable("Cleared the element box", () => editor.clearBox(slot)));
        hint.append(" ", clear);
      }
    } else hint.hidden = true;
  }

  // Pre-scoring (static/js/prescore.js) listens for this to draw its strip, badges and ghost action.
  function announceStep() {
    const layer = document.querySelector("#ws-stage .ws-overlay");
    const shot = shotOf(current());
    document.dispatchEvent(new CustomEvent("workspace:step", { detail: {
      traceId: page.traceId, index: current(), stepCount: N, svg: layer, shot,
    } }));
  }
  document.addEventListener("workspace:goto", (/** @type {CustomEvent} */ event) => goTo(event.detail.index));
  return {
    renderStage, renderStrip, redrawOverlays, announceStep, goTo, prefetch, stepsLoaded, placeOnElement,
    zoomAt, zoomReset, zoomActual, showCursorLoupe, keepCursorInView,
  };
}
