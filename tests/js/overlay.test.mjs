// Drawing actions from the served table (static/js/workspace/overlay.js, actionMarks): the shape and the badge come
// from each action's served ``mark``; coordinates from the one form.
import { test } from "node:test";
import assert from "node:assert/strict";
import { actionMarks } from "../../static/js/workspace/overlay.js";
import { TABLE } from "./served.mjs";

const shot = { width: 2000, height: 1000, extent: [1000, 1000] };  // 2 screenshot pixels per unit across
const tags = (marks) => marks.shapes.map((s) => s.tag);
const badgeText = (marks) => marks.shapes.filter((s) => s.tag === "text").map((s) => s.text);

test("every served action has a mark the overlay can draw", () => {
  const shapes = new Set(["point", "double", "path", "scroll", "text", "keys", "corner"]);
  for (const action of TABLE.actions) assert.ok(shapes.has(action.mark.shape), `${action.name}: ${action.mark.shape}`);
});

test("a click is a ring and a dot on its pixel, without a badge", () => {
  const marks = actionMarks(TABLE, shot, { type: "click", args: { start_box: [250, 500] } }, "recorded");
  assert.deepEqual(tags(marks), ["circle", "circle"]);
  assert.equal(marks.shapes[0].attrs.cx, 500);
  assert.equal(marks.shapes[0].attrs.cy, 500);
  assert.equal(marks.attrs.class, "mark recorded");
  assert.equal(marks.attrs["data-action"], "click");
});

test("badges are the served words", () => {
  const mark = (type, args) => badgeText(actionMarks(TABLE, shot, { type, args }, "fix"));
  assert.deepEqual(mark("right_single", { start_box: [1, 1] }), [TABLE.actions.find((a) => a.name === "right_single").mark.badge]);
  assert.deepEqual(mark("left_double", { start_box: [1, 1] }), ["double"]);
  assert.deepEqual(mark("finished", { content: "done" }), ["✓ finished: done"]);
  assert.deepEqual(mark("finished", {}), ["✓ finished"]);
  assert.deepEqual(mark("hotkey", { key: "ctrl  c" }), ["⌘ ctrl + c"]);
  assert.deepEqual(mark("scroll", { direction: "up" }), ["scroll up"]);
  assert.deepEqual(mark("type", { content: "hi\n" }), ["⌨ hi\\n"]);
  assert.deepEqual(mark("open_app", { app_name: "Maps" }), ["open Maps"]);
});

test("nothing is drawn before there is something to show", () => {
  assert.equal(actionMarks(TABLE, shot, { type: "hotkey", args: { key: " " } }, "fix"), null);
  assert.equal(actionMarks(TABLE, shot, { type: "type", args: {} }, "fix"), null);
  assert.equal(actionMarks(TABLE, shot, null, "fix"), null);
});

test("a drag is an arrow from its start to its end pixel; a scroll without a point starts mid-screen", () => {
  const drag = actionMarks(TABLE, shot, { type: "drag", args: { start_box: [100, 100], end_box: [400, 300] } }, "recorded");
  const line = drag.shapes.find((s) => s.tag === "line").attrs;
  assert.deepEqual([line.x1, line.y1, line.x2, line.y2], [200, 100, 800, 300]);
  assert.equal(line["marker-end"], "url(#head-recorded)");
  const scroll = actionMarks(TABLE, shot, { type: "scroll", args: { direction: "left" } }, "fix");
  const arrow = scroll.shapes.find((s) => s.tag === "line").attrs;
  assert.deepEqual([arrow.x1, arrow.y1], [1000, 500]);
  assert.ok(arrow.x2 < arrow.x1 && arrow.y2 === arrow.y1);
});

test("the element box is drawn from the action's target_box, and markers shrink as the view zooms in", () => {
  const action = { type: "click", args: { start_box: [300, 300] }, target_box: [200, 200, 400, 400] };
  const marks = actionMarks(TABLE, shot, action, "fix");
  const rect = marks.shapes.find((s) => s.attrs.class === "element-box").attrs;
  assert.deepEqual([rect.x, rect.y, rect.width, rect.height], [400, 200, 400, 200]);
  const zoomed = actionMarks(TABLE, shot, action, "fix", { zoom: 4 });
  const ring = (m) => m.shapes.find((s) => s.attrs.class === "ring").attrs.r;
  assert.equal(ring(zoomed) * 4, ring(marks));
});

test("an alternative's number is on its marker, and a point not placed yet badges the corner", () => {
  const alt = actionMarks(TABLE, shot, { type: "click", args: { start_box: [10, 10] } }, "alt",
    { label: 3, attrs: { "data-alt": 3 } });
  assert.deepEqual(badgeText(alt), ["3"]);
  assert.equal(alt.attrs["data-alt"], 3);
  const unplaced = actionMarks(TABLE, shot, { type: "click", args: {} }, "fix");
  assert.deepEqual(badgeText(unplaced), ["click"]);
});
