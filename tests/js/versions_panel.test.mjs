// The Versions panel mounted on a stand-in document (static/js/versions.js mountVersions): opened, it lists the
// server's versions with their changes and diffs; a restore asks for the page's pending saves first, posts the
// version the page holds, and says the outcome; a refused restore gives the buttons back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mountVersions } from "../../static/js/versions.js";

class Node {
  constructor(tag) {
    this.tag = tag;
    this.children = [];
    this.dataset = {};
    this.textContent = "";
    this.className = "";
    this.hidden = false;
    this.disabled = false;
    this.listeners = {};
  }
  append(...nodes) { this.children.push(...nodes); }
  appendChild(node) { this.children.push(node); return node; }
  replaceChildren(...nodes) { this.children = nodes; }
  addEventListener(type, listener) { this.listeners[type] = listener; }
  focus() { this.focused = true; }
  all(match) { return [...(match(this) ? [this] : []), ...this.children.flatMap((c) => c.all(match))]; }
  querySelectorAll(selector) { return selector === "button" ? this.all((n) => n.tag === "button") : []; }
}

function panel(answers) {
  globalThis.document = { createElement: (tag) => new Node(tag), cookie: "csrftoken=tok", documentElement: { lang: "en" } };
  const list = new Node("ol"), note = new Node("p");
  const root = new Node("details");
  root.open = true;
  root.dataset.versionsUrl = "/api/annotations/7/versions/";
  root.dataset.version = "3";
  root.querySelector = (selector) => ({ ".versions-list": list, ".versions-note": note })[selector];
  const sent = [];
  globalThis.fetch = async (url, init) => {
    sent.push([init.method, url, init.body === undefined ? undefined : JSON.parse(init.body), init.headers["X-CSRFToken"]]);
    const [status, data] = answers.shift();
    return { status, json: async () => data };
  };
  return { root, list, note, sent };
}

const listed = {
  can_restore: true,
  versions: [
    { number: 3, at: "2026-11-28T03:10:00+00:00", by: "ann", kind: "edit", status: "Draft", current: true, changes: ["verdict: changed"],
      diffs: [{ field: "thought", segments: [{ op: "equal", text: "Click " }, { op: "delete", text: "A" }, { op: "insert", text: "B" }] }],
      restore_url: "/api/annotations/7/versions/3/restore/" },
    { number: 2, at: "2026-11-28T03:05:00+00:00", by: "ann", kind: "edit", status: "Draft", current: false, changes: ["thought: set"],
      restore_url: "/api/annotations/7/versions/2/restore/" },
  ],
};
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

test("opened, the panel lists the versions with their changes and diffs; a restore saves first and posts the page's version", async () => {
  const { root, list, note, sent } = panel([[200, listed], [200, { version: 4 }]]);
  const order = [];
  mountVersions(root, { beforeRestore: async () => order.push("saved"), baseVersion: () => 3, restored: (data) => order.push(data.version) });
  await settle();
  assert.equal(root.dataset.loaded, "1");
  assert.deepEqual(list.children.map((li) => li.dataset.number), [3, 2]);
  assert.equal(list.children[0].className, "versions-item kind-edit current");
  const diff = list.children[0].all((n) => n.className === "versions-diff small")[0];
  assert.deepEqual(diff.children.map((n) => [n.tag, n.textContent]), [["span", "thought: "], ["span", "Click "], ["del", "A"], ["ins", "B"]]);
  const buttons = list.all((n) => n.tag === "button");
  assert.equal(buttons.length, 1);  // the current version offers no restore
  assert.equal(note.hidden, true);
  buttons[0].listeners.click();
  await settle();
  assert.deepEqual(order, ["saved", 4]);
  assert.deepEqual(sent[1], ["POST", "/api/annotations/7/versions/2/restore/", { version: 3 }, "tok"]);
  assert.equal(root.dataset.restored, "2");
  assert.equal(note.textContent, "Version 2 restored as version 4.");
  assert.equal(note.dataset.kind, "done");
});

test("a refused restore says why and gives the buttons back; a list that cannot be read says so", async () => {
  const { root, list, note } = panel([[200, listed], [409, { detail: "changed elsewhere", current_version: 5 }]]);
  mountVersions(root, {});
  await settle();
  const [button] = list.all((n) => n.tag === "button");
  button.listeners.click();
  await settle();
  assert.match(note.textContent, /^Not restored: changed elsewhere/);
  assert.equal(note.dataset.kind, "error");
  assert.equal(button.disabled, false);
  assert.equal(button.focused, true);

  const failing = panel([[500, { detail: "database down" }]]);
  mountVersions(failing.root, {});
  await settle();
  assert.match(failing.note.textContent, /database down/);
  assert.equal(failing.root.dataset.loaded, undefined);
  assert.equal(mountVersions(null), null);
});
