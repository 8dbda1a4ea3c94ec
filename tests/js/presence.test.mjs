// Who has which trace open (static/js/presence.js, drawn by live.js), from the live socket's events as
// annotation/events.py and annotation.review.selectors.presence_snapshot make them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ageText, holdersOf, presenceApply, presenceState, projectLeases } from "../../static/js/presence.js";

const lease = (id, trace, user, project = 1) => ({
  lease_id: id, trace_id: trace, project_id: project, external_id: `ext-${trace}`, user,
  expires_at: "2026-11-28T07:10:00+00:00", heartbeat_at: "2026-11-28T07:00:00+00:00",
});

test("a snapshot replaces the leases; viewers come and go by their own events", () => {
  const state = presenceState();
  assert.equal(presenceApply(state, { type: "hello", presence: [lease(1, 10, "ann"), lease(2, 11, "bob")] }), null);
  assert.equal(presenceApply(state, { type: "presence", state: "open", trace_id: 10, user: "lead" }), null);
  presenceApply(state, { type: "presence", state: "open", trace_id: 10, user: "ann" });  // holds it already
  assert.deepEqual(holdersOf(state, 10), [
    { user: "ann", lease_id: 1, heartbeat_at: "2026-11-28T07:00:00+00:00" },
    { user: "lead", lease_id: null },
  ]);
  presenceApply(state, { type: "presence", state: "closed", trace_id: 10, user: "lead" });
  assert.deepEqual(holdersOf(state, 10).map((h) => h.user), ["ann"]);
  presenceApply(state, { type: "presence.snapshot", presence: [lease(3, 12, "cy")] });
  // ann's lease is gone, her page is still open on the trace.
  assert.deepEqual(holdersOf(state, 10), [{ user: "ann", lease_id: null }]);
  assert.deepEqual(holdersOf(state, 12).map((h) => h.user), ["cy"]);
});

test("a released lease goes at once; a claim or a submission asks the server for the truth", () => {
  const state = presenceState();
  presenceApply(state, { type: "hello", presence: [lease(1, 10, "ann")] });
  assert.equal(presenceApply(state, { type: "lease", state: "released", lease_id: 1, trace_id: 10, user: "ann" }), null);
  assert.deepEqual(holdersOf(state, 10), []);
  assert.deepEqual(presenceApply(state, { type: "lease", state: "claimed", lease_id: 4, trace_id: 10 }),
    { type: "presence.snapshot" });
  assert.deepEqual(presenceApply(state, { type: "annotation", state: "submitted", trace_id: 10 }),
    { type: "presence.snapshot" });
  assert.equal(presenceApply(state, { type: "error", detail: "You cannot see who works on what." }), null);
});

test("a project's list names each lease's trace by its external id, else its number", () => {
  const state = presenceState();
  presenceApply(state, { type: "hello", presence: [lease(1, 10, "ann"), { ...lease(2, 11, "bob"), external_id: "" },
    lease(3, 12, "cy", 2)] });
  assert.deepEqual(projectLeases(state, 1).map((l) => [l.user, l.trace, l.lease_id]), [["ann", "ext-10", 1], ["bob", "11", 2]]);
  assert.deepEqual(projectLeases(state, 3), []);
});

test("a holder's last sign of life in words", () => {
  const now = Date.parse("2026-11-28T07:00:00+00:00");
  assert.equal(ageText("2026-11-28T06:59:35+00:00", now), "active 25 s ago");
  assert.equal(ageText("2026-11-28T06:52:00+00:00", now), "active 8 min ago");
  assert.equal(ageText("2026-11-28T07:00:05+00:00", now), "active 0 s ago");  // a clock a little ahead
});
