// @ts-check
// Follows a background job (import, export, pre-scoring) until it finishes. The page marks the job's
// box with data-url/data-status and its parts with data-job="status|progress|message|errors|when-succeeded|
// when-running|sha|percent" (a <progress> element), and an import job's "attention|problems|notes" (the lists with
// their -count and -box); text is set with textContent, never as HTML.
// An ES module: the page's wiring at the end, what it says as pure functions above it (tests/js/job_status.test.mjs).
import { api } from "./api.js";
import { isFinished } from "./jobs.js";
import { gettext, interpolate } from "./i18n.js";

/* The progress in words: the server's when the job has them (an import job's "2 of 4 traces read", as its page renders
   them first), else the counter. */
export function progressText(job) {
  if (job.progress_text !== undefined) return job.progress_text;
  return job.progress_total ? `${job.progress_done} / ${job.progress_total}` : interpolate(gettext("%(done)s done"), { done: job.progress_done });
}

/* The <progress> element's value, 0–100. */
export const percent = (job) => (job.progress_total ? Math.round((100 * job.progress_done) / job.progress_total) : 0);

/* Where a note on a kept trace links: the page gives the trace URL with 0 for its id. */
export const traceHref = (traceUrl, traceId) => traceUrl.replace(/\/0\/$/, `/${traceId}/`);

/* The line under a finished export: its bundle's digest and size. */
export const bundleLine = (job) => `sha256 ${job.bundle_sha256} · ${interpolate(gettext("%(size)s bytes"), { size: job.bundle_size })}`;

export const POLL_MS = 1500;

function wire(box) {
  const parts = (name) => box.querySelectorAll(`[data-job="${name}"]`);
  // One entry; a note on a kept trace links to it.
  function entry(e, traceUrl) {
    const li = Object.assign(document.createElement("li"), { textContent: e.error });
    if (e.trace && traceUrl) {
      li.append(" ", Object.assign(document.createElement("a"), { href: traceHref(traceUrl, e.trace), textContent: gettext("Open the trace") }));
    }
    return li;
  }
  function show(job) {
    parts("status").forEach((el) => { el.textContent = job.status_display; el.className = "pill " + job.status; });
    parts("progress").forEach((el) => { el.textContent = progressText(job); });
    parts("percent").forEach((el) => { el.value = percent(job); });
    parts("message").forEach((el) => { el.textContent = job.message; });
    parts("errors").forEach((el) => el.replaceChildren(
      ...job.errors.map((e) => Object.assign(document.createElement("li"), { textContent: e.error }))));
    // An import job's entries, split by the server into problems (lost) and notes (kept, needing attention).
    if (job.attention !== undefined) {
      parts("attention").forEach((el) => { el.textContent = job.attention; el.hidden = !job.attention; });
    }
    for (const name of ["problems", "notes"]) {
      if (!job[name]) continue;
      parts(name).forEach((el) => el.replaceChildren(...job[name].map((e) => entry(e, el.dataset.traceUrl))));
      parts(name + "-count").forEach((el) => { el.textContent = job[name].length; });
      parts(name + "-box").forEach((el) => { el.hidden = !job[name].length; });
    }
    parts("when-succeeded").forEach((el) => { el.hidden = job.status !== "succeeded"; });
    parts("when-running").forEach((el) => { el.hidden = isFinished(job.status); });
    if (job.bundle_sha256) parts("sha").forEach((el) => { el.textContent = bundleLine(job); });
  }
  async function poll() {
    const res = await api("GET", box.dataset.url); // unreachable (status 0): try again
    if (res.status === 200) {
      show(res.data);
      if (isFinished(res.data.status)) return;
    }
    setTimeout(poll, POLL_MS);
  }
  if (!isFinished(box.dataset.status)) poll();
}

if (typeof document !== "undefined") {
  const box = document.querySelector("[data-job-box]");
  if (box) wire(box);
}
