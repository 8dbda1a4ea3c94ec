// The workspace's draft (static/js/workspace/autosave.js createDraft) on a stand-in document, with a stand-in
// fetch, local storage and timers: an edit is kept locally and saved after a pause, based on the version the form
// was loaded at; what the server cleared is taken over; a conflict offers the newer version or overwrites it; a lost
// login asks to log in again; offline saves are retried, later each time; edits kept in this browser come back; the
// page's last edits leave with it; the lease's heartbeat says when the lease is lost and frees it as the page goes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createDraft, pickFields } from "../../static/js/workspace/autosave.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";
import { ERRORS } from "./served.mjs";

const SIGNED_OUT = ERRORS.answers.find((answer) => answer.signed_out && answer.status === 401);
const REFUSED = ERRORS.answers.find((answer) => answer.status === 400);
// The promises of a save (the fake fetch answers at once) run out within a few turns of the event loop.
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };

/** A workspace page whose draft is at ``version`` with ``fields``; the server answers each request with ``answer``
    (a function of [method, url, body, init], giving [status, data]; throwing: offline). */
function page({ fields = {}, version = 3, lease = null, editable = true, stored, answer } = {}) {
  const doc = standInDocument();
  doc.body.append(
    doc.make("span", { id: "ws-save" }), doc.make("div", { id: "ws-banner", hidden: true }),
    doc.make("div", { id: "ws-login", hidden: true }, doc.make("a", { href: "/login/" })), doc.make("button", { id: "ws-login-retry" }),
  );
  doc.visibilityState = "visible";
  doc.hidden = false;
  const storage = new Map(stored ? [["ws-draft-7", JSON.stringify(stored)]] : []);
  globalThis.localStorage = { getItem: (k) => storage.get(k) ?? null, setItem: (k, v) => storage.set(k, v), removeItem: (k) => storage.delete(k) };
  const timeouts = [], intervals = [], beacons = [];
  globalThis.setTimeout = (fn, ms) => { timeouts.push({ fn, ms, cleared: false }); return timeouts.length; };
  globalThis.clearTimeout = (id) => { if (id) timeouts[id - 1].cleared = true; };
  globalThis.setInterval = (fn, ms) => { intervals.push({ fn, ms }); return intervals.length; };
  globalThis.clearInterval = (id) => { if (id) intervals[id - 1].fn = null; };
  globalThis.navigator = { sendBeacon: (url, data) => beacons.push([url, Object.fromEntries(data)]) };
  const sent = [];
  const respond = answer || ((method, url, body) => [200, { ...body, version: body.version + 1 }]);
  globalThis.fetch = async (url, init) => {
    const request = [init.method || "GET", url, init.body === undefined ? undefined : JSON.parse(init.body), init];
    sent.push(request);
    const [status, data] = respond(...request);
    return { status, ok: status < 300, json: async () => data };
  };
  const store = createWorkspaceState({ version, form: pickFields({ verdict: "error", tau: 3, corrected_thought: "t", ...fields }) });
  const calls = [];
  const hooks = Object.fromEntries(["recordChange", "foldChange", "resetHistory", "renderAll", "checkActions"].map((name) => [name, (arg) => calls.push(arg === undefined ? name : [name, arg])]));
  const draft = createDraft({ page: { annotationId: "7", editable: () => editable, lease }, store, hooks });
  const $ = (id) => doc.getElementById(id);
  const saveState = () => [$("ws-save").dataset.state, $("ws-save").textContent];
  const stored_ = () => JSON.parse(storage.get("ws-draft-7") || "null");
  return { doc, store, draft, calls, sent, timeouts, intervals, beacons, storage, $, saveState, stored: stored_, form: () => store.get("form") };
}
const realTimers = { setTimeout, clearTimeout, setInterval, clearInterval };
test.afterEach(() => Object.assign(globalThis, realTimers));

test("an edit is kept in this browser and saved after a pause, on the version the form was loaded at", async () => {
  const { draft, calls, sent, timeouts, saveState, stored, form, store, $ } = page();
  draft.save();
  assert.deepEqual(saveState(), ["saved", "Saved"]);  // nothing changed: nothing sent
  assert.equal(sent.length, 0);
  form().corrected_thought = "typed";
  draft.edited("field:corrected_thought");
  assert.deepEqual(calls, [["recordChange", "field:corrected_thought"]]);
  assert.equal(stored().form.corrected_thought, "typed");
  assert.equal(stored().version, 3);
  assert.deepEqual(saveState(), ["dirty", "Unsaved changes"]);
  assert.equal(draft.dirty(), true);
  const pause = timeouts.at(-1);
  assert.equal(pause.ms, 700);
  pause.fn();
  assert.deepEqual(saveState(), ["saving", "Saving…"]);
  await settle();
  assert.deepEqual(sent.map(([method, url, body]) => [method, url, body.version, body.corrected_thought]), [["PUT", "/api/annotations/7/draft/", 3, "typed"]]);
  assert.equal(sent[0][3].headers["X-CSRFToken"], "tok");
  assert.equal(store.get("version"), 4);
  assert.deepEqual(saveState(), ["saved", "Saved"]);
  assert.equal(draft.dirty(), false);
  assert.equal($("ws-banner").hidden, true);
});

test("what the server cleared is taken over as part of the edit; edits made while saving are saved next", async () => {
  const { draft, calls, sent, form, store } = page({
    answer: (method, url, body) => (sent.length === 1 ? [200, { ...body, tau: null, corrected_thought: "", version: 4 }] : [200, { ...body, version: body.version + 1 }]),
  });
  form().verdict = "no_error";
  const saving = draft.save();
  form().note = "typed while saving";
  await saving;
  await settle();
  assert.equal(form().tau, null);  // the server's rule: no τ without an error
  assert.equal(form().corrected_thought, "");
  assert.deepEqual(calls, ["foldChange", "renderAll", "checkActions"]);
  assert.deepEqual(sent.map(([, , body]) => [body.version, body.note]), [[3, null], [4, "typed while saving"]]);
  assert.equal(store.get("version"), 5);
  assert.equal(draft.dirty(), false);
});

test("a conflict blocks saving and offers the newer version or to overwrite it", async () => {
  const newer = { version: 9, verdict: "no_error", tau: null, note: "theirs" };
  const { draft, store, sent, saveState, $, form } = page({
    answer: (method, url, body) => (body.version === 3 ? [409, { detail: "Changed in another tab.", kind: "conflict", current: newer }] : [200, { ...body, version: body.version + 1 }]),
  });
  form().note = "mine";
  await draft.save();
  assert.equal(store.get("blocked"), "conflict");
  assert.deepEqual(saveState(), ["error", "Conflict"]);
  const banner = $("ws-banner");
  assert.equal(banner.className, "ws-banner conflict");
  assert.equal(banner.children[0].textContent, "Changed in another tab. Your version is kept in this page.");
  const [load, keep] = banner.querySelectorAll("button");
  assert.deepEqual([load.textContent, keep.textContent], ["Load the newer version", "Keep mine (overwrite)"]);
  draft.edited();
  assert.deepEqual(saveState(), ["error", "Conflict"]);  // blocked: the status keeps saying why
  await draft.save();
  assert.equal(sent.length, 1);
  keep.click();
  await settle();
  assert.equal(store.get("blocked"), null);
  assert.deepEqual(sent.map(([, , body]) => [body.version, body.note]), [[3, "mine"], [9, "mine"]]);
  assert.equal(store.get("version"), 10);
  assert.equal(banner.hidden, true);

  const other = page({ answer: () => [409, { detail: "Changed.", current: newer }] });
  other.form().note = "mine";
  await other.draft.save();
  other.$("ws-banner").querySelectorAll("button")[0].click();
  assert.equal(other.form().note, "theirs");
  assert.equal(other.store.get("version"), 9);
  assert.equal(other.draft.dirty(), false);
  assert.deepEqual(other.calls.slice(-2), ["resetHistory", "renderAll"]);
  assert.deepEqual(other.saveState(), ["saved", "Saved"]);
  assert.equal(other.stored().version, 9);
});

test("a lost login asks to log in again; logged in, the retry saves", async () => {
  let signedIn = false;
  const { draft, store, $, doc, sent, saveState, form } = page({ answer: (method, url, body) => (signedIn ? [200, { ...body, version: 4 }] : [SIGNED_OUT.status, SIGNED_OUT.data]) });
  form().note = "n";
  await draft.save();
  assert.equal(store.get("blocked"), "login");
  assert.deepEqual(saveState(), ["offline", "Not saved — log in again"]);
  assert.equal($("ws-login").hidden, false);
  assert.equal(doc.activeElement, $("ws-login").querySelector("a"));
  doc.activeElement.blur = () => { doc.activeElement = doc.body; };
  signedIn = true;
  $("ws-login-retry").click();
  await settle();
  assert.equal($("ws-login").hidden, true);
  assert.equal(store.get("blocked"), null);
  assert.equal(sent.length, 2);
  assert.deepEqual(saveState(), ["saved", "Saved"]);
});

test("offline, the save is tried again later, twice as long each time; a refusal is said and not retried", async () => {
  let online = false;
  const { draft, timeouts, saveState, sent, form, $, store } = page({
    answer: (method, url, body) => { if (!online) throw new Error("offline"); return [REFUSED.status, REFUSED.data]; },
  });
  form().note = "n";
  await draft.save();
  assert.deepEqual(saveState(), ["offline", "Offline — retrying in 1 s"]);
  assert.equal(timeouts.at(-1).ms, 1000);
  timeouts.at(-1).fn();
  await settle();
  assert.deepEqual(saveState(), ["offline", "Offline — retrying in 2 s"]);
  assert.equal(timeouts.at(-1).ms, 2000);
  online = true;
  window.dispatchEvent(new Event("online"));
  await settle();
  assert.equal(sent.length, 3);
  assert.deepEqual(saveState(), ["error", "Not saved"]);
  assert.equal($("ws-banner").children[0].textContent, `Not saved: ${REFUSED.data.detail}`);
  assert.equal(store.get("blocked"), null);
});

test("edits kept in this browser on the version loaded come back; on another version they are dropped", () => {
  const kept = page({ stored: { version: 3, form: { note: "kept" } } });
  assert.equal(kept.draft.restoreLocalCopy(), true);
  assert.equal(kept.form().note, "kept");
  assert.equal(kept.form().verdict, "error");
  const stale = page({ stored: { version: 2, form: { note: "old" } } });
  assert.equal(stale.draft.restoreLocalCopy(), false);
  assert.equal(stale.storage.size, 0);
  const readOnly = page({ stored: { version: 3, form: { note: "kept" } }, editable: false });
  assert.equal(readOnly.draft.restoreLocalCopy(), false);
  assert.equal(readOnly.storage.size, 1);
  readOnly.draft.forgetLocalCopy();
  assert.equal(readOnly.storage.size, 0);
  assert.equal(page({}).draft.restoreLocalCopy(), false);
});

test("leaving sends the last edit with the page (keepalive); while a save is under way the rest goes on the next version", async () => {
  const { draft, sent, form } = page();
  form().note = "last words";
  window.dispatchEvent(new Event("pagehide"));
  assert.equal(sent.length, 1);
  assert.equal(sent[0][3].keepalive, true);
  await settle();

  const busy = page({ answer: (method, url, body) => [200, { ...body, version: body.version + 1 }] });
  busy.form().note = "first";
  const saving = busy.draft.save();
  busy.form().note = "second";
  window.dispatchEvent(new Event("pagehide"));
  assert.deepEqual(busy.sent.map(([, , body, init]) => [body.version, body.note, init.keepalive]), [[3, "first", false], [4, "second", true]]);
  await saving;
  assert.equal(draft.dirty(), false);
});

test("hidden while a save is under way, the rest is saved when it answers; unsaved edits hold the page on leaving", async () => {
  const { draft, sent, form, doc } = page();
  form().note = "first";
  const saving = draft.save();
  form().note = "second";
  doc.visibilityState = "hidden";
  doc.dispatchEvent(new Event("visibilitychange"));
  assert.equal(sent.length, 1);
  await saving;
  await settle();
  assert.deepEqual(sent.map(([, , body]) => [body.version, body.note]), [[3, "first"], [4, "second"]]);
  form().note = "third";
  const leaving = new Event("beforeunload");
  window.dispatchEvent(leaving);
  assert.equal(leaving.defaultPrevented, true);
  await draft.saveAll();
  const saved = new Event("beforeunload");
  window.dispatchEvent(saved);
  assert.equal(saved.defaultPrevented, false);
});

test("every 4 s an unsaved form is saved unless blocked", async () => {
  const { intervals, sent, form, store } = page();
  const tick = intervals.find(({ ms }) => ms === 4000).fn;
  tick();
  assert.equal(sent.length, 0);
  form().note = "n";
  store.set("blocked", "restored");
  tick();
  assert.equal(sent.length, 0);
  store.set("blocked", null);
  tick();
  assert.equal(sent.length, 1);
  await settle();
});

test("the lease's heartbeat: a lost lease stops it and says so; the page frees the lease as it goes", async () => {
  const { intervals, sent, beacons, $ } = page({
    lease: { id: 5, page: "pg-1", expires_at: "2026-12-07T19:00:00Z" },
    answer: () => [409, { detail: "Your lease on this trace ended.", kind: "conflict" }],
  });
  const heartbeat = intervals.find(({ ms }) => ms === 30000);
  await heartbeat.fn();
  assert.deepEqual(sent.map(([method, url]) => [method, url]), [["POST", "/api/leases/5/heartbeat/"]]);
  assert.equal($("ws-banner").children[0].textContent, "Your lease on this trace ended.");
  assert.equal(heartbeat.fn, null);  // stopped
  window.dispatchEvent(new Event("pagehide"));
  assert.deepEqual(beacons, []);  // an ended lease sends no farewell

  const live = page({ lease: { id: 6, page: "pg-2" }, answer: () => [200, {}] });
  window.dispatchEvent(new Event("pagehide"));
  assert.deepEqual(live.beacons, [["/api/leases/6/release/", { csrfmiddlewaretoken: "tok", page: "pg-2" }]]);
  live.draft.leaseEnded();
  live.beacons.length = 0;
  window.dispatchEvent(new Event("pagehide"));
  assert.deepEqual(live.beacons, []);
});
