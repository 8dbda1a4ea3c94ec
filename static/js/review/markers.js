// @ts-check
/* The review page's marks over a screenshot: each action's point, its end and its element box, drawn into the
   frame's zoom layer (they move with the image), and their labels kept apart. Where they go is review_logic.js's
   (pure); this module only makes and places the elements. */
import { boxSize, marginClearing, percentOn } from "../review_logic.js";
import { gettext, interpolate } from "../i18n.js";

/** @typedef {import("../review_logic.js").Marker} Marker */

/**
 * A point in the convention, placed on its screenshot (a marker's extent) in percent of the image.
 * @param {HTMLElement} node
 * @param {Marker} marker
 * @param {number[]} p
 */
function place(node, marker, p) {
  [node.style.left, node.style.top] = percentOn(marker, p);
}

/**
 * Draws ``markers`` over ``frame``'s screenshot, replacing the marks there. An action without a point (a hotkey, a
 * wait) draws nothing: its text is beside the screenshot already (the legend, the viewer's caption, the editor), and
 * the legend says it has no point on the screen.
 * @param {Element} frame a .shot-frame, with its .zoom-layer
 * @param {Marker[]} markers
 */
export function drawMarkers(frame, markers) {
  const layer = frame.querySelector(".zoom-layer");
  layer.querySelectorAll(".marker, .marker-box").forEach((m) => m.remove());
  for (const m of markers) {
    if (!m.start) continue;
    if (m.box) {
      // The element box drawn for the action, under its point.
      const box = document.createElement("div");
      box.className = "marker-box " + m.kind;
      box.dataset.kind = m.kind;
      box.title = interpolate(gettext("%(label)s: element box"), { label: m.label });
      place(box, m, m.box.slice(0, 2));
      [box.style.width, box.style.height] = boxSize(m);
      layer.append(box);
    }
    const dot = document.createElement("div");
    dot.className = "marker " + m.kind;
    dot.title = m.label + ": " + m.text;
    dot.dataset.kind = m.kind;
    place(dot, m, m.start);
    const label = document.createElement("span");
    label.className = "marker-label";
    label.textContent = m.label + " · " + m.type;
    dot.append(label);
    layer.append(dot);
    if (m.end) {
      const end = document.createElement("div");
      end.className = "marker end " + m.kind;
      end.title = interpolate(gettext("%(label)s (end)"), { label: m.label });
      place(end, m, m.end);
      layer.append(end);
    }
  }
  separateLabels(frame);
}

/**
 * Labels never overlap: a label that meets one above it moves down, below the other (close original and corrected
 * points get stacked labels). Measured on screen, so it is redone when the zoom settles.
 * @param {Element} frame
 */
export function separateLabels(frame) {
  /** @type {HTMLElement[]} */
  const labels = [...frame.querySelectorAll(/** @type {"span"} */ (".marker-label"))];
  labels.forEach((l) => { l.style.marginTop = "0px"; });
  /** @type {DOMRect[]} */
  const placed = [];
  for (const label of labels.sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)) {
    for (let tries = 0; tries < labels.length; tries++) {
      const margin = marginClearing(parseFloat(label.style.marginTop), label.getBoundingClientRect(), placed);
      if (margin === null) break;
      label.style.marginTop = margin + "px";
    }
    placed.push(label.getBoundingClientRect());
  }
}
