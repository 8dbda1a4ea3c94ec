// The job pages' live status (static/js/job_status.js): what it says of a job's progress and where a note links.
import { test } from "node:test";
import assert from "node:assert/strict";
import { bundleLine, percent, progressText, traceHref } from "../../static/js/job_status.js";
import { JOBS } from "./served.mjs";

test("the progress is the server's words when the job has them, else its counter", () => {
  assert.equal(progressText({ progress_text: "2 of 4 traces read", progress_done: 2, progress_total: 4 }),
    "2 of 4 traces read");
  assert.equal(progressText({ progress_text: "", progress_done: 2, progress_total: 4 }), ""); // the server's, empty
  assert.equal(progressText({ progress_done: 2, progress_total: 4 }), "2 / 4");
  assert.equal(progressText({ progress_done: 3, progress_total: 0 }), "3 done");
});

test("the progress bar is a whole percentage, 0 before the job knows its total", () => {
  assert.equal(percent({ progress_done: 1, progress_total: 3 }), 33);
  assert.equal(percent({ progress_done: 2, progress_total: 3 }), 67);
  assert.equal(percent({ progress_done: 6, progress_total: 6 }), 100);
  assert.equal(percent({ progress_done: 5, progress_total: 0 }), 0);
});

test("a note links to its trace's page, from the URL the page gives with id 0", () => {
  assert.equal(traceHref(JOBS.trace_url, 7), JOBS.trace_url_of_7);
  assert.notEqual(JOBS.trace_url, JOBS.trace_url_of_7);
});

test("a finished export names its bundle's digest and size", () => {
  assert.equal(bundleLine({ bundle_sha256: "ab12", bundle_size: 2048 }), "sha256 ab12 · 2048 bytes");
});
