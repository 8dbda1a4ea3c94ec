// The workspace's entry module (static/js/workspace.js) on a page whose browser kept edits that never reached the
// server (tests/js/workspace_page.mjs): they are taken into the form and saved at once, and the page opens on the τ
// they name even where the page does not carry its step (read from the server first).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeFetch, settle } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";
import { step, workspacePage } from "./workspace_page.mjs";

// Kept in this browser over version 5: the first error moved to τ 6, which the page (steps 1 to 4) does not carry.
const { root, browser, $ } = workspacePage({ stored: { version: 5, form: { verdict: "error", tau: 6, error_category: "wrong text" }, at: 1 } });
const sent = fakeFetch(async (method, url, body) => {
  if (url === "/api/actions/table/") return [200, TABLE];
  if (url.startsWith("/api/annotations/7/steps/")) return [200, { steps: [step(5), step(6)] }];
  if (url === "/api/annotations/7/draft/") return [200, { ...body, version: 6 }];
  if (url === "/api/annotations/7/alternatives/") return [403, { detail: "This project's alternatives are off." }];
  return [200, { canonical: "", errors: [], valid: true }];
});

await import("../../static/js/workspace.js");
const atLoad = sent.map(([method, url, body]) => [method, url, body && body.tau]);
await settle();

test("the kept edits are taken into the form and saved at once, the page saying they were restored", () => {
  assert.deepEqual(atLoad.filter(([method]) => method !== "GET"), [["PUT", "/api/annotations/7/draft/", 6]]);
  assert.equal($("f-error_category").value, "wrong text");
  assert.equal($("ws-save").dataset.state, "saved");  // the save answered
  assert.equal(root.dataset.ready, "1");
});

test("the page opens on the τ the kept edits name, its step read from the server first", () => {
  assert.ok(atLoad.some(([method, url]) => method === "GET" && url === "/api/annotations/7/steps/?first=5&last=6"), JSON.stringify(atLoad));
  assert.equal($("ws-step-num").textContent, "Step 6 of 6");
  assert.equal($("ws-stage").querySelector("img").src, "/shots/6.png");
  assert.equal($("ws-alts").hidden, true);  // refused: no alternatives on this project
  assert.equal(browser.intervals.filter((i) => i.ms === 30000).length, 1);  // the lease's heartbeat
});
