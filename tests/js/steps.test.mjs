// Which windows of steps the workspace asks for (static/js/workspace/steps.js): the steps within half a window of
// the one shown, in windows aligned as the server cuts them, the one holding the step shown first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { windowsToLoad } from "../../static/js/workspace/steps.js";

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
