// A job's page following its job (static/js/job_status.js's wiring, run as the module loads where there is a document),
// on a stand-in document, fetch and timers: the box's parts show each answer (the server's words and counters, an import
// job's problems and notes, a finished export's bundle), a refused or failed poll asks again, and the polling ends
// once the job has.
import { test } from "node:test";
import assert from "node:assert/strict";
import { standInDocument } from "./stand_in_dom.mjs";
import { JOBS } from "./served.mjs";

const doc = standInDocument();
const m = doc.make;
const part = (tag, job, fields = {}, ...children) => m(tag, { ...fields, data: { job, ...(fields.data || {}) } }, ...children);
const box = m("div", { data: { jobBox: "", url: "/api/imports/5/", status: "queued" } },
  part("span", "status"), part("span", "progress"), part("progress", "percent"), part("p", "message"), part("ul", "errors"),
  part("p", "attention", { hidden: true }),
  part("div", "problems-box", { hidden: true }, part("span", "problems-count"), part("ul", "problems")),
  part("div", "notes-box", { hidden: true }, part("span", "notes-count"), part("ul", "notes", { data: { traceUrl: JOBS.trace_url } })),
  part("p", "when-succeeded", { hidden: true }), part("p", "when-running"), part("code", "sha"));
doc.body.append(box);
const one = (name) => box.querySelector(`[data-job="${name}"]`);

const timers = [];
globalThis.setTimeout = (fn, ms) => { timers.push({ fn, ms }); return timers.length; };
const answers = [];
const asked = [];
globalThis.fetch = async (url, init) => {
  asked.push([init.method, url]);
  const answer = answers.shift();
  if (answer === "offline") throw new TypeError("fetch failed");
  const [status, data] = answer;
  return { status, json: async () => data };
};
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };
/** Runs the poll the page has waiting, answered with ``answer``. */
async function poll(answer) {
  answers.push(answer);
  const waiting = timers.shift();
  assert.ok(waiting, "a poll is waiting");
  assert.equal(waiting.ms, 1500);
  waiting.fn();
  await settle();
}

const running = {
  status: "running", status_display: "Running", progress_text: "2 of 4 traces read", progress_done: 2, progress_total: 4,
  message: "", errors: [], attention: "1 kept trace needs a look.",
  problems: [{ error: "b.json: unreadable", trace: null }],
  notes: [{ error: "a.json: no instruction", trace: 7 }, { error: "c.json: renamed", trace: null }],
};

answers.push([502, {}]);
await import("../../static/js/job_status.js");
await settle();

test("the page asks about its job at once; a refused poll shows nothing and asks again", () => {
  assert.deepEqual(asked, [["GET", "/api/imports/5/"]]);
  assert.equal(one("status").textContent, "");
  assert.equal(timers.length, 1);
});

test("a running import job: its status, the server's progress words, its problems and the notes that link to their trace", async () => {
  await poll([200, running]);
  assert.equal(one("status").textContent, "Running");
  assert.equal(one("status").className, "pill running");
  assert.equal(one("progress").textContent, "2 of 4 traces read");
  assert.equal(one("percent").value, 50);
  assert.equal(one("attention").textContent, "1 kept trace needs a look.");
  assert.equal(one("attention").hidden, false);
  assert.deepEqual(one("problems").children.map((li) => li.textContent), ["b.json: unreadable"]);
  assert.equal(one("problems-count").textContent, "1");
  assert.equal(one("problems-box").hidden, false);
  const notes = one("notes").children;
  assert.deepEqual(notes.map((li) => li.textContent), ["a.json: no instruction Open the trace", "c.json: renamed"]);
  assert.equal(notes[0].querySelector("a").href, JOBS.trace_url_of_7);
  assert.equal(one("notes-box").hidden, false);
  assert.equal(one("when-running").hidden, false);
  assert.equal(one("when-succeeded").hidden, true);
  assert.equal(one("sha").textContent, "");
  assert.equal(timers.length, 1);
});

test("a poll that cannot reach the server keeps what the page shows and asks again", async () => {
  await poll("offline");
  assert.equal(one("progress").textContent, "2 of 4 traces read");
  assert.equal(timers.length, 1);
});

test("a finished export: its counter, its message and errors, its bundle; the polling ends", async () => {
  await poll([200, {
    status: "succeeded", status_display: "Succeeded", progress_done: 4, progress_total: 4, message: "4 traces written",
    errors: [{ error: "d.json: skipped" }], attention: "", problems: [], notes: [], bundle_sha256: "ab12", bundle_size: 2048,
  }]);
  assert.equal(one("status").className, "pill succeeded");
  assert.equal(one("progress").textContent, "4 / 4");
  assert.equal(one("percent").value, 100);
  assert.equal(one("message").textContent, "4 traces written");
  assert.deepEqual(one("errors").children.map((li) => li.textContent), ["d.json: skipped"]);
  assert.equal(one("attention").hidden, true);
  assert.equal(one("problems-box").hidden, true);
  assert.equal(one("notes-box").hidden, true);
  assert.equal(one("problems-count").textContent, "0");
  assert.equal(one("when-succeeded").hidden, false);
  assert.equal(one("when-running").hidden, true);
  assert.equal(one("sha").textContent, "sha256 ab12 · 2048 bytes");
  assert.deepEqual(timers, []);
  assert.equal(asked.length, 4);
});
