// @ts-check
// Leads start a pre-scoring run from the trace list; the run's progress is polled and shown as text.
// An ES module: the page's wiring at the end, what it says as pure functions above it (tests/js/prescore_start.test.mjs).
import { api, describeErrors } from "./api.js";
import { isFinished } from "./jobs.js";
import { gettext } from "./i18n.js";

/* The status line of a job (the API's prescore job): a running job shows its progress; an ended one what it found
   (its message), not the counter it ended on. */
export function jobLine(job) {
  const progress = isFinished(job.status) ? "" : `, ${job.progress_done}/${job.progress_total} steps`;
  const problems = job.errors && job.errors.length ? ` (${job.errors.length} problems)` : "";
  return `${job.scorer} job ${job.id}: ${job.status}${progress}` + (job.message ? ` — ${job.message}` : "") + problems;
}

/* The answer to a start ({status, data}, api.js): the job to follow, or none, and the line to show. A refusal shows
   the server's own words (its detail, studio/errors.py), whatever its kind. */
export function startAnswer(res) {
  if (res.status >= 200 && res.status < 300) return { job: res.data, line: jobLine(res.data) };
  if (res.status === 0) return { job: null, line: "Not started: the server could not be reached. Try again." };
  return { job: null, line: describeErrors(res.data) || `Not started: the server answered ${res.status}.` };
}

/* Whether to ask again about a job after an answer: until it has ended (a failed poll asks again). */
export const keepFollowing = (res) => !(res.status === 200 && isFinished(res.data.status));

export const POLL_MS = 2000;

function wire(box) {
  const status = document.getElementById("prescore-start-status");
  async function follow(id) {
    const res = await api("GET", `/api/prescore/jobs/${id}/`);
    if (res.status === 200) status.textContent = jobLine(res.data);
    if (keepFollowing(res)) setTimeout(() => follow(id), POLL_MS);
  }
  // The project's last run, after a reload or a later visit: its result, or its progress while it runs.
  if (box.dataset.lastJob) follow(box.dataset.lastJob);
  box.querySelectorAll("button[data-scorer]").forEach((button) => {
    button.addEventListener("click", async () => {
      status.textContent = gettext("Starting…");
      const { job, line } = startAnswer(await api("POST", box.dataset.url, { scorer: button.dataset.scorer }));
      status.textContent = line;
      if (job) follow(job.id);
    });
  });
}

if (typeof document !== "undefined") {
  const box = document.getElementById("prescore-start");
  if (box) wire(box);
}
