// @ts-check
/* Who has which trace open, kept from the live socket's events (static/js/live.js draws it). Pure: no DOM.
   A lease is a claim on a trace (its holder annotates it); a viewer has the trace open without one. */
import { gettext, interpolate } from "./i18n.js";

export function presenceState() {
  return { leases: new Map(), viewers: new Map() };  // lease_id -> {trace_id, user, project_id, …}; "trace:user" -> {…}
}

/* Take one event into ``state``; returns the message the socket should send back (a snapshot request, when leases
   moved in a way the event does not spell out), else null. */
export function presenceApply(state, event) {
  if (event.type === "hello" || event.type === "presence.snapshot") {
    state.leases.clear();
    for (const lease of event.presence || []) state.leases.set(lease.lease_id, lease);
  } else if (event.type === "presence") {
    const key = event.trace_id + ":" + event.user;
    if (event.state === "open") state.viewers.set(key, { trace_id: event.trace_id, user: event.user });
    else state.viewers.delete(key);
  } else if (event.type === "lease" && event.state === "released") {
    state.leases.delete(event.lease_id);
  } else if (event.type === "lease" || event.type === "annotation") {
    return { type: "presence.snapshot" };  // leases change on claim and submit: ask for the truth
  }
  return null;
}

/* The people on one trace: lease holders first (with their lease and last sign of life), then viewers without one. */
export function holdersOf(state, traceId) {
  const out = [];
  for (const [id, l] of state.leases) if (l.trace_id === traceId) out.push({ user: l.user, lease_id: id, heartbeat_at: l.heartbeat_at });
  for (const v of state.viewers.values()) {
    if (v.trace_id === traceId && !out.some((o) => o.user === v.user)) out.push({ user: v.user, lease_id: null });
  }
  return out;
}

/* The leases held in one project, each with the trace it is named by (its external id, else its number). */
export function projectLeases(state, projectId) {
  const out = [];
  for (const [id, l] of state.leases) {
    if (l.project_id !== projectId) continue;
    out.push({ user: l.user, lease_id: id, heartbeat_at: l.heartbeat_at, trace: l.external_id || String(l.trace_id) });
  }
  return out;
}

/* How long ago a holder last showed a sign of life, in words. */
export function ageText(iso, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return interpolate(gettext("active %(seconds)s s ago"), { seconds });
  return interpolate(gettext("active %(minutes)s min ago"), { minutes: Math.round(seconds / 60) });
}
