// @ts-check
/* The draft: autosave with version checks (PUT /api/annotations/<id>/draft/), a local safety copy, retries while
   offline, the conflict banner, and the lease's heartbeat. The server owns the answer's rules: what it clears on a
   save, the page takes over (``adoptCleared``, pure: tests/js/autosave.test.mjs). */
import { $, el } from "../dom.js";
import { api, csrfToken, describeErrors, isAuthProblem } from "../api.js";
import { gettext, interpolate } from "../i18n.js";
import { copy, same } from "../values.js";

/** @type {string[]} */
export const FIELDS = ["verdict", "tau", "error_category", "note", "unusable_reason", "corrected_thought",
  "reflection_thought", "no_reflection_reason", "editor_state"];


/**
 * The editor's two slots, each an action or null, from what a draft holds (anything: an older page's, none).
 * @param {any} value @returns {{ corrected: import("../action_editor.js").Action | null, reflection: import("../action_editor.js").Action | null }}
 */
export function normaliseEditor(value) {
  const v = value && typeof value === "object" ? value : {};
  return { corrected: v.corrected || null, reflection: v.reflection || null };
}

/* The answer's fields of an annotation as the page edits them. */
/** @param {Record<string, any>} source @returns {Record<string, any>} */
export function pickFields(source) {
  const out = {};
  for (const f of FIELDS) out[f] = source[f] === undefined ? null : copy(source[f]);
  out.editor_state = normaliseEditor(out.editor_state);
  return out;
}

/* Fields (and editor points) the server emptied in its answer to ``sent`` that the user has not touched since
   sending: taken over into ``form`` (changed in place). Returns whether anything was. */
/** @param {Record<string, any>} form @param {Record<string, any>} sent @param {Record<string, any>} server @returns {boolean} */
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

/* Retries while offline wait twice as long each time, up to half a minute. */
export const FIRST_RETRY_MS = 1000, LAST_RETRY_MS = 30000;
/** @type {(delay: number) => number} */
export const nextRetryDelay = (delay) => Math.min(delay * 2, LAST_RETRY_MS);

/* What a save's answer ({status, data}) calls for: "saved", "conflict" (a newer version is on the server: its
   409 names it), "signed_out" (log in again), "retry" (offline or the server failed: the same edit again later)
   or "refused" (the server will not take it: said in words, nothing retried). */
/** @param {{ status: number, data: any }} res @returns {"saved" | "conflict" | "signed_out" | "retry" | "refused"} */
export function readSaveAnswer(res) {
  if (res.status === 200) return "saved";
  if (res.status === 409 && res.data && res.data.current) return "conflict";
  if (isAuthProblem(res)) return "signed_out";
  if (res.status === 0 || res.status >= 500) return "retry";
  return "refused";
}

/* What the page does with edits not yet saved when it is hidden or left (``leaving``): "none" (nothing to send,
   or it may not send), "save" (a save as any, outliving the page), "again" (a save is under way: the rest goes
   when it answers) or "next_version" (a save is under way whose answer the page will not read: the rest is sent
   now, based on the version that save makes). */
/**
 * @param {{ editable: boolean, blocked: string | null, dirty: boolean, saving: boolean, leaving: boolean }} state
 * @returns {"none" | "save" | "again" | "next_version"}
 */
export function flushPlan({ editable, blocked, dirty, saving, leaving }) {
  if (!editable || blocked || !dirty) return "none";
  if (!saving) return "save";
  return leaving ? "next_version" : "again";
}

/**
 * What the draft tells the rest of the page.
 * @typedef {{ recordChange: (group?: string | null) => void, foldChange: () => void, resetHistory: () => void,
 *   renderAll: () => void, checkActions: () => void }} DraftHooks
 */
/**
 * The draft's functions: ``dirty()`` (the form differs from the server's), ``save()`` (resolves once this save and
 * the one it waits on are done), ``saveAll()`` (whether the form is then saved), ``edited(group)`` (every change of
 * the form ends here), ``setSaveState(kind, text)`` (the status beside Save), ``banner(kind, message, actions)``
 * (none without a message; ``actions``: [label, what it does]), ``restoreLocalCopy()`` (whether edits kept in this
 * browser were taken), ``forgetLocalCopy()``, ``sessionExpired()``, ``conflict(data)`` (the server's 409 answer) and
 * ``leaseEnded()`` (the heartbeat stops).
 * @typedef {{ dirty: () => boolean, save: (options?: { keepalive?: boolean }) => Promise<void>,
 *   saveAll: () => Promise<boolean>, edited: (group?: string | null) => void,
 *   setSaveState: (kind: string, text: string) => void,
 *   banner: (kind: string, message: string | null, actions?: [string, () => void][]) => void,
 *   restoreLocalCopy: () => boolean, forgetLocalCopy: () => void, sessionExpired: () => void,
 *   conflict: (data: { detail: string, current_version?: number, [field: string]: any }) => void,
 *   leaseEnded: () => void }} Draft
 */

/* The draft. ``page``: {annotationId, editable() (whether this page may still change the annotation), lease (the
   served lease or null)}; ``store``: the workspace's state (state.js: form, version, blocked); ``hooks``: what the
   draft tells the rest of the page: recordChange(group) (an edit, for undo), foldChange() (what the server took
   away belongs to the last change), resetHistory() (the form was replaced), renderAll(), checkActions() (the
   correction checked again by the server). Returns the draft's functions (below). */
/**
 * @param {{ page: Pick<import("./state.js").WorkspacePage, "annotationId" | "editable" | "lease">,
 *   store: import("./state.js").Store, hooks: DraftHooks }} parts
 * @returns {Draft}
 */
export function createDraft({ page, store, hooks }) {
  const ANN_ID = page.annotationId;
  const editable = page.editable;
  const form = () => store.get("form");
  let serverForm = copy(form());
  let saving = false, pendingAgain = false, savePromise = null;
  let retryDelay = FIRST_RETRY_MS, retryUntil = 0, retryTimer = null;
  let lastInput = Date.now(), leaseEnded = false;
  const LOCAL_KEY = "ws-draft-" + ANN_ID;
  const dirty = () => !same(form(), serverForm);

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

  // A safety copy survives a crash or a closed tab; the server stays the source of truth.
  function keepLocalCopy() {
    try { localStorage.setItem(LOCAL_KEY, JSON.stringify({ version: store.get("version"), form: form(), at: Date.now() })); }
    catch (e) { /* storage full or disabled: the in-memory copy still holds the work */ }
  }
  /* Edits kept in this browser that never reached the server, taken into the form: whether there were any (the
     caller saves them). */
  function restoreLocalCopy() {
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(LOCAL_KEY) || "null"); } catch (e) { saved = null; }
    if (!saved || !editable()) return false;
    if (saved.version === store.get("version") && !same(saved.form, form())) {
      store.set("form", pickFields(Object.assign(copy(form()), saved.form)));
      return true; // edits that never reached the server: save them now
    }
    localStorage.removeItem(LOCAL_KEY);
    return false;
  }
  const forgetLocalCopy = () => localStorage.removeItem(LOCAL_KEY);

  let debounceTimer = null;
  // Every change of the form ends here: recorded for undo (``group``: a field being typed in, one step per pause;
  // undo.js), kept locally, and saved after a pause.
  function edited(group) {
    hooks.recordChange(group);
    lastInput = Date.now();
    keepLocalCopy();
    if (!editable()) return;
    // Blocked (logged out, a conflict), the status keeps saying why nothing is saved.
    if (!store.get("blocked")) setSaveState("dirty", gettext("Unsaved changes"));
    clearTimeout(debounceTimer);
    debounceTimer = setTimeout(save, 700);
  }

  function save(options) {
    clearTimeout(debounceTimer);
    if (saving) { pendingAgain = true; return savePromise; }
    savePromise = saveNow(options);
    return savePromise;
  }
  /* Saves until nothing is pending (a few tries): whether the form is then saved. */
  async function saveAll() {
    for (let attempt = 0; attempt < 3 && (dirty() || saving) && !store.get("blocked"); attempt++) await save();
    return !dirty() && !store.get("blocked");
  }

  async function saveNow(options) {
    if (!editable() || store.get("blocked")) return;
    if (!dirty()) { setSaveState("saved", gettext("Saved")); return; }
    saving = true;
    const sent = copy(form());
    setSaveState("saving", gettext("Saving…"));
    const res = await api("PUT", `/api/annotations/${ANN_ID}/draft/`, Object.assign({ version: store.get("version") }, sent), options);
    saving = false;
    const answer = readSaveAnswer(res);
    if (answer === "saved") {
      store.set("version", res.data.version);
      serverForm = pickFields(res.data);
      // The server owns the answer's rules (a verdict without τ keeps no correction; a moved τ drops the points
      // placed on the old step): what it took away, the page takes away too. Otherwise the editor state stays as
      // sent (the server only renders the canonical action strings from it).
      const unchanged = same(sent, form());
      const adopted = adoptCleared(form(), sent, serverForm);
      retryDelay = FIRST_RETRY_MS;
      keepLocalCopy();
      if (unchanged) serverForm = copy(form());
      if (adopted) {
        hooks.foldChange();  // what the server took away belongs to the change that caused it (one undo)
        hooks.renderAll();
        hooks.checkActions();
      }
      if (dirty() || pendingAgain) { pendingAgain = false; return save(); }
      setSaveState("saved", gettext("Saved"));
      if (!$("ws-banner").classList.contains("conflict")) banner("", "");
      return;
    }
    if (answer === "conflict") return conflict(res.data);
    if (answer === "signed_out") return sessionExpired();
    if (answer === "retry") return retryLater();
    store.set("blocked", null);
    setSaveState("error", gettext("Not saved"));
    banner("error", interpolate(gettext("Not saved: %(problem)s"), { problem: describeErrors(res.data) }));
  }
  function retryLater() {
    const wait = retryDelay;
    retryDelay = nextRetryDelay(retryDelay);
    setSaveState("offline", interpolate(gettext("Offline — retrying in %(seconds)s s"), { seconds: Math.round(wait / 1000) }));
    retryUntil = Date.now() + wait;
    clearTimeout(retryTimer);
    retryTimer = setTimeout(save, wait);
  }
  function sessionExpired() {
    store.set("blocked", "login");
    setSaveState("offline", gettext("Not saved — log in again"));
    // The dialog covers the page: its first control takes the focus (from a field behind it, Tab went on through the
    // form and never reached the dialog, which comes last in the page).
    if ($("ws-login").hidden) { $("ws-login").hidden = false; $("ws-login").querySelector("a").focus(); }
  }
  function conflict(data) {
    store.set("blocked", "conflict");
    const newer = data.current;
    setSaveState("error", gettext("Conflict"));
    banner("conflict", data.detail + " " + gettext("Your version is kept in this page."), [
      [gettext("Load the newer version"), () => {
        store.set("blocked", null);
        store.set("version", newer.version);
        store.set("form", pickFields(newer));
        serverForm = copy(form());
        hooks.resetHistory();
        keepLocalCopy(); banner("", ""); hooks.renderAll(); setSaveState("saved", gettext("Saved"));
      }],
      [gettext("Keep mine (overwrite)"), () => {
        store.set("blocked", null);
        store.set("version", newer.version);
        serverForm = pickFields(newer);
        banner("", ""); save();
      }],
    ]);
  }
  $("ws-login-retry").addEventListener("click", () => {
    $("ws-login").hidden = true; store.set("blocked", null); retryDelay = FIRST_RETRY_MS; save();
    /** @type {HTMLElement} */ (document.activeElement).blur();  // the page's keys work again
  });
  window.addEventListener("online", () => { if (!store.get("blocked")) save(); });

  // Leaving (the tab closed, the window hidden, a link followed): an edit still waiting for its pause is sent now,
  // in a request that outlives the page (keepalive), based on the version it was made on: a stale one gets its 409
  // and overwrites nothing. While the page lives on (only hidden), its answer is read as any save's.
  function flush(leaving) {
    clearTimeout(debounceTimer);
    const plan = flushPlan({ editable: editable(), blocked: store.get("blocked"), dirty: dirty(), saving, leaving });
    if (plan === "none") return;
    if (plan === "save") { save({ keepalive: true }); return; }
    // Only hidden, the page sends the rest itself when that save answers.
    if (plan === "again") { pendingAgain = true; return; }
    // A save is on its way with an older form, and the page will not read its answer: the rest goes too, based on
    // the version that save makes (the edits were made on top of it). Should that save not land, or land after this
    // one, this one is refused as stale and overwrites nothing.
    keepLocalCopy();
    fetch(`/api/annotations/${ANN_ID}/draft/`, {
      method: "PUT", credentials: "same-origin", keepalive: true,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: JSON.stringify(Object.assign({ version: store.get("version") + 1 }, form())),
    }).catch(() => { /* the page is going away: the local copy keeps the edit */ });
  }
  window.addEventListener("pagehide", () => flush(true));
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") flush(false); });
  window.addEventListener("beforeunload", (event) => {
    keepLocalCopy();
    if (editable() && dirty()) { event.preventDefault(); event.returnValue = ""; }
  });
  setInterval(() => { if (editable() && dirty() && !saving && !store.get("blocked") && Date.now() >= retryUntil) save(); }, 4000);

  // --- lease heartbeat (the active time is credited by the server) ---
  // Submit, skip and a lost lease end the lease: from then on nothing beats or sends a farewell for it.
  let heartbeatTimer = null;
  function endLease() {
    clearInterval(heartbeatTimer);
    heartbeatTimer = null;
    leaseEnded = true;
  }
  const lease = page.lease;
  if (lease && editable()) {
    const beat = async () => {
      if (leaseEnded || document.hidden || Date.now() - lastInput > 5 * 60 * 1000) return;
      const res = await api("POST", `/api/leases/${lease.id}/heartbeat/`);
      if (res.status === 409) { endLease(); banner("error", res.data.detail); }
      else if (isAuthProblem(res)) sessionExpired();
      // status 0 (offline): the save status already tells
    };
    heartbeatTimer = setInterval(beat, 30000);
    ["keydown", "mousedown", "input"].forEach((t) => document.addEventListener(t, () => { lastInput = Date.now(); }, true));
    // Closing the tab frees the trace at once (leads stop seeing "open now"); the draft is kept and opening the
    // annotation again takes a new lease. A beacon survives the page going away; a fetch would not.
    window.addEventListener("pagehide", () => {
      if (leaseEnded) return;
      const beacon = new FormData();
      beacon.append("csrfmiddlewaretoken", csrfToken());
      beacon.append("page", lease.page);
      navigator.sendBeacon(`/api/leases/${lease.id}/release/`, beacon);
    });
  }
  return {
    dirty, save, saveAll, edited, setSaveState, banner, restoreLocalCopy, forgetLocalCopy, sessionExpired, conflict,
    leaseEnded: endLease,
  };
}
