// The workspace's pre-scoring strip and badges (static/js/prescore.js): what it makes of a trace's suggestions
// (prescoring.selectors.trace_suggestions: per scorer its suggested first error and its steps).
import { test } from "node:test";
import assert from "node:assert/strict";
import { byStep, firstError, ghostPoints, modelLine, modelStarts, stripCells } from "../../static/js/prescore.js";

const suggestions = {
  scorers: {
    rules: {
      suggested_tau: 2,
      steps: [
        { index: 1, suspicion: 0.1, flags: [] },
        { index: 2, suspicion: 0.7, flags: [{ code: "off_screen", label: "point off the screen", message: "…" }] },
      ],
    },
    qwen2vl: {
      model_name: "ui-tars-2b",
      suggested_tau: 3,
      steps: [
        { index: 2, suspicion: 0.4, agrees: true, loglik_mean: -0.51234, model_action: "click(start_box='(10,20)')",
          model_points: [[500, 500]], model_start: "Thought: Open it.\nAction: click(start_box='(10,20)')" },
        { index: 3, suspicion: 0.9, agrees: false, loglik_mean: null, model_action: "", model_points: [] },
      ],
    },
  },
};

test("each step takes the highest suspicion, the rules' flags and the model's row", () => {
  const steps = byStep(suggestions);
  assert.deepEqual([...steps.keys()].sort(), [1, 2, 3]);
  assert.equal(steps.get(2).suspicion, 0.7);
  assert.deepEqual(steps.get(2).flags.map((f) => f.code), ["off_screen"]);
  assert.equal(steps.get(2).model.model_action, "click(start_box='(10,20)')");
  assert.equal(steps.get(1).model, null);
  assert.deepEqual(byStep({}), new Map());
});

test("the suggested first error is the model's, else the rules', else none", () => {
  assert.equal(firstError(suggestions), 3);
  assert.equal(firstError({ scorers: { rules: suggestions.scorers.rules } }), 2);
  assert.equal(firstError({ scorers: {} }), null);
});

test("the strip has a cell per step of the trace, scored or not", () => {
  const cells = stripCells(suggestions, byStep(suggestions), 2, 4);
  assert.deepEqual(cells.map((c) => c.className), ["cell", "cell current", "cell first-error", "cell unscored"]);
  assert.equal(cells[2].title, "step 3: suspicion 0.90 (suggested first error)");
  assert.equal(cells[3].title, "step 4: not scored");
  assert.equal(cells[3].opacity, null);
  assert.ok(Math.abs(cells[0].opacity - (0.12 + 0.88 * 0.1)) < 1e-9);
  // More scored steps than the page knows of: every scored step still gets its cell.
  assert.equal(stripCells(suggestions, byStep(suggestions), 1, 0).length, 3);
});

test("the model's line says what it would do, whether it agrees, and the likelihood when there is one", () => {
  const steps = byStep(suggestions);
  assert.equal(modelLine(steps.get(2).model),
    "Model's own action: click(start_box='(10,20)') (agrees) · mean log-likelihood of the recorded reply -0.512");
  assert.equal(modelLine(steps.get(3).model), "Model's own action: — (differs)");
  assert.equal(modelLine({ model_action: "wait()", agrees: null }), "Model's own action: wait()");
  assert.equal(modelLine(null), "");
});

test("the model's replies are offered as starts for the steps that have one", () => {
  assert.deepEqual(modelStarts(byStep(suggestions)), { 2: "Thought: Open it.\nAction: click(start_box='(10,20)')" });
});

test("the ghost's points land on the screenshot through the one coordinate form", () => {
  const entry = byStep(suggestions).get(2);
  assert.deepEqual(ghostPoints({ width: 1920, height: 1080, extent: [1000, 1000] }, entry), [[960, 540]]);
  assert.deepEqual(ghostPoints(null, entry), []);
  assert.deepEqual(ghostPoints({ width: 1920, height: 1080, extent: [1000, 1000] }, byStep(suggestions).get(1)), []);
});
