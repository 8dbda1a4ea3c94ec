// The Versions panel's pure part (static/js/versions.js): the rows it shows from the server's list, and what a
// restore's answer means for the page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { restoreOutcome, sessionWords, versionRows, whenWords } from "../../static/js/versions.js";

const served = (canRestore) => ({
  current_version: 3,
  can_restore: canRestore,
  restore_refusal: canRestore ? "" : "This annotation is accepted; …",
  versions: [
    { number: 3, at: "2026-11-28T03:10:00+00:00", by: "ann", kind: "edit", status: "Draft", current: true,
      changes: ["verdict: First error at τ → No error"], restore_url: "/api/annotations/7/versions/3/restore/" },
    { number: 2, at: "2026-11-28T03:05:00+00:00", by: "ann", kind: "edit", status: "Draft", current: false,
      changes: ["corrected thought: nothing → “Click.”"], restore_url: "/api/annotations/7/versions/2/restore/" },
    { number: 1, at: "2026-11-28T03:00:00+00:00", by: null, kind: "created", status: "Draft", current: false,
      changes: ["the annotation as it was first made"], restore_url: "/api/annotations/7/versions/1/restore/" },
  ],
});

test("rows keep the server's order and offer a restore on every older version", () => {
  const rows = versionRows(served(true));
  assert.deepEqual(rows.map((r) => r.number), [3, 2, 1]);
  assert.deepEqual(rows.map((r) => r.restorable), [false, true, true]);
  assert.equal(rows[0].title, "Version 3 (current)");
  assert.equal(rows[1].title, "Version 2");
  assert.deepEqual(rows[1].changes, ["corrected thought: nothing → “Click.”"]);
  assert.equal(rows[2].meta.startsWith("(system) · "), true);
  assert.equal(rows[1].restoreUrl, "/api/annotations/7/versions/2/restore/");
});

test("no row offers a restore when the server says this user may not restore now", () => {
  assert.deepEqual(versionRows(served(false)).map((r) => r.restorable), [false, false, false]);
  assert.deepEqual(versionRows({}), []);
});

test("a restore's answer: done, stale (409 with the version now), or the refusal's words", () => {
  assert.deepEqual(restoreOutcome({ status: 200, data: { version: 4 } }, 2),
    { done: true, message: "Version 2 restored as version 4." });
  const stale = restoreOutcome({ status: 409, data: { detail: "This annotation was changed elsewhere", current_version: 5 } }, 2);
  assert.equal(stale.done, false);
  assert.equal(stale.stale, true);
  assert.match(stale.message, /^Not restored: This annotation was changed elsewhere/);
  assert.match(restoreOutcome({ status: 0, data: {} }, 2).message, /cannot be reached/);
  assert.match(restoreOutcome({ status: 404, data: { detail: "No version 9" } }, 9).message, /No version 9/);
});

test("times read as a date and minutes, nothing for a bad one", () => {
  assert.match(whenWords("2026-11-28T03:10:00+00:00"), /^Nov 2[78], 2026, \d{1,2}:\d0\s[AP]M$/);  // the page's language: "en" under node
  assert.equal(whenWords("not a date"), "");
});

test("a typing session's saves are one row, saying how many and which versions; a rewrite comes with its diff", () => {
  const segments = [
    { op: "equal", text: "Click the " }, { op: "delete", text: "Display" }, { op: "insert", text: "Sound" },
    { op: "equal", text: " item in the sidebar of the…" },
  ];
  const rows = versionRows({ can_restore: true, versions: [
    { number: 23, first: 3, saves: 21, since: "2026-11-28T03:05:00+00:00", at: "2026-11-28T03:10:00+00:00", by: "ann",
      kind: "edit", status: "Draft", current: true, changes: ["corrected thought: rewritten (what differs is shown below)"],
      diffs: [{ field: "corrected thought", segments }] },
    { number: 2, first: 2, saves: 1, since: "2026-11-28T03:00:00+00:00", at: "2026-11-28T03:00:00+00:00", by: "ann",
      kind: "edit", status: "Draft", current: false, changes: ["verdict: Not decided → First error at τ"], diffs: [] },
  ] });
  assert.match(rows[0].meta, /· 21 saves while typing \(versions 3–23\) from \d{1,2}:\d5\s[AP]M$/);
  assert.deepEqual(rows[0].diffs, [{ field: "corrected thought", segments }]);
  assert.equal(rows[1].meta.includes("saves"), false);
  assert.deepEqual(rows[1].diffs, []);
  assert.equal(sessionWords({ saves: 1, first: 2, number: 2 }), "");
});
