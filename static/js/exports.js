// Follows an export job until it finishes; text is set with textContent, never as HTML.
(function () {
  const box = document.getElementById("export-job");
  if (!box) return;
  const finished = new Set(["succeeded", "failed", "cancelled"]);
  async function poll() {
    try {
      const response = await fetch(box.dataset.url, { credentials: "same-origin" });
      if (response.ok) {
        const job = await response.json();
        const status = document.getElementById("export-status");
        status.textContent = job.status;
        status.className = "pill " + job.status;
        document.getElementById("export-progress").textContent = job.progress_done + " / " + job.progress_total;
        document.getElementById("export-message").textContent = job.message;
        document.getElementById("export-errors").replaceChildren(
          ...job.errors.map((e) => Object.assign(document.createElement("li"), { textContent: e.error })));
        if (job.download_url) {
          document.getElementById("export-download").hidden = false;
          document.getElementById("export-sha").textContent = "sha256 " + job.bundle_sha256 + " · " + job.bundle_size + " bytes";
        }
        if (finished.has(job.status)) {
          const cancel = document.getElementById("export-cancel");
          if (cancel) cancel.hidden = true;
          return;
        }
      }
    } catch (e) { /* offline: try again */ }
    setTimeout(poll, 1500);
  }
  if (!finished.has(box.dataset.status)) poll();
})();
