// The trace list's pre-score start (static/js/prescore_start.js) and the jobs' finished statuses (static/js/jobs.js),
// against the server's job table and its own answers: a pre-scoring job's, and a refusal of every kind.
import { test } from "node:test";
import assert from "node:assert/strict";
import { FINISHED, isFinished } from "../../static/js/jobs.js";
import { jobLine, keepFollowing, startAnswer } from "../../static/js/prescore_start.js";
import { ERRORS, JOBS } from "./served.mjs";

const answer = (status) => JOBS.prescore_jobs.find((job) => job.status === status);

test("the pages stop following a job in the statuses the server never moves it out of", () => {
  assert.deepEqual([...FINISHED].sort(), JOBS.finished);
  for (const status of JOBS.statuses) assert.equal(isFinished(status), JOBS.finished.includes(status), status);
  assert.ok(JOBS.statuses.some((s) => !isFinished(s)) && JOBS.statuses.some(isFinished));
});

test("a running job shows its progress; an ended one its message, not the counter it ended on", () => {
  const running = answer("running");
  assert.equal(jobLine(running), `rules job ${running.id}: running, ${running.progress_done}/6 steps`);
  const done = answer("succeeded");
  assert.equal(jobLine(done), `rules job ${done.id}: succeeded — 6 steps scored`);
  const failed = answer("failed");
  assert.equal(jobLine(failed), `rules job ${failed.id}: failed — The model folder is missing. (1 problems)`);
  assert.equal(jobLine(answer("queued")), `rules job ${answer("queued").id}: queued, 0/6 steps`);
});

test("a start the server accepts is followed; a refusal shows the server's own words, of every kind", () => {
  const queued = answer("queued");
  assert.deepEqual(startAnswer({ status: 202, data: queued }), { job: queued, line: jobLine(queued) });
  for (const refused of ERRORS.answers) {
    const said = startAnswer({ status: refused.status, data: refused.data });
    assert.equal(said.job, null, refused.what);
    assert.equal(said.line, refused.data.detail, refused.what);
  }
  // A field's refusal (the serializer's) names the field; a body-less answer its status; no answer at all says so.
  assert.equal(startAnswer({ status: 400, data: { scorer: ['"x" is not a valid choice.'], kind: "invalid" } }).line,
    'scorer: "x" is not a valid choice.');
  assert.equal(startAnswer({ status: 502, data: {} }).line, "Not started: the server answered 502.");
  assert.match(startAnswer({ status: 0, data: {} }).line, /could not be reached/);
});

test("a job is asked about again until an answer says it has ended", () => {
  for (const job of JOBS.prescore_jobs) {
    assert.equal(keepFollowing({ status: 200, data: job }), !JOBS.finished.includes(job.status), job.status);
  }
  assert.equal(keepFollowing({ status: 0, data: {} }), true); // unreachable: ask again
  assert.equal(keepFollowing({ status: 502, data: {} }), true);
});
