// Follows a background job (import, export, pre-scoring) until it finishes. The page marks the job's
// box with data-url/data-status and its parts with data-job="status|progress|message|errors|when-succeeded|
// when-running|sha|percent" (a <progress> element), and an import's "attention|problems|notes" (the lists with
// their -count and -box); text is set with textContent, never as HTML.
(function () {
  const box = document.querySelector("[data-job-box]");
  if (!box) return;
  const finished = new Set(["succeeded", "failed", "cancelled"]);
  const parts = (name) => box.querySelectorAll(`[data-job="${name}"]`);
  function show(job) {
    parts("status").forEach((el) => { el.textContent = job.status_display; el.className = "pill " + job.status; });
    // The server's words when the job has them (an import's "2 of 4 traces read", as its page renders them first).
    parts("progress").forEach((el) => {
      el.textContent = job.progress_text !== undefined ? job.progress_text
        : job.progress_total ? `${job.progress_done} / ${job.progress_total}` : `${job.progress_done} done`;
    });
    parts("percent").forEach((el) => {
      el.value = job.progress_total ? Math.round(100 * job.progress_done / job.progress_total) : 0;
    });
    parts("message").forEach((el) => { el.textContent = job.message; });
    parts("errors").forEach((el) => el.replaceChildren(
      ...job.errors.map((e) => Object.assign(document.createElement("li"), { textContent: e.error }))));
    // An import's entries, split by the server into problems (lost) and notes (kept, needing attention).
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
    parts("when-running").forEach((el) => { el.hidden = finished.has(job.status); });
    if (job.bundle_sha256) parts("sha").forEach((el) => { el.textContent = `sha256 ${job.bundle_sha256} · ${job.bundle_size} bytes`; });
  }
  // One entry; a note on a kept trace links to it (the page gives the trace URL with 0 for its id).
  function entry(e, traceUrl) {
    const li = Object.assign(document.createElement("li"), { textContent: e.error });
    if (e.trace && traceUrl) {
      li.append(" ", Object.assign(document.createElement("a"), { href: traceUrl.replace(/\/0\/$/, `/${e.trace}/`), textContent: "Open the trace" }));
    }
    return li;
  }
  async function poll() {
    try {
      const response = await fetch(box.dataset.url, { credentials: "same-origin" });
      if (response.ok) {
        const job = await response.json();
        show(job);
        if (finished.has(job.status)) return;
      }
    } catch (e) { /* offline: try again */ }
    setTimeout(poll, 1500);
  }
  if (!finished.has(box.dataset.status)) poll();
})();
