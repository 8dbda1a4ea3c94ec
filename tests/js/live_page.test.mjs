// The live socket on a page (static/js/live.js's start, run as the module loads where there is a document), on a
// stand-in document with a stand-in WebSocket: it connects to the page's project, announces the trace the page has
// open, draws who holds or views which trace (a lead's release button sends the release), re-dispatches each event
// as "studio:live", asks for a snapshot when leases moved, and connects again after a loss, waiting longer each time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { standInDocument } from "./stand_in_dom.mjs";

const doc = standInDocument();
const box = doc.make("div", { id: "live", data: { canRelease: "1", traceId: "7", projectId: "3" } });
const status = doc.make("span", { id: "live-status" });
const onTrace = doc.make("td", { data: { presenceTrace: "7" } });
const inProject = doc.make("ul", { data: { presenceProject: "3" } });
doc.body.append(box, status, onTrace, inProject);

class FakeSocket {
  static OPEN = 1;
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    this.listeners = {};
    FakeSocket.made.push(this);
  }
  addEventListener(type, listener) { this.listeners[type] = listener; }
  send(text) { this.sent.push(JSON.parse(text)); }
  open() { this.readyState = FakeSocket.OPEN; this.listeners.open(); }
  receive(event) { this.listeners.message({ data: typeof event === "string" ? event : JSON.stringify(event) }); }
  close() { this.readyState = 3; this.listeners.close(); }
}
const intervals = [], timeouts = [];
globalThis.WebSocket = FakeSocket;
globalThis.location = { protocol: "https:", host: "studio.example" };
const realSetInterval = globalThis.setInterval, realSetTimeout = globalThis.setTimeout;
globalThis.setInterval = (fn, ms) => { intervals.push([fn, ms]); return intervals.length; };
globalThis.setTimeout = (fn, ms) => { timeouts.push([fn, ms]); return timeouts.length; };
await import("../../static/js/live.js");
globalThis.setInterval = realSetInterval;
globalThis.setTimeout = realSetTimeout;
/** Runs ``body`` with the timeouts it makes recorded in ``timeouts``, not run. */
function recordingTimeouts(body) {
  globalThis.setTimeout = (fn, ms) => { timeouts.push([fn, ms]); return timeouts.length; };
  try { body(); } finally { globalThis.setTimeout = realSetTimeout; }
}

const minutesAgo = (minutes) => new Date(Date.now() - minutes * 60000).toISOString();
const lease = (id, trace, user, fields = {}) => ({ lease_id: id, trace_id: trace, project_id: 3, external_id: `ext-${trace}`, user, heartbeat_at: minutesAgo(2), ...fields });
const heard = [];
doc.addEventListener("studio:live", (event) => heard.push(event.detail.type));

test("it connects to the page's project over wss and, once open, announces the trace the page has open", () => {
  assert.equal(FakeSocket.made.length, 1);
  const [socket] = FakeSocket.made;
  assert.equal(socket.url, "wss://studio.example/ws/live/?project=3");
  socket.send = () => assert.fail("nothing is sent before the socket is open");
  window.studioLive.send({ type: "presence.snapshot" });
  delete socket.send;
  socket.open();
  assert.equal(status.textContent, "live");
  assert.ok(status.classList.contains("live-on"));
  assert.equal(box.dataset.connected, "1");
  assert.deepEqual(socket.sent, [{ type: "presence.open", trace_id: 7 }]);
});

test("who holds or views the page's trace and the project's leases are drawn; a release sends the lease's", () => {
  const [socket] = FakeSocket.made;
  socket.sent.length = 0;
  socket.receive({ type: "hello", presence: [lease(11, 7, "ann"), lease(12, 9, "bob", { external_id: "" })] });
  socket.receive({ type: "presence", state: "open", trace_id: 7, user: "lead" });
  const holders = onTrace.children;
  assert.deepEqual(holders.map((h) => h.dataset.user), ["ann", "lead"]);
  assert.equal(holders[0].childNodes[0].textContent, "ann");
  assert.equal(holders[0].querySelector(".heartbeat-age").textContent, " · active 2 min ago");
  assert.equal(holders[1].textContent, "lead");  // a viewer: no lease, no age, nothing to release
  assert.deepEqual(inProject.children.map((li) => li.children[0].childNodes[0].textContent), ["ann · trace ext-7", "bob · trace 9"]);
  const release = holders[0].querySelector("button.release");
  assert.equal(release.title, "Release ann's lease on this trace (their draft is kept)");
  release.click();
  assert.deepEqual(socket.sent, [{ type: "lease.release", lease_id: 11 }]);
  assert.deepEqual(heard, ["hello", "presence"]);
});

test("a claimed lease asks for a snapshot; a released one goes at once; an empty project says nobody", () => {
  const [socket] = FakeSocket.made;
  socket.sent.length = 0;
  socket.receive({ type: "lease", state: "claimed", lease_id: 13, trace_id: 8 });
  assert.deepEqual(socket.sent, [{ type: "presence.snapshot" }]);
  socket.receive({ type: "lease", state: "released", lease_id: 11 });
  socket.receive({ type: "lease", state: "released", lease_id: 12 });
  assert.deepEqual(onTrace.children.map((h) => h.dataset.user), ["lead"]);
  assert.deepEqual(inProject.children.map((li) => [li.className, li.textContent]), [["muted", "nobody"]]);
  socket.receive("{ not json");  // a malformed frame is ignored
  socket.receive({ type: "error", detail: "not allowed" });
  assert.equal(status.textContent, "not allowed");
  assert.deepEqual(heard.slice(-3), ["lease", "lease", "error"]);
});

test("the holders' ages are written again every 10 s", () => {
  const [[refresh, every]] = intervals;
  assert.equal(every, 10000);
  const [socket] = FakeSocket.made;
  socket.receive({ type: "presence.snapshot", presence: [lease(14, 7, "cy", { heartbeat_at: minutesAgo(0) })] });
  const age = onTrace.querySelector(".heartbeat-age");
  assert.match(age.textContent, /^ · active \d+ s ago$/);
  age.dataset.heartbeatAt = minutesAgo(5);
  refresh();
  assert.equal(age.textContent, " · active 5 min ago");
});

test("a lost socket is opened again after 1 s, then twice as long each time; opening resets the wait", () => recordingTimeouts(() => {
  FakeSocket.made[0].close();
  assert.equal(box.dataset.connected, "");
  assert.equal(status.textContent, "offline — reconnecting");
  assert.equal(status.classList.contains("live-on"), false);
  assert.deepEqual(timeouts.map(([, ms]) => ms), [1000]);
  const [[reconnect]] = timeouts;
  reconnect();
  assert.equal(FakeSocket.made.length, 2);
  FakeSocket.made[1].close();
  assert.deepEqual(timeouts.map(([, ms]) => ms), [1000, 2000]);
  timeouts[1][0]();
  FakeSocket.made[2].open();
  FakeSocket.made[2].close();
  assert.deepEqual(timeouts.map(([, ms]) => ms), [1000, 2000, 1000]);
  assert.deepEqual(FakeSocket.made.map((socket) => socket.url), Array(3).fill("wss://studio.example/ws/live/?project=3"));
}));
