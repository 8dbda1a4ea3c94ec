// Leads start a pre-scoring run from the trace list; the run's progress is polled and shown as text.
(function () {
  const box = document.getElementById("prescore-start");
  if (!box) return;
  const status = document.getElementById("prescore-start-status");
  const finished = new Set(["succeeded", "failed", "cancelled"]);
  const csrfToken = () => {
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  };
  // A running job shows its progress; an ended one what it found (its message), not the counter it ended on.
  function show(job) {
    const progress = finished.has(job.status) ? "" : `, ${job.progress_done}/${job.progress_total} steps`;
    status.textContent = `${job.scorer} job ${job.id}: ${job.status}${progress}` +
      (job.message ? ` — ${job.message}` : "") + (job.errors.length ? ` (${job.errors.length} problems)` : "");
  }
  async function follow(id) {
    const response = await fetch(`/api/prescore/jobs/${id}/`, { credentials: "same-origin" });
    if (response.ok) {
      const job = await response.json();
      show(job);
      if (finished.has(job.status)) return;
    }
    setTimeout(() => follow(id), 2000);
  }
  // The project's last run, after a reload or a later visit: its result, or its progress while it runs.
  if (box.dataset.lastJob) follow(box.dataset.lastJob);
  box.querySelectorAll("button[data-scorer]").forEach((button) => {
    button.addEventListener("click", async () => {
      status.textContent = "Starting…";
      const response = await fetch(box.dataset.url, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
        body: JSON.stringify({ scorer: button.dataset.scorer }),
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) {
        status.textContent = body.detail || `Not started: the server answered ${response.status}.`;
        return;
      }
      show(body);
      follow(body.id);
    });
  });
})();
