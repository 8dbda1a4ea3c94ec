/* The draft: autosave with version checks (PUT /api/annotations/<id>/draft/), a local safety copy, retries while
   offline, the conflict banner, and the lease's heartbeat. The server owns the answer's rules: what it clears on a
   save, the page takes over (``adoptCleared``, pure: tests/js/autosave.test.mjs). */
import { $, el } from "../dom.js";
import { api, csrfToken, describeErrors, isAuthProblem } from "../api.js";

export const FIELDS = ["verdict", "tau", "error_category", "note", "unusable_reason", "corrected_thought",
  "reflection_thought", "no_reflection_reason", "editor_state"];

const copy = (value) => JSON.parse(JSON.stringify(value));
export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

export function normaliseEditor(value) {
  const v = value && typeof value === "object" ? value : {};
  return { corrected: v.corrected || null, reflection: v.reflection || null };
}

/* The answer's fields of an annotation as the page edits them. */
export function pickFields(source) {
  const out = {};
  for (const f of FIELDS) out[f] = source[f] === undefined ? null : copy(source[f]);
  out.editor_state = normaliseEditor(out.editor_state);
  return out;
}

/* Fields (and editor points) the server emptied in its answer to ``sent`` that the user has not touched since
   sending: taken over into ``form`` (changed in place). Returns whether anything was. */
export function adoptCleared(form, sent, server) {
  let adopted = false;
  for (const name of FIELDS) {
    if (name === "editor_state" || same(server[name], sent[name]) || !same(form[name], sent[name])) continue;
    if (server[name] === null || server[name] === "") { form[name] = server[name]; adopted = true; }
  }
  const editor = form.editor_state;
  if (same(editor, sent.editor_state)) {
    for (const slot of Object.keys(sent.editor_state || {})) {
      const before = sent.editor_state[slot];
      const after = server.editor_state[slot];
      if (!before) continue;
      if (!after) { editor[slot] = null; adopted = true; continue; }
      for (const arg of Object.keys(before.args || {})) {
        if (!(arg in (after.args || {}))) { delete editor[slot].args[arg]; adopted = true; }
      }
    }
  }
  return adopted;
}

export function install(ws) {
  const { state, ANN_ID } = ws;
  const LOCAL_KEY = "ws-draft-" + ANN_ID;
  const dirty = () => !same(state.form, state.serverForm);
  ws.dirty = dirty;

  function setSaveState(kind, text) {
    const node = $("ws-save");
    node.dataset.state = kind;
    node.textContent = text;
  }
  function banner(kind, message, actions) {
    const node = $("ws-banner");
    node.replaceChildren();
    if (!message) { node.hidden = true; return; }
    node.className = "ws-banner " + kind;
    node.appendChild(el("span", {}, message));
    for (const [label, fn] of actions || []) {
      const b = el("button", { type: "button" }, label);
      b.addEventListener("click", fn);
      node.appendChild(b);
    }
    node.hidden = false;
  }
  ws.setSaveState = setSaveState;
  ws.banner = banner;

  // A safety copy survives a crash or a closed tab; the server stays the source of truth.
  function keepLocalCopy() {
    try { localStorage.setItem(LOCAL_KEY, JSON.stringify({ version: state.version, form: state.form, at: Date.now() })); }
    catch (e) { /* storage full or disabled: the in-memory copy still holds the work */ }
  }
  ws.restoreLocalCopy = () => {
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(LOCAL_KEY) || "null"); } catch (e) { saved = null; }
    if (!saved || !ws.editable()) return false;
    if (saved.version === state.version && !same(saved.form, state.form)) {
      state.form = pickFields(Object.assign(copy(state.form), saved.form));
      return true; // edits that never reached the server: save them now
    }
    localStorage.removeItem(LOCAL_KEY);
    return false;
  };
  ws.forgetLocalCopy = () => localStorage.removeItem(LOCAL_KEY);

  let debounceTimer = null;
  // Every change of the form ends here: recorded for undo (``group``: a field being typed in, one step per pause;
  // undo.js), kept locally, and saved after a pause.
  ws.edited = (group) => {
    if (ws.recordChange) ws.recordChange(group);
    state.lastInput = Date.now();
    keepLocalCopy();
    if (!ws.editable()) return;
    // Blocked (logged out, a conflict), the status keeps saying why nothing is saved.
    if (!state.blocked) setSaveState("dirty", "Unsaved changes");
    clearTimeout(debounceTimer);
    debounceTimer = setTimeout(save, 700);
  };

  function save(options) {
    clearTimeout(debounceTimer);
    if (state.saving) { state.pendingAgain = true; return state.savePromise; }
    state.savePromise = saveNow(options);
    return state.savePromise;
  }
  ws.save = save;

  async function saveNow(options) {
    if (!ws.editable() || state.blocked) return;
    if (!dirty()) { setSaveState("saved", "Saved"); return; }
    state.saving = true;
    const sent = copy(state.form);
    setSaveState("saving", "Saving…");
    const res = await api("PUT", `/api/annotations/${ANN_ID}/draft/`, Object.assign({ version: state.version }, sent), options);
    state.saving = false;
    if (res.status === 200) {
      state.version = res.data.version;
      state.serverForm = pickFields(res.data);
      // The server owns the answer's rules (a verdict without τ keeps no correction; a moved τ drops the points
      // placed on the old step): what it took away, the page takes away too. Otherwise the editor state stays as
      // sent (the server only renders the canonical action strings from it).
      const unchanged = same(sent, state.form);
      const adopted = adoptCleared(state.form, sent, state.serverForm);
      state.retryDelay = 1000;
      keepLocalCopy();
      if (unchanged) state.serverForm = copy(state.form);
      if (adopted) {
        ws.foldChange();  // what the server took away belongs to the change that caused it (one undo)
        ws.renderAll();
        if (state.form.verdict === "error" && state.form.tau) { ws.checkAction("corrected"); ws.checkAction("reflection"); }
      }
      if (dirty() || state.pendingAgain) { state.pendingAgain = false; return save(); }
      setSaveState("saved", "Saved");
      if (!$("ws-banner").classList.contains("conflict")) banner("", "");
      return;
    }
    if (res.status === 409 && res.data.current) return conflict(res.data);
    if (isAuthProblem(res)) return sessionExpired();
    if (res.status === 0 || res.status >= 500) return retryLater();
    state.blocked = null;
    setSaveState("error", "Not saved");
    banner("error", "Not saved: " + describeErrors(res.data));
  }
  function retryLater() {
    const wait = state.retryDelay;
    state.retryDelay = Math.min(state.retryDelay * 2, 30000);
    setSaveState("offline", `Offline — retrying in ${Math.round(wait / 1000)} s`);
    state.retryUntil = Date.now() + wait;
    clearTimeout(state.retryTimer);
    state.retryTimer = setTimeout(save, wait);
  }
  function sessionExpired() {
    state.blocked = "login";
    setSaveState("offline", "Not saved — log in again");
    // The dialog covers the page: its first control takes the focus (from a field behind it, Tab went on through the
    // form and never reached the dialog, which comes last in the page).
    if ($("ws-login").hidden) { $("ws-login").hidden = false; $("ws-login").querySelector("a").focus(); }
  }
  ws.sessionExpired = sessionExpired;
  function conflict(data) {
    state.blocked = "conflict";
    const newer = data.current;
    setSaveState("error", "Conflict");
    banner("conflict", data.detail + " Your version is kept in this page.", [
      ["Load the newer version", () => {
        state.blocked = null;
        state.version = newer.version;
        state.form = pickFields(newer);
        state.serverForm = copy(state.form);
        ws.resetHistory();
        keepLocalCopy(); banner("", ""); ws.renderAll(); setSaveState("saved", "Saved");
      }],
      ["Keep mine (overwrite)", () => {
        state.blocked = null;
        state.version = newer.version;
        state.serverForm = pickFields(newer);
        banner("", ""); save();
      }],
    ]);
  }
  ws.conflict = conflict;
  $("ws-login-retry").addEventListener("click", () => {
    $("ws-login").hidden = true; state.blocked = null; state.retryDelay = 1000; save();
    document.activeElement.blur();  // the page's keys work again
  });
  window.addEventListener("online", () => { if (!state.blocked) save(); });

  // Leaving (the tab closed, the window hidden, a link followed): an edit still waiting for its pause is sent now,
  // in a request that outlives the page (keepalive), based on the version it was made on: a stale one gets its 409
  // and overwrites nothing. While the page lives on (only hidden), its answer is read as any save's.
  function flush(leaving) {
    clearTimeout(debounceTimer);
    if (!ws.editable() || state.blocked || !dirty()) return;
    if (!state.saving) { save({ keepalive: true }); return; }
    // Only hidden, the page sends the rest itself when that save answers.
    if (!leaving) { state.pendingAgain = true; return; }
    // A save is on its way with an older form, and the page will not read its answer: the rest goes too, based on
    // the version that save makes (the edits were made on top of it). Should that save not land, or land after this
    // one, this one is refused as stale and overwrites nothing.
    keepLocalCopy();
    fetch(`/api/annotations/${ANN_ID}/draft/`, {
      method: "PUT", credentials: "same-origin", keepalive: true,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: JSON.stringify(Object.assign({ version: state.version + 1 }, state.form)),
    }).catch(() => { /* the page is going away: the local copy keeps the edit */ });
  }
  window.addEventListener("pagehide", () => flush(true));
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") flush(false); });
  window.addEventListener("beforeunload", (event) => {
    keepLocalCopy();
    if (ws.editable() && dirty()) { event.preventDefault(); event.returnValue = ""; }
  });
  setInterval(() => { if (ws.editable() && dirty() && !state.saving && !state.blocked && Date.now() >= state.retryUntil) save(); }, 4000);

  // --- lease heartbeat (the active time is credited by the server) ---
  // Submit, skip and a lost lease end the lease: from then on nothing beats or sends a farewell for it.
  let heartbeatTimer = null;
  ws.leaseEnded = () => {
    clearInterval(heartbeatTimer);
    heartbeatTimer = null;
    state.leaseEnded = true;
  };
  const lease = ws.DATA.lease;
  if (lease && ws.editable()) {
    const beat = async () => {
      if (state.leaseEnded || document.hidden || Date.now() - state.lastInput > 5 * 60 * 1000) return;
      const res = await api("POST", `/api/leases/${lease.id}/heartbeat/`);
      if (res.status === 409) { ws.leaseEnded(); banner("error", res.data.detail); }
      else if (isAuthProblem(res)) sessionExpired();
      // status 0 (offline): the save status already tells
    };
    heartbeatTimer = setInterval(beat, 30000);
    ["keydown", "mousedown", "input"].forEach((t) => document.addEventListener(t, () => { state.lastInput = Date.now(); }, true));
    // Closing the tab frees the trace at once (leads stop seeing "open now"); the draft is kept and opening the
    // annotation again takes a new lease. A beacon survives the page going away; a fetch would not.
    window.addEventListener("pagehide", () => {
      if (state.leaseEnded) return;
      const form = new FormData();
      form.append("csrfmiddlewaretoken", csrfToken());
      form.append("page", lease.page);
      navigator.sendBeacon(`/api/leases/${lease.id}/release/`, form);
    });
  }
}
