// The round dashboard on a page whose server is out of reach for the rounds (static/js/round_dashboard.js's start, on
// a stand-in document: round_dashboard_answers.mjs): it says to reload; a refusal of the replay counts hides nothing
// it had not hidden.
import { test } from "node:test";
import assert from "node:assert/strict";
import { REPLAYS, startedPage } from "./round_dashboard_answers.mjs";

const { error, charts, doc } = await startedPage({ rounds: "offline", replays: [500, REPLAYS] });

test("a server out of reach says to reload the page, and nothing is drawn", () => {
  assert.equal(error.hidden, false);
  assert.equal(error.textContent, "Could not load the round dashboard; reload the page to try again.");
  assert.deepEqual(charts, []);
  assert.equal(doc.getElementById("round-replays").hidden, true);  // a refused count shows none of its rows
  assert.deepEqual(doc.getElementById("round-replays").querySelectorAll("tbody tr"), []);
});
