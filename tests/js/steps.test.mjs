// The trace's steps in the workspace (static/js/workspace/steps.js): which windows it asks for (the steps within half a
// window of the one shown, aligned as the server cuts them, the one holding the step shown first), and what it holds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createSteps, windowsToLoad } from "../../static/js/workspace/steps.js";

const loaded = (...ranges) => (i) => ranges.some(([a, b]) => i >= a && i <= b);

test("nothing is asked for when the neighbourhood is here", () => {
  assert.deepEqual(windowsToLoad(loaded([1, 100]), 30, 5000, 50), []);
});

test("the next window is asked for half a window before its first step", () => {
  assert.deepEqual(windowsToLoad(loaded([1, 50]), 24, 5000, 50), []);
  assert.deepEqual(windowsToLoad(loaded([1, 50]), 26, 5000, 50), [[51, 100]]);
});

test("a jump asks for the step's own window first, then its neighbour", () => {
  assert.deepEqual(windowsToLoad(loaded([1, 100]), 4010, 5000, 50), [[4001, 4050], [3951, 4000]]);
  assert.deepEqual(windowsToLoad(loaded([1, 100]), 4040, 5000, 50), [[4001, 4050], [4051, 4100]]);
});

test("windows stop at the trace's ends", () => {
  assert.deepEqual(windowsToLoad(loaded(), 4990, 5000, 50), [[4951, 5000]]);
  assert.deepEqual(windowsToLoad(loaded(), 5001, 5000, 50), [[4951, 5000]]);
  assert.deepEqual(windowsToLoad(loaded(), 1, 12, 50), [[1, 12]]);
  assert.deepEqual(windowsToLoad(loaded(), 1, 0, 50), []);
});

// createSteps with the server's answers given as a function: each window asked for is answered from ``trace``.
function stepsOf(count, initial, options) {
  const asked = [], loaded = [], failures = [];
  const trace = Array.from({ length: count }, (_, i) => ({ index: i + 1, shot: { url: `/s/${i + 1}.png` }, elements: [{ box: [0, 0, 1, 1] }] }));
  const steps = createSteps({
    initial: initial.map((i) => trace[i - 1]), count, finalShot: (options || {}).finalShot || null, size: 10, url: "/steps/",
    fetchWindow: async (first, last) => {
      asked.push([first, last]);
      if ((options || {}).offline) return { status: 0, data: {} };
      return { status: 200, data: { steps: trace.slice(first - 1, last) } };
    },
    loaded: (first, last) => loaded.push([first, last]),
    failed: (message) => failures.push(message),
  });
  return { steps, asked, loaded, failures };
}

test("the steps the page came with are here; the final screen is the last view only when it was kept", () => {
  const { steps } = stepsOf(30, [1, 2, 3]);
  assert.equal(steps.hasStep(2), true);
  assert.equal(steps.hasStep(4), false);
  assert.equal(steps.hasStep(31), true);  // the final screen needs no step's data
  assert.equal(steps.step(3).index, 3);
  assert.equal(steps.shotOf(2).url, "/s/2.png");
  assert.equal(steps.shotOf(4), null);
  assert.equal(steps.shotOf(31), null);
  assert.deepEqual(steps.elementsOf(31), []);
  assert.equal(steps.lastView, 30);
  const kept = stepsOf(30, [1], { finalShot: { url: "/final.png" } }).steps;
  assert.equal(kept.lastView, 31);
  assert.equal(kept.shotOf(31).url, "/final.png");
});

test("a jump loads the step's window and its neighbour, each asked for once however often it is wanted", async () => {
  const { steps, asked, loaded } = stepsOf(100, [1, 2, 3]);
  const [first, again] = await Promise.all([steps.loadAround(44), steps.loadAround(44)]);
  assert.equal(first, true);
  assert.equal(again, true);
  assert.deepEqual(asked, [[41, 50], [31, 40]]);
  assert.deepEqual(loaded, [[41, 50], [31, 40]]);
  assert.equal(steps.step(44).index, 44);
  assert.equal(steps.list()[43].index, 44);
  assert.equal(await steps.loadAround(44), true);
  assert.equal(asked.length, 2);  // here now: nothing asked again
});

test("a window that could not be loaded says so, and is asked for again next time", async () => {
  const { steps, asked, failures } = stepsOf(100, [1], { offline: true });
  assert.equal(await steps.loadAround(60), false);
  assert.equal(failures.length, 2);
  assert.match(failures[0], /Steps 51–60 could not be loaded \(status offline\)/);
  await steps.loadAround(60);
  assert.deepEqual(asked.slice(0, 2), asked.slice(2, 4));
});
