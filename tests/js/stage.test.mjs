// The workspace stage's decisions (static/js/workspace/stage.js): a pane's caption and what it says without a
// screenshot, where the loupe goes, and the placing hint, with each action type's points from the served table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loupePlacement, missingShotText, paneCaption, placeHint, sub } from "../../static/js/workspace/stage.js";
import { pointArgs } from "../../static/js/action_editor.js";
import { TABLE } from "./served.mjs";

const hintFor = (slot, action, extra) => placeHint({
  slot, action, points: action ? pointArgs(TABLE, action.type) : [], hints: null, hasShot: true, ...extra,
});

test("a pane's caption: o with the index in subscript, the step, or the final screen after the last", () => {
  assert.equal(sub(120), "₁₂₀");
  assert.equal(paneCaption(3, 12), "o₃ · step 3");
  assert.equal(paneCaption(13, 12), "o₁₃ · final screen");
});

test("a pane without a screenshot: no final screen kept, the step loading, or recorded without one", () => {
  assert.equal(missingShotText(13, 12, false), "No screen after the last step was kept.");
  assert.equal(missingShotText(4, 12, false), "Loading this step…");
  assert.equal(missingShotText(4, 12, true), "No screenshot was recorded for this step.");
});

test("the loupe: three times the image, centred on the point, up and right of it, flipped near the edges", () => {
  const image = { left: 100, top: 100, width: 800, height: 450 }, box = { left: 100, top: 100, width: 800, height: 450 };
  assert.deepEqual(loupePlacement(image, box, 500, 325), { size: [2400, 1350], position: [75 - 1200, 75 - 675], at: [424, 51] });  // 400 + 24; 225 - 150 - 24
  // Near the top the loupe goes below the point; near the right edge, to its left.
  assert.deepEqual(loupePlacement(image, box, 880, 120).at, [780 - 150 - 24, 44]);
  assert.deepEqual(loupePlacement(image, box, 100, 100).position, [75, 75]);
  assert.equal(loupePlacement(image, box, 99, 300), null);
  assert.equal(loupePlacement(image, box, 500, 551), null);
});

test("the hint asks for the type, then each required point in order, and goes once they are placed", () => {
  assert.equal(hintFor("corrected", null).text, "Choose the corrected action type, then click the screenshot to place it.");
  assert.equal(hintFor("reflection", { type: "drag", args: {} }).text,
    "Click the screenshot to place start_box then end_box of the post-reflection drag.");
  // select's end is optional: its start alone is asked for, and placed it is enough.
  assert.equal(hintFor("corrected", { type: "select", args: {} }).text, "Click the screenshot to place start_box of the corrected select.");
  assert.equal(hintFor("corrected", { type: "select", args: { start_box: [1, 2] } }).text, null);
  // scroll has only optional points: both are offered.
  assert.equal(hintFor("corrected", { type: "scroll", args: {} }).text, "Click the screenshot to place start_box then end_box of the corrected scroll.");
  assert.equal(hintFor("corrected", { type: "drag", args: { start_box: [1, 2], end_box: [3, 4] } }).text, null);
  assert.equal(hintFor("corrected", { type: "hotkey", args: { key: "ctrl c" } }).text, "The hotkey action has no point to place.");
});

test("a point outside its element box makes the hint a warning; a step without a screenshot or open labels say so", () => {
  const outside = hintFor("corrected", { type: "click", args: { start_box: [500, 500] }, target_box: [0, 0, 100, 100] });
  assert.equal(outside.outside, true);
  assert.match(outside.text, /^The point is outside the element box drawn for it, so the corrected action is invalid/);
  const inside = hintFor("corrected", { type: "click", args: { start_box: [50, 50] }, target_box: [0, 0, 100, 100] });
  assert.deepEqual(inside, { text: null, outside: false });
  assert.match(hintFor("corrected", null, { hasShot: false }).text, /^This step has no screenshot/);
  assert.match(hintFor("corrected", null, { hints: { kind: "cells" } }).text, /^Type a cell's number/);
  assert.match(hintFor("corrected", null, { hints: { kind: "elements" } }).text, /^Type an element's label/);
});
