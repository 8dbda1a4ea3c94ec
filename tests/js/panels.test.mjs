// The workspace side's words (static/js/workspace/panels.js): the screen's name, the verdict, why there is no
// post-reflection, the way to the correction, and a refused submit's problems from the server's own answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { gotoText, reflectionMissingText, stepAnnouncement, stepTitle, submitProblems, verdictText } from "../../static/js/workspace/panels.js";
import { ERRORS } from "./served.mjs";

test("a screen's name: its step of the trace's, or the final screen after the last", () => {
  assert.equal(stepTitle(1, 3), "Step 1 of 3");
  assert.equal(stepTitle(3, 3), "Step 3 of 3");
  assert.equal(stepTitle(4, 3), "Final screen (after step 3)");
});

test("the verdict panel names the answer, τ for an error", () => {
  assert.equal(verdictText({ verdict: "error", tau: 4 }), "First error at step 4 (τ).");
  assert.equal(verdictText({ verdict: "no_error", tau: null }), "The trace has no error.");
  assert.equal(verdictText({ verdict: "unusable" }), "Unusable.");
  assert.equal(verdictText({ verdict: "" }), "Not decided yet.");
});

test("without a post-reflection the server's reason stands in its place: o_{τ+1} not kept, or steps dropped after τ", () => {
  const gap = "The source dropped 2 steps between step 3 and step 4: step 4's screen is not the one right after step 3 (o_4 was not kept), so no post-reflection step can be given.";
  assert.equal(reflectionMissingText(gap), `${gap} The annotation will record this as the reason.`);
  const last = "The trace has no screenshot after step 12 (o_13 was not kept), so no post-reflection step can be given.";
  assert.ok(reflectionMissingText(last).startsWith(last));
});

test("the way to the correction; without a post-reflection it sends nobody looking for one", () => {
  assert.equal(gotoText(null, ""), "");
  assert.equal(gotoText(5, "", "Alt+t"), "τ = 5. Press Alt+t to go to the correction, then → for the post-reflection.");
  assert.equal(gotoText(5, "", null), "τ = 5. Go to step 5 in the strip above to go to the correction, then → for the post-reflection.");
  assert.equal(gotoText(5, ""), "τ = 5. Press t to go to the correction, then → for the post-reflection.");
  assert.equal(gotoText(5, "The source dropped 1 step between step 5 and step 6: …"),
    "τ = 5. Press t to go to the correction (no post-reflection can be given: the reason is beside it).");
});

test("a refused submit lists the server's own problems: its field errors, else its detail", () => {
  for (const answer of ERRORS.answers) {
    const problems = submitProblems(answer.data);
    const messages = Object.values(problems);
    assert.ok(messages.length > 0 && messages.every((m) => typeof m === "string" && m.length > 0), answer.what);
    if (answer.data.errors) assert.deepEqual(problems, answer.data.errors, answer.what);
    else assert.deepEqual(problems, { detail: answer.data.detail }, answer.what);
  }
  const invalid = ERRORS.answers.find((a) => a.what.startsWith("Invalid"));
  assert.ok(invalid, "the server's answers include a refused field");
  assert.deepEqual(submitProblems({ errors: { tau: "τ must be a step." } }), { tau: "τ must be a step." });
  assert.deepEqual(submitProblems({}), { detail: "the server could not be reached" });  // status 0: api.js's {}
});

test("a screen reader hears the screen, its action, where it stands to τ and the verdict", () => {
  const error = { verdict: "error", tau: 2 };
  assert.equal(stepAnnouncement({ i: 2, stepCount: 4, actionText: "click(start_box='(1,2)')", form: error, reflectionAt: 3 }),
    "Step 2 of 4. Action: click(start_box='(1,2)'). This is τ, the first error: the correction is written here. First error at step 2 (τ).");
  assert.match(stepAnnouncement({ i: 3, stepCount: 4, actionText: "wait()", form: error, reflectionAt: 3 }), /post-reflection is written on this screen/);
  assert.equal(stepAnnouncement({ i: 5, stepCount: 4, actionText: "", form: { verdict: null }, reflectionAt: null }),
    "Final screen (after step 4). Not decided yet.");
});
