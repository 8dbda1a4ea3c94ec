// The keys of one review (static/js/review/keys.js installReviewKeys) on a stand-in document: each key runs its
// control (accept, reject's comment, the next review, the viewer's screens, the zoom), a key whose control is not on
// the page is left to the browser, keys typed into a field are text, and the key hints follow the person's choice.
import { test } from "node:test";
import assert from "node:assert/strict";
import { installReviewKeys } from "../../static/js/review/keys.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";

const CODES = { a: "KeyA", r: "KeyR", j: "KeyJ", k: "KeyK", x: "KeyX", "+": "Equal", "-": "Minus", "0": "Digit0" };

/** A review page with the controls named in ``present`` (all by default) and a body choosing ``shortcuts``. */
function page({ present = ["accept", "reject", "comment", "next"], shortcuts, zoomAny = true, screens = 5 } = {}) {
  const doc = standInDocument();
  if (shortcuts) doc.body.dataset.shortcuts = shortcuts;
  const ran = [];
  const controls = {
    accept: doc.make("button", { id: "accept-button" }),
    reject: doc.make("button", { id: "reject-button" }),
    comment: doc.make("textarea", { id: "review-comment" }),
    next: doc.make("a", { id: "next-review" }),
  };
  for (const [name, control] of Object.entries(controls)) {
    if (!present.includes(name)) continue;
    control.addEventListener("click", () => ran.push(name));
    doc.body.append(control);
  }
  const hint = doc.make("kbd", { data: { key: "a" } });
  const field = doc.make("input", { type: "text" });
  doc.body.append(hint, field);
  const zoom = { any: zoomAny, zoomIn: () => ran.push("zoom in"), zoomOut: () => ran.push("zoom out"), fit: () => ran.push("fit") };
  const viewer = { total: screens, step: (delta) => ran.push(`screen ${delta}`) };
  installReviewKeys({ zoom, viewer });
  /** Presses ``key`` with the focus on ``target`` (the page by default); returns whether the page took it. */
  const press = (key, { target = doc.body, ...extra } = {}) => {
    const event = new Event("keydown", { key, code: CODES[key] || key, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, ...extra });
    target.dispatchEvent(event);
    return event.defaultPrevented;
  };
  return { doc, ran, controls, hint, field, press };
}

test("each key runs its control: a accepts, r goes to the comment, → the next review, j k the screens, + - 0 the zoom", () => {
  const { doc, ran, controls, press } = page();
  for (const key of ["a", "ArrowRight", "j", "k", "+", "-", "0"]) assert.equal(press(key), true, key);
  assert.deepEqual(ran, ["accept", "next", "screen 1", "screen -1", "zoom in", "zoom out", "fit"]);
  assert.equal(press("r"), true);
  assert.equal(doc.activeElement, controls.comment);
  assert.equal(press("x"), false);  // no command
  assert.equal(press("a", { ctrlKey: true }), false);  // the browser's
  assert.deepEqual(ran.length, 7);
});

test("in the comment, letters are text and Ctrl+Enter sends the rejection; in another field nothing runs", () => {
  const { ran, controls, field, press } = page();
  assert.equal(press("a", { target: controls.comment }), false);
  assert.equal(press("Enter", { target: controls.comment, ctrlKey: true }), true);
  assert.equal(press("Enter", { target: field, ctrlKey: true }), false);
  assert.equal(press("j", { target: field }), false);
  assert.deepEqual(ran, ["reject"]);
});

test("a key whose control is not on the page is left to the browser", () => {
  const { ran, press } = page({ present: ["next"], zoomAny: false, screens: 0 });
  for (const key of ["a", "r", "j", "k", "+", "0"]) assert.equal(press(key), false, key);
  assert.equal(press("ArrowRight"), true);
  assert.deepEqual(ran, ["next"]);
  // The comment without the reject button: r does not go to it.
  const other = page({ present: ["comment"] });
  assert.equal(other.press("r"), false);
  assert.notEqual(other.doc.activeElement, other.controls.comment);
});

test("the person's choice: with a modifier, Alt+a accepts and a alone does nothing; the hints say Alt+a", () => {
  const { ran, hint, press } = page({ shortcuts: "modifier" });
  assert.equal(hint.textContent, "Alt+a");
  assert.equal(press("a"), false);
  assert.equal(press("a", { altKey: true }), true);
  assert.deepEqual(ran, ["accept"]);
  const off = page({ shortcuts: "off" });
  assert.equal(off.hint.hidden, true);
  assert.equal(off.press("a"), false);
  assert.equal(off.press("ArrowRight"), true);  // the named keys stay
});
