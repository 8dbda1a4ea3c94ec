// @ts-check
// Live events from /ws/live/: keeps a presence map (who has which trace open), fills every
// [data-presence-trace] / [data-presence-project] element, and re-dispatches each event as a
// "studio:live" DOM event for the page's own script. Text only ever goes in via textContent. An ES module: what it
// keeps of who is where is presence.js's (pure).
import { ageText, holdersOf, presenceApply, presenceState, projectLeases } from "./presence.js";
import { gettext, interpolate } from "./i18n.js";

/* The live socket's address for a page at ``location`` ({protocol, host}): wss on an https page; narrowed to one
   project's events when ``projectId`` is given. Pure (tests/js/live.test.mjs). */
export function liveSocketUrl(location, projectId) {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const query = projectId ? "?project=" + encodeURIComponent(projectId) : "";
  return scheme + location.host + "/ws/live/" + query;
}

/* A lost socket is opened again after FIRST_RECONNECT_MS, then twice as long each time, up to LAST_RECONNECT_MS. */
export const FIRST_RECONNECT_MS = 1000, LAST_RECONNECT_MS = 15000;
export const nextReconnectDelay = (delay) => Math.min(delay * 2, LAST_RECONNECT_MS);

// On a page (under Node's test runner there is none: only the pure functions above are used).
if (typeof document !== "undefined") start();

function start() {
  const box = document.getElementById("live");
  if (!box) return;
  const statusEl = document.getElementById("live-status");
  const canRelease = box.dataset.canRelease === "1";
  const ownTrace = box.dataset.traceId ? Number(box.dataset.traceId) : null;
  const presence = presenceState();
  let socket = null;
  let retry = FIRST_RECONNECT_MS;

  function setStatus(text, ok) {
    if (!statusEl) return;
    statusEl.textContent = text;
    statusEl.classList.toggle("live-on", !!ok);
  }

  setInterval(() => document.querySelectorAll(".heartbeat-age").forEach((/** @type {HTMLElement} */ el) => {
    el.textContent = " · " + ageText(el.dataset.heartbeatAt);
  }), 10000);

  function holderNode(h, traceLabel) {
    const span = document.createElement("span");
    span.className = "holder";
    span.dataset.user = h.user;
    span.textContent = traceLabel ? h.user + " · " + interpolate(gettext("trace %(trace)s"), { trace: traceLabel }) : h.user;
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
      button.textContent = gettext("release");
      button.title = interpolate(gettext("Release %(user)s's lease on this trace (their draft is kept)"), { user: h.user });
      button.addEventListener("click", () => send({ type: "lease.release", lease_id: h.lease_id }));
      span.append(" ", button);
    }
    return span;
  }

  function render() {
    document.querySelectorAll("[data-presence-trace]").forEach((/** @type {HTMLElement} */ el) => {
      el.replaceChildren(...holdersOf(presence, Number(el.dataset.presenceTrace)).map((h) => holderNode(h)));
    });
    document.querySelectorAll("[data-presence-project]").forEach((/** @type {HTMLElement} */ el) => {
      const projectId = Number(el.dataset.presenceProject);
      const items = projectLeases(presence, projectId).map((held) => {
        const li = document.createElement("li");
        li.append(holderNode(held, held.trace));
        return li;
      });
      if (!items.length) {
        const li = document.createElement("li");
        li.className = "muted";
        li.textContent = gettext("nobody");
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
    socket = new WebSocket(liveSocketUrl(location, box.dataset.projectId));
    socket.addEventListener("open", () => {
      retry = FIRST_RECONNECT_MS;
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
      retry = nextReconnectDelay(retry);
    });
  }

  window.studioLive = { send };
  connect();
}
