// The round dashboard on a page whose rounds are refused (static/js/round_dashboard.js's start, on a stand-in document:
// round_dashboard_answers.mjs): the server's words and nothing drawn; replay counts out of reach leave their section
// hidden.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startedPage } from "./round_dashboard_answers.mjs";

const { error, charts, root, doc, asked } = await startedPage({
  rounds: [403, { detail: "Only the project's leads see its rounds.", kind: "forbidden" }], replays: "offline" });

test("a refusal shows the server's words and draws nothing", () => {
  assert.equal(asked.length, 2);
  assert.equal(error.hidden, false);
  assert.equal(error.textContent, "Only the project's leads see its rounds.");
  assert.deepEqual(charts, []);
  assert.equal(root.dataset.loaded, undefined);
  assert.deepEqual(root.querySelectorAll("#round-table tbody tr"), []);
});

test("replay counts that cannot be read leave their section hidden, and settled", () => {
  const replays = doc.getElementById("round-replays");
  assert.equal(replays.hidden, true);
  assert.ok(replays.dataset.loaded);
});
