// Polls a background job until it finishes; text is set with textContent, never as HTML.
(function () {
  const box = document.getElementById("job");
  if (!box) return;
  const finished = new Set(["succeeded", "failed", "cancelled"]);
  async function poll() {
    try {
      const response = await fetch(box.dataset.url, { credentials: "same-origin" });
      if (response.ok) {
        const job = await response.json();
        document.getElementById("job-status").textContent = job.status;
        document.getElementById("job-status").className = "pill " + job.status;
        document.getElementById("job-progress").textContent = job.progress_done + " traces read";
        document.getElementById("job-message").textContent = job.message;
        const list = document.getElementById("job-errors");
        list.replaceChildren(...job.errors.map((e) => Object.assign(document.createElement("li"), { textContent: e.error })));
        if (finished.has(job.status)) return;
      }
    } catch (e) { /* offline: try again */ }
    setTimeout(poll, 1500);
  }
  if (!finished.has(box.dataset.status)) poll();
})();
