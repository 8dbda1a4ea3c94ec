// A page without a workspace (the lead's review page) whose Versions panel mounts itself as static/js/versions.js
// loads (<details data-versions-url data-mount="self">), on a stand-in document: an open panel lists the versions at
// once, a closed one when it is opened, and a panel the workspace mounts (no data-mount) is left to it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Event, standInDocument } from "./stand_in_dom.mjs";

const doc = standInDocument();
const m = doc.make;
const panel = (url, fields) => m("details", { ...fields, data: { versionsUrl: url, version: "2", ...(fields.data || {}) } },
  m("ol", { class: "versions-list" }), m("p", { class: "versions-note", hidden: true }));
const open = panel("/api/annotations/7/versions/", { open: true, data: { mount: "self" } });
const closed = panel("/api/annotations/8/versions/", { open: false, data: { mount: "self" } });
const workspaces = panel("/api/annotations/9/versions/", { open: true });
doc.body.append(open, closed, workspaces);

const asked = [];
globalThis.fetch = async (url) => {
  asked.push(url);
  return { status: 200, json: async () => ({ can_restore: false, restore_refusal: "Only a lead may restore.",
    versions: [{ number: 1, current: true, by: "ann", at: null, status: "draft", kind: "save", changes: ["verdict: error"] }] }) };
};
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };
await import("../../static/js/versions.js");
await settle();

test("an open self-mounted panel lists its versions at once; the workspace's own panel is not mounted here", () => {
  assert.deepEqual(asked, ["/api/annotations/7/versions/"]);
  assert.equal(open.dataset.loaded, "1");
  assert.deepEqual(open.querySelectorAll(".versions-item").map((li) => String(li.dataset.number)), ["1"]);
  assert.equal(open.querySelector(".versions-note").textContent, "Only a lead may restore.");
  assert.equal(workspaces.dataset.loaded, undefined);
});

test("a closed one lists them when it is opened", async () => {
  assert.equal(closed.dataset.loaded, undefined);
  closed.open = true;
  closed.dispatchEvent(new Event("toggle"));
  await settle();
  assert.deepEqual(asked.slice(1), ["/api/annotations/8/versions/"]);
  assert.equal(closed.dataset.loaded, "1");
});
