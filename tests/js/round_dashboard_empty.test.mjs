// The round dashboard of a project without rounds (static/js/round_dashboard.js's start, on a stand-in document:
// round_dashboard_answers.mjs): the line that says what to do, without an empty table and six bare axes under it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startedPage } from "./round_dashboard_answers.mjs";

const { error, root, doc, charts } = await startedPage({ rounds: [200, { rounds: [] }], replays: [200, { rounds: [] }] });

test("no rounds: the line that says what to do; the table, the charts and the replays hidden", () => {
  assert.equal(error.hidden, true);
  assert.equal(doc.getElementById("rounds-empty").hidden, false);
  assert.deepEqual(root.querySelectorAll("[data-when-rounds]").map((el) => el.hidden), [true, true]);
  assert.deepEqual(root.querySelectorAll("#round-table tbody tr"), []);
  assert.deepEqual(charts.map((c) => c.config.data.labels), [[], [], [], [], [], []]);
  assert.equal(doc.getElementById("round-replays").hidden, true);
  assert.ok(root.dataset.loaded);
});
