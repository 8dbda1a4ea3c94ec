// Review pages: draws the original / corrected / post-reflection actions over the screenshots, and keeps
// the review queue current from live events. Data comes from json_script blocks and the API; text via textContent.
(function () {
  // --- markers over o_τ and o_{τ+1} ---
  function readJSON(id) {
    const el = document.getElementById(id);
    if (!el) return [];
    try { return JSON.parse(el.textContent); } catch (e) { return []; }
  }

  function place(el, x, y) {
    el.style.left = (x * 100).toFixed(3) + "%";
    el.style.top = (y * 100).toFixed(3) + "%";
  }

  document.querySelectorAll(".shot-frame[data-markers]").forEach((frame) => {
    for (const m of readJSON(frame.dataset.markers)) {
      if (m.x === undefined) {
        const tag = document.createElement("div");
        tag.className = "marker-note " + m.kind;
        tag.textContent = m.label + ": " + m.text;
        frame.append(tag);
        continue;
      }
      const dot = document.createElement("div");
      dot.className = "marker " + m.kind;
      dot.title = m.label + ": " + m.text;
      dot.dataset.kind = m.kind;
      place(dot, m.x, m.y);
      const label = document.createElement("span");
      label.className = "marker-label";
      label.textContent = m.label + " · " + m.type;
      dot.append(label);
      frame.append(dot);
      if (m.end_x !== undefined) {
        const end = document.createElement("div");
        end.className = "marker end " + m.kind;
        end.title = m.label + " (end)";
        place(end, m.end_x, m.end_y);
        frame.append(end);
      }
    }
  });

  // --- keys on one review: a accept, r reject (focus the comment; Ctrl+Enter sends), → next undecided ---
  const acceptButton = document.getElementById("accept-button");
  const rejectButton = document.getElementById("reject-button");
  const comment = document.getElementById("review-comment");
  const nextLink = document.getElementById("next-review");
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.metaKey) return;
    const typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
    if (typing) {
      if (event.target === comment && event.key === "Enter" && event.ctrlKey && rejectButton) {
        event.preventDefault();
        rejectButton.click();
      }
      return;
    }
    if (event.ctrlKey) return;
    if (event.key === "a" && acceptButton) { event.preventDefault(); acceptButton.click(); }
    else if (event.key === "r" && comment && rejectButton) { event.preventDefault(); comment.focus(); }
    else if (event.key === "ArrowRight" && nextLink) { event.preventDefault(); nextLink.click(); }
  });

  // --- the queue: rebuild a project's rows when an annotation of it changes ---
  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  }

  async function refreshSection(section) {
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
      link.textContent = "Review";
      action.append(link);
      tr.append(cell(a.external_id), cell(a.annotator), cell((a.verdict || "—") + (a.tau ? " at step " + a.tau : "")),
        cell(a.submitted_at ? a.submitted_at.slice(0, 16).replace("T", " ") : ""), presence, action);
      return tr;
    });
    if (!trs.length) {
      const tr = document.createElement("tr");
      tr.className = "empty-row";
      const td = cell("Nothing waiting for review.");
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

  document.addEventListener("studio:live", (e) => {
    const event = e.detail;
    if (event.type !== "annotation") return;
    document.querySelectorAll(".review-section").forEach((section) => refreshSection(section));
  });
})();
