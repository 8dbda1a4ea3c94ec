// The clusters page's merge field as it runs on a page (static/js/cluster_merge.js's wiring, run as the module loads
// where there is a document), on a stand-in document, fetch and timers: focus asks for the candidates once, typing
// asks again after a pause (only the last of a burst), a choice picked from the list asks nothing, an answer that a
// later search overtook is dropped, and a failed search keeps the list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Event, standInDocument } from "./stand_in_dom.mjs";

const doc = standInDocument();
const m = doc.make;
const input = m("input", { value: "", list: "merge-choices", data: { mergeSearch: "/api/clusters/9/merge/" } });
const list = m("datalist", { id: "merge-choices" });
doc.body.append(m("form", {}, input, list));

const timers = [];
globalThis.setTimeout = (fn, ms) => { timers.push({ fn, ms, cleared: false }); return timers.length; };
globalThis.clearTimeout = (id) => { if (id) timers[id - 1].cleared = true; };
const asked = [];
const pending = [];
// Each search waits for the test to answer it: answer(i, status, data).
globalThis.fetch = (url) => {
  asked.push(url);
  return new Promise((resolve) => pending.push(([status, data]) => resolve({ status, json: async () => data })));
};
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };
const answer = async (i, status, data) => { pending[i]([status, data]); await settle(); };
const candidate = (id, name, size) => ({ id, display_name: name, size, choice: `#${id} ${name}` });
const type = (text) => { input.value = text; input.dispatchEvent(new Event("input")); };
const options = () => list.options.map((o) => [o.value, o.label]);

await import("../../static/js/cluster_merge.js");

test("focus on the empty field asks for the candidates; they are offered with their size; a second focus asks nothing", async () => {
  input.dispatchEvent(new Event("focus"));
  assert.deepEqual(asked, ["/api/clusters/9/merge/?q="]);
  await answer(0, 200, [candidate(4, "wrong element", 3), candidate(5, "typo", 1)]);
  assert.deepEqual(options(), [["#4 wrong element", "3 corrections"], ["#5 typo", "1 correction"]]);
  input.dispatchEvent(new Event("focus"));
  assert.equal(asked.length, 1);
});

test("typing searches once the typing pauses, only for the last text; a choice picked from the list asks nothing", async () => {
  type("wro");
  type(" wron ");
  assert.deepEqual(timers.map((t) => [t.ms, t.cleared]), [[200, true], [200, false]]);
  timers.at(-1).fn();
  assert.deepEqual(asked.slice(1), ["/api/clusters/9/merge/?q=wron"]);
  await answer(1, 200, [candidate(4, "wrong element", 3)]);
  assert.deepEqual(options(), [["#4 wrong element", "3 corrections"]]);
  type("#4 wrong element");
  assert.equal(timers.length, 2);
});

test("an answer overtaken by a later search is dropped; a failed search keeps the list", async () => {
  type("ty");
  timers.at(-1).fn();
  type("typ");
  timers.at(-1).fn();
  assert.deepEqual(asked.slice(2), ["/api/clusters/9/merge/?q=ty", "/api/clusters/9/merge/?q=typ"]);
  await answer(3, 200, [candidate(5, "typo", 1)]);
  await answer(2, 200, [candidate(6, "tycho", 2)]);  // the earlier search, answering late
  assert.deepEqual(options(), [["#5 typo", "1 correction"]]);
  type("t");
  timers.at(-1).fn();
  await answer(4, 500, { detail: "Server error." });
  assert.deepEqual(options(), [["#5 typo", "1 correction"]]);
});
