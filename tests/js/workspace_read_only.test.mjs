// The workspace's entry module (static/js/workspace.js) on a page of a submitted annotation (tests/js/workspace_page.mjs):
// read only, it says so with the status in words, keeps no lease and takes no edits kept in the browser; a trace
// awaiting its instruction has no button to show all of it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeFetch, settle } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";
import { step, workspacePage } from "./workspace_page.mjs";

const { root, browser, $ } = workspacePage({
  annotation: { status: "submitted", status_display: "Submitted" }, editable: false, lease: null, instruction: false,
  stored: { version: 5, form: { verdict: "no_error" }, at: 1 },
});
const sent = fakeFetch(async (method, url) => {
  if (url === "/api/actions/table/") return [200, TABLE];
  if (url.startsWith("/api/annotations/7/steps/")) return [200, { steps: [step(5), step(6)] }];
  if (url === "/api/annotations/7/check-action/") return [200, { canonical: "click(checked)", errors: [], valid: true }];
  return [200, {}];
});

await import("../../static/js/workspace.js");
await settle(150);  // the editor's checks, 120 ms after the table came

test("a submitted annotation's page is read only and says so; nothing is saved and no lease beats", () => {
  assert.equal($("ws-save").textContent, "Submitted — read only");
  assert.equal($("ws-save").dataset.state, "saved");
  // Only the served correction is checked: no draft saved, no lease's heartbeat.
  assert.deepEqual(sent.filter(([method]) => method !== "GET").map(([method, url]) => `${method} ${url}`), ["POST /api/annotations/7/check-action/", "POST /api/annotations/7/check-action/"]);
  assert.deepEqual(browser.intervals.map((i) => i.ms), [4000]);  // the autosave's, which saves nothing read only
  assert.equal($("ws-step-num").textContent, "Step 3 of 6");  // the served answer, not the browser's copy
  assert.equal(root.dataset.ready, "1");
  assert.equal(browser.resize.some((o) => o.node === $("ws-instruction")), false);
});
