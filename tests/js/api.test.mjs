// How a page reads an answer (static/js/api.js): a lost login is told by the error's kind, as the server sends it,
// never by its words.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SIGNED_OUT, describeErrors, isAuthProblem } from "../../static/js/api.js";
import { ERRORS } from "./served.mjs";

test("the page's lost-login kind is the server's", () => {
  assert.equal(SIGNED_OUT, ERRORS.signed_out);
  assert.ok(Object.hasOwn(ERRORS.kinds, SIGNED_OUT), Object.keys(ERRORS.kinds).join(", "));
});

test("each of the server's answers is a lost login exactly when the server made it one", () => {
  assert.ok(ERRORS.answers.length >= 8);
  for (const answer of ERRORS.answers) {
    assert.equal(isAuthProblem({ status: answer.status, data: answer.data }), answer.signed_out, answer.what);
  }
  // Both sides are there: the check would pass on a list of one kind of answer.
  assert.ok(ERRORS.answers.some((a) => a.signed_out) && ERRORS.answers.some((a) => !a.signed_out));
});

test("a refusal whose words speak of logging in is still a refusal", () => {
  const refusal = ERRORS.answers.find((a) => a.data.kind === "forbidden" && /log in|credentials/.test(a.data.detail));
  assert.ok(refusal, "the server's answers hold such a refusal");
  assert.equal(isAuthProblem({ status: refusal.status, data: refusal.data }), false);
});

test("a 401 without the studio's body (a proxy's) is a lost login; an unreachable server is not", () => {
  assert.equal(isAuthProblem({ status: 401, data: {} }), true);
  assert.equal(isAuthProblem({ status: 0, data: {} }), false);
  assert.equal(isAuthProblem({ status: 403, data: {} }), false);
});

test("a refusal's words: its detail, else its field errors", () => {
  for (const answer of ERRORS.answers) assert.equal(describeErrors(answer.data), answer.data.detail);
  assert.equal(describeErrors({ format: ['"csv" is not a valid choice.'], kind: "invalid" }),
    'format: "csv" is not a valid choice.');
});
