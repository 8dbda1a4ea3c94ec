// Live events from /ws/live/: keeps a presence map (who has which trace open), fills every
// [data-presence-trace] / [data-presence-project] element, and re-dispatches each event as a
// "studio:live" DOM event for the page's own script. Text only ever goes in via textContent. An ES module: what it
// keeps of who is where is presence.js's (pure).
import { ageText, holdersOf, presenceApply, presenceState, projectLeases } from "./presence.js";

start();

function start() {
  const box = document.getElementById("live");
  if (!box) return;
  const statusEl = document.getElementById("live-status");
  const canRelease = box.dataset.canRelease === "1";
  const ownTrace = box.dataset.traceId ? Number(box.dataset.traceId) : null;
  const query = box.dataset.projectId ? "?project=" + encodeURIComponent(box.dataset.projectId) : "";
  const presence = presenceState();
  let socket = null;
  let retry = 1000;

  function setStatus(text, ok) {
    if (!statusEl) return;
    statusEl.textContent = text;
    statusEl.classList.toggle("live-on", !!ok);
  }

  setInterval(() => document.querySelectorAll(".heartbeat-age").forEach((el) => {
    el.textContent = " · " + ageText(el.dataset.heartbeatAt);
  }), 10000);

  function holderNode(h, traceLabel) {
    const span = document.createElement("span");
    span.className = "holder";
    span.dataset.user = h.user;
    span.textContent = traceLabel ? h.user + " · trace " + traceLabel : h.user;
    if (h.heartbeat_at) {
      // How fresh the holder's last sign of life is: a tab closed without a beacon shows its age growing.
      const age = document.createElement("span");
      age.className = "muted small heartbeat-age";
      age.dataset.heartbeatAt = h.heartbeat_at;
      age.textContent = " · " + ageText(h.heartbeat_at);
      span.append(age);
    }
    if (canRelease && h.lease_id) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "linkish release";
      button.textContent = "release";
      button.title = "Release " + h.user + "'s lease on this trace (their draft is kept)";
      button.addEventListener("click", () => send({ type: "lease.release", lease_id: h.lease_id }));
      span.append(" ", button);
    }
    return span;
  }

  function render() {
    document.querySelectorAll("[data-presence-trace]").forEach((el) => {
      el.replaceChildren(...holdersOf(presence, Number(el.dataset.presenceTrace)).map((h) => holderNode(h)));
    });
    document.querySelectorAll("[data-presence-project]").forEach((el) => {
      const projectId = Number(el.dataset.presenceProject);
      const items = projectLeases(presence, projectId).map((held) => {
        const li = document.createElement("li");
        li.append(holderNode(held, held.trace));
        return li;
      });
      if (!items.length) {
        const li = document.createElement("li");
        li.className = "muted";
        li.textContent = "nobody";
        items.push(li);
      }
      el.replaceChildren(...items);
    });
  }

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  function onEvent(event) {
    const reply = presenceApply(presence, event);
    if (reply) send(reply);
    if (event.type === "error") setStatus(event.detail, true);
    render();
    document.dispatchEvent(new CustomEvent("studio:live", { detail: event }));
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + "/ws/live/" + query);
    socket.addEventListener("open", () => {
      retry = 1000;
      setStatus("live", true);
      box.dataset.connected = "1";
      if (ownTrace) send({ type: "presence.open", trace_id: ownTrace });
    });
    socket.addEventListener("message", (m) => {
      try { onEvent(JSON.parse(m.data)); } catch (e) { /* a malformed frame is ignored */ }
    });
    socket.addEventListener("close", () => {
      box.dataset.connected = "";
      setStatus("offline — reconnecting", false);
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 15000);
    });
  }

  window.studioLive = { send };
  connect();
}
