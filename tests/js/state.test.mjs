// The workspace's shared state (static/js/workspace/state.js): declared names only, and who listens is told of
// every change of the name it listens to, and of nothing else.
import { test } from "node:test";
import assert from "node:assert/strict";
import { STATE_NAMES, createWorkspaceState } from "../../static/js/workspace/state.js";

test("a store starts from its defaults, with what it is given in their place", () => {
  const store = createWorkspaceState({ version: 7, form: { verdict: null } });
  assert.equal(store.get("version"), 7);
  assert.deepEqual(store.get("form"), { verdict: null });
  assert.equal(store.get("current"), 1);
  assert.equal(store.get("overlay"), true);
  assert.equal(store.get("cursor"), null);
  assert.deepEqual(store.get("zoom"), { scale: 1, ox: 0, oy: 0 });
});

test("two stores share nothing, not even the default zoom", () => {
  const one = createWorkspaceState(), other = createWorkspaceState();
  one.get("zoom").scale = 3;
  one.set("current", 5);
  assert.equal(other.get("zoom").scale, 1);
  assert.equal(other.get("current"), 1);
});

test("a name that is not declared is refused, in get, set, subscribe and the initial values", () => {
  const store = createWorkspaceState();
  assert.throws(() => store.get("saving"), /no "saving"/);
  assert.throws(() => store.set("curent", 2), /no "curent"/);
  assert.throws(() => store.subscribe("wanted", () => {}), /no "wanted"/);
  assert.throws(() => createWorkspaceState({ modelStarts: {} }), /no "modelStarts"/);
  for (const name of STATE_NAMES) assert.doesNotThrow(() => store.get(name));
});

test("a listener hears each change of its name with the value before, not a set to the same value", () => {
  const store = createWorkspaceState();
  const heard = [];
  store.subscribe("compare", (value, before) => heard.push([value, before]));
  store.set("compare", true);
  store.set("compare", true);
  store.set("overlay", false);
  store.update("compare", (on) => !on);
  assert.deepEqual(heard, [[true, false], [false, true]]);
});

test("a listener stopped hears nothing more; the others still do", () => {
  const store = createWorkspaceState();
  const a = [], b = [];
  const stop = store.subscribe("current", (v) => a.push(v));
  store.subscribe("current", (v) => b.push(v));
  store.set("current", 2);
  stop();
  store.set("current", 3);
  assert.deepEqual(a, [2]);
  assert.deepEqual(b, [2, 3]);
});

test("set and update return the value set", () => {
  const store = createWorkspaceState();
  assert.equal(store.set("blocked", "login"), "login");
  assert.equal(store.update("current", (i) => i + 4), 5);
  assert.equal(store.get("current"), 5);
});
