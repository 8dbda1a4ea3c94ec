// @ts-check
/* The screenshot viewer's zoom and pan, shared by the workspace and the review page.
   A view is {scale, ox, oy}: scale 1 = the screenshot fitted to its frame (shown as "Fit"; the percentage shown is of
   the screenshot's own pixels, ``percentOf``); (ox, oy) = where the image's top-left
   corner sits, in fractions of the frame. Only a CSS transform of one layer (the image and its marks) changes, so
   zooming costs no layout. Wheel (or a trackpad pinch) zooms around the pointer, a drag pans, two fingers pinch.
   An ES module: static/js/workspace.js and review.js import it; clamp, zoomAt and transform are pure. */
import { gettext } from "./i18n.js";
/**
 * A view: its scale (1: fitted) and where the image's top-left corner sits, in fractions of the frame.
 * @typedef {{ scale: number, ox: number, oy: number }} View
 */
export const MAX = 8;
// One wheel event (a notch, or a trackpad's burst) changes the zoom by at most a quarter, in or out.
export const WHEEL_STEP = 1.25;
// The + and - buttons and keys: a bigger step than a notch, as few presses reach a detail.
export const BUTTON_STEP = 1.5;

/** @param {number} scale @param {number} ox @param {number} oy @returns {View} */
export function clamp(scale, ox, oy) {
  scale = Math.min(MAX, Math.max(1, scale));
  // The image always covers the frame: no panning past its edges.
  return { scale, ox: Math.min(0, Math.max(1 - scale, ox)), oy: Math.min(0, Math.max(1 - scale, oy)) };
}

// (u, v): the point of the frame, in fractions, that stays where it is.
/** @param {View} view @param {number} u @param {number} v @param {number} factor @returns {View} */
export function zoomAt(view, u, v, factor) {
  const scale = Math.min(MAX, Math.max(1, view.scale * factor));
  const ix = (u - view.ox) / view.scale, iy = (v - view.oy) / view.scale;  // that point, in fractions of the image
  return clamp(scale, u - ix * scale, v - iy * scale);
}

/** @param {View} view @returns {string} the layer's CSS transform */
export function transform(view) {
  return `translate(${view.ox * 100}%, ${view.oy * 100}%) scale(${view.scale})`;
}

/* The zoom as the annotator reads it: 100 % = one screenshot pixel per screen pixel. ``fitWidth``: the frame's width
   on the screen; ``imageWidth``: the screenshot's. */
/** @param {View} view @param {number} fitWidth @param {number} imageWidth @returns {number | null} */
export function percentOf(view, fitWidth, imageWidth) {
  return fitWidth && imageWidth ? Math.round(view.scale * fitWidth / imageWidth * 100) : null;
}

/* The level button's words: the percentage of the screenshot's own pixels, or "Fit" while the frame is unmeasured. */
/** @param {View} view @param {number} fitWidth @param {number} imageWidth @returns {string} */
export function levelText(view, fitWidth, imageWidth) {
  const percent = percentOf(view, fitWidth, imageWidth);
  return percent === null ? gettext("Fit") : `${percent} %`;
}

/* The view at 1:1 (the screenshot's own pixels) around the frame's centre; never below fit (a screenshot smaller
   than its frame is shown fitted). */
/** @param {View} view @param {number} fitWidth @param {number} imageWidth @returns {View} */
export function actualSize(view, fitWidth, imageWidth) {
  const scale = Math.min(MAX, Math.max(1, imageWidth / fitWidth));
  return zoomAt(view, 0.5, 0.5, scale / view.scale);
}

/* The zoom factor of one wheel event: proportional to the scroll (a trackpad's small deltas zoom smoothly), at most
   WHEEL_STEP either way (a mouse notch). ``deltaMode`` 1: the delta is in lines. */
/** @param {number} deltaY @param {number} deltaMode @returns {number} */
export function wheelFactor(deltaY, deltaMode) {
  const perLine = deltaMode === 1 ? 40 : 1;
  return Math.min(WHEEL_STEP, Math.max(1 / WHEEL_STEP, Math.exp(-deltaY * perLine * 0.0015)));
}

/** @type {Readonly<View>} */
export const FIT = Object.freeze({ scale: 1, ox: 0, oy: 0 });

/* Gestures on ``frame``: ``get()`` reads the current view, ``set(view)`` applies a new one. ``hover(event)`` is
   called for pointer moves that are not gestures (the workspace's loupe). A click that ends a drag or a pinch is
   swallowed (capture phase), so it never places a point. ``draw`` ({start, move, end}, optional): a press that
   ``draw.start(event)`` takes (returns true) draws instead of panning until the pointer is released (the
   workspace's element box: Shift+drag). */
/**
 * @param {HTMLElement} frame
 * @param {{ get: () => View, set: (view: View) => void, hover?: (event: PointerEvent) => void, leave?: () => void,
 *   draw?: { start: (event: PointerEvent) => boolean, move: (event: PointerEvent) => void, end: (event: PointerEvent, cancelled: boolean) => void } }} gestures
 */
export function attach(frame, { get, set, hover, leave, draw }) {
  /** @type {(x: number, y: number) => [number, number]} */
  const fraction = (x, y) => {
    const box = frame.getBoundingClientRect();
    return [(x - box.left) / box.width, (y - box.top) / box.height];
  };
  frame.addEventListener("wheel", (event) => {
    event.preventDefault();
    set(zoomAt(get(), ...fraction(event.clientX, event.clientY), wheelFactor(event.deltaY, event.deltaMode)));
  }, { passive: false });
  const pointers = new Map();
  let drag = null, pinch = null, swallowClick = false, drawing = null;
  frame.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    if (draw && pointers.size === 0 && draw.start(event)) {
      drawing = event.pointerId;
      frame.setPointerCapture(event.pointerId);
      if (leave) leave();
      return;
    }
    pointers.set(event.pointerId, [event.clientX, event.clientY]);
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      pinch = { distance: Math.hypot(a[0] - b[0], a[1] - b[1]) };
      drag = null;
    } else drag = { x: event.clientX, y: event.clientY, view: { ...get() }, moved: false, id: event.pointerId };
  });
  frame.addEventListener("pointermove", (event) => {
    if (drawing === event.pointerId) { draw.move(event); return; }
    if (pointers.has(event.pointerId)) pointers.set(event.pointerId, [event.clientX, event.clientY]);
    if (pinch && pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const distance = Math.hypot(a[0] - b[0], a[1] - b[1]);
      set(zoomAt(get(), ...fraction((a[0] + b[0]) / 2, (a[1] + b[1]) / 2), distance / pinch.distance));
      pinch.distance = distance;
      swallowClick = true;
      return;
    }
    if (drag && drag.id === event.pointerId) {
      const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < 4) return;  // a click that wobbled is still a click
      if (!drag.moved) {
        drag.moved = true;
        frame.setPointerCapture(event.pointerId);
        frame.classList.add("panning");
        if (leave) leave();
      }
      const box = frame.getBoundingClientRect();
      set(clamp(drag.view.scale, drag.view.ox + dx / box.width, drag.view.oy + dy / box.height));
      return;
    }
    if (hover) hover(event);
  });
  const release = (event) => {
    if (drawing === event.pointerId) {
      drawing = null;
      swallowClick = true;  // the click that ends a box never places a point
      draw.end(event, event.type === "pointercancel");
      return;
    }
    pointers.delete(event.pointerId);
    if (pointers.size < 2) pinch = null;
    if (drag && drag.id === event.pointerId) {
      if (drag.moved) swallowClick = true;
      drag = null;
      frame.classList.remove("panning");
    }
  };
  frame.addEventListener("pointerup", release);
  frame.addEventListener("pointercancel", release);
  frame.addEventListener("pointerleave", () => { if (leave) leave(); });
  frame.addEventListener("click", (event) => {
    if (swallowClick) { swallowClick = false; event.stopImmediatePropagation(); event.preventDefault(); }
  }, true);
}
