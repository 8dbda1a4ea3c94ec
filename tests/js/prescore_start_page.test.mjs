// The trace list's pre-score start as it runs on a page (static/js/prescore_start.js's wiring, run as the module loads
// where there is a document), on a stand-in document, fetch and timers, with the server's own job answers and
// refusals: the project's last run is followed after a reload, a scorer's button starts a run and follows it until
// it ends (an unreachable server is asked again), and a refusal shows the server's words and follows nothing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { standInDocument } from "./stand_in_dom.mjs";
import { ERRORS, JOBS } from "./served.mjs";

const doc = standInDocument();
const m = doc.make;
const box = m("div", { id: "prescore-start", data: { url: "/api/projects/3/prescore/", lastJob: "40" } },
  m("button", { data: { scorer: "rules" } }), m("button", { data: { scorer: "qwen2vl" } }));
const status = m("p", { id: "prescore-start-status" });
doc.body.append(box, status);
const [rules, model] = box.querySelectorAll("button");
const job = (state) => JOBS.prescore_jobs.find((j) => j.status === state);

const timers = [];
globalThis.setTimeout = (fn, ms) => { timers.push({ fn, ms }); return timers.length; };
const answers = [];
const asked = [];
globalThis.fetch = async (url, init) => {
  asked.push([init.method, url, init.body === undefined ? undefined : JSON.parse(init.body)]);
  const answer = answers.shift();
  if (answer === "offline") throw new TypeError("fetch failed");
  const [code, data] = answer;
  return { status: code, json: async () => data };
};
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };
/** Runs the question about the job the page has waiting, answered with ``answer``. */
async function poll(answer) {
  answers.push(answer);
  const waiting = timers.shift();
  assert.ok(waiting, "a poll is waiting");
  assert.equal(waiting.ms, 2000);
  waiting.fn();
  await settle();
}

answers.push([200, job("running")]);
await import("../../static/js/prescore_start.js");
await settle();

test("after a reload the project's last run is followed: its progress while it runs, its result once it ends", async () => {
  assert.deepEqual(asked, [["GET", "/api/prescore/jobs/40/", undefined]]);
  assert.equal(status.textContent, `rules job ${job("running").id}: running, ${job("running").progress_done}/6 steps`);
  await poll([200, job("succeeded")]);
  assert.equal(status.textContent, `rules job ${job("succeeded").id}: succeeded — 6 steps scored`);
  assert.deepEqual(timers, []);
});

test("a scorer's button starts a run and follows it; an unreachable server is asked again", async () => {
  answers.push([202, job("queued")]);
  rules.click();
  assert.equal(status.textContent, "Starting…");
  answers.push("offline");
  await settle();
  assert.deepEqual(asked.slice(2), [
    ["POST", "/api/projects/3/prescore/", { scorer: "rules" }], ["GET", `/api/prescore/jobs/${job("queued").id}/`, undefined],
  ]);
  assert.equal(status.textContent, `rules job ${job("queued").id}: queued, 0/6 steps`);  // the start's line stays
  await poll([200, job("failed")]);
  assert.equal(status.textContent, `rules job ${job("failed").id}: failed — The model folder is missing. (1 problems)`);
  assert.deepEqual(timers, []);
});

test("a refused start shows the server's own words and follows nothing", async () => {
  const refused = ERRORS.answers.find((a) => a.status === 403 && !a.signed_out);
  answers.push([refused.status, refused.data]);
  const before = asked.length;
  model.click();
  await settle();
  assert.deepEqual(asked.slice(before), [["POST", "/api/projects/3/prescore/", { scorer: "qwen2vl" }]]);
  assert.equal(status.textContent, refused.data.detail);
  assert.deepEqual(timers, []);
});
