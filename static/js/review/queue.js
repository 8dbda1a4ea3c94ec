// @ts-check
/* The review queue: a project's rows are rebuilt when a live event says an annotation changed (the rows of
   GET /api/reviews/, their texts review_logic.js queueRowTexts), and the presence cells asked for again. */
import { queueRowTexts } from "../review_logic.js";
import { gettext } from "../i18n.js";

/** @param {string} text */
function cell(text) {
  const td = document.createElement("td");
  td.textContent = text;
  return td;
}

/**
 * Rebuilds the rows of one project's section (a .review-section with its project's id) from the server.
 * @param {HTMLElement} section
 * @returns {Promise<void>}
 */
export async function refreshSection(section) {
  const projectId = section.dataset.projectId;
  const response = await fetch("/api/reviews/?status=submitted&project=" + encodeURIComponent(projectId), { credentials: "same-origin" });
  if (!response.ok) return;
  const rows = (await response.json()).results;
  const body = section.querySelector("[data-role=queue-body]");
  const trs = rows.map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.annotationId = a.id;
    tr.dataset.traceId = a.trace_id;
    const presence = document.createElement("td");
    presence.className = "presence";
    presence.dataset.presenceTrace = a.trace_id;
    const action = document.createElement("td");
    const link = document.createElement("a");
    link.className = "button primary";
    link.href = a.review_url;
    link.textContent = gettext("Review");
    action.append(link);
    tr.append(...queueRowTexts(a).map(cell), presence, action);
    return tr;
  });
  if (!trs.length) {
    const tr = document.createElement("tr");
    tr.className = "empty-row";
    const td = cell(gettext("Nothing waiting for review."));
    td.colSpan = 6;
    td.className = "empty";
    tr.append(td);
    trs.push(tr);
  }
  body.replaceChildren(...trs);
  const count = section.querySelector("[data-role=count]");
  if (count) count.textContent = String(rows.length);
  if (window.studioLive) window.studioLive.send({ type: "presence.snapshot" });
}

/** Every section of the queue is rebuilt on each live event about an annotation (static/js/live.js).
    @returns {void} */
export function installQueueRefresh() {
  document.addEventListener("studio:live", (e) => {
    const event = /** @type {CustomEvent} */ (e).detail;
    if (event.type !== "annotation") return;
    document.querySelectorAll(".review-section").forEach((section) => refreshSection(/** @type {HTMLElement} */ (section)));
  });
}
