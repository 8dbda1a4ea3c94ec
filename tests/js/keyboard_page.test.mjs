// The workspace's keys on a page (static/js/workspace/keyboard.js installKeyboard) on a stand-in document, with the
// real steps and stand-ins for the modules it drives: each key runs its command (where the eye is), the help is a
// dialog the page's keys wait behind, digits pick from the side's lists, and the keyboard path through a correction:
// the cursor placed, moved, jumped to a recorded element or a labelled one, a box drawn, all without the mouse.
import { test } from "node:test";
import assert from "node:assert/strict";
import { installKeyboard } from "../../static/js/workspace/keyboard.js";
import { createSteps } from "../../static/js/workspace/steps.js";
import { createWorkspaceState } from "../../static/js/workspace/state.js";
import { pickFields } from "../../static/js/workspace/autosave.js";
import * as Editor from "../../static/js/action_editor.js";
import { Event, standInDocument } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";

const SHOT = { url: "/s.png", thumb: "/t.png", width: 1000, height: 500, extent: [1000, 1000] };
const click = (x, y) => ({ type: "click", args: { start_box: [x, y] }, style: "box" });
const CODES = { j: "KeyJ", k: "KeyK", t: "KeyT", e: "KeyE", n: "KeyN", u: "KeyU", f: "KeyF", p: "KeyP", b: "KeyB", g: "KeyG", s: "KeyS", w: "KeyW", o: "KeyO", c: "KeyC", a: "KeyA", "?": "Slash", "+": "Equal", "-": "Minus", "0": "Digit0", "1": "Digit1", "2": "Digit2" };

/** A workspace on screen ``current`` of a 4-step trace with a first error at τ 3 (o_τ+1: screen 4); step 3 recorded
    two elements and a click. */
function workspace({ current = 3, fields = {}, corrected = null, hot = null } = {}) {
  const doc = standInDocument();
  const m = doc.make;
  const option = (value) => m("option", { value }, value || "—");
  const closeButton = m("button", { data: { close: "" } });
  const help = m("div", { id: "ws-help", hidden: true }, m("div", { class: "ws-modal-card", scrollTop: 40 },
    m("table", {}, m("tr", { data: { command: "next previous" } }, m("td", { class: "ws-keys-of" })), m("tr", { data: { command: "wrong" } }, m("td", { class: "ws-keys-of" }))), closeButton));
  const category = m("select", { id: "f-error_category", value: "" }, option(""), option("wrong element"), option("wrong text"));
  const thought = m("textarea", { id: "f-corrected_thought" });
  const typeSelect = m("select", { data: { slotType: "corrected" }, value: "" }, option(""), option("type"), option("click"));
  const content = m("input", { data: { arg: "content" } });
  const side = m("div", { class: "ws-side" }, category, thought, m("textarea", { id: "f-reflection_thought" }),
    m("div", { class: "ws-action-editor", data: { slot: "corrected" } }, typeSelect, content),
    m("div", { data: { starts: "corrected" } }, m("button", { class: "ws-start" })));
  const buttons = ["ws-help-btn", "ws-overlay-btn", "ws-compare-btn", "ws-zoom-in", "ws-zoom-out", "ws-zoom-level", "ws-zoom-fit", "ws-box-btn"].map((id) => m("button", { id }));
  doc.body.append(help, side, m("p", { id: "ws-place-hint" }), m("kbd", { data: { key: "e" } }), ...buttons);
  const steps = createSteps({
    initial: [1, 2, 3, 4].map((index) => ({ index, shot: SHOT, actions: index === 3 ? [click(250, 400)] : [],
      elements: index === 3 ? [{ box: [100, 200, 300, 600] }, { box: [600, 200, 800, 600] }] : [] })),
    count: 4, finalShot: null, size: 50, url: "/steps/", loaded: () => {}, failed: () => {},
  });
  const store = createWorkspaceState({ current, table: TABLE, form: pickFields({ verdict: "error", tau: 3, editor_state: { corrected }, ...fields }) });
  const calls = [];
  const record = (name) => (...args) => { calls.push([name, ...args]); };
  // Which point of the slot's action a placement fills next, from the first again for a new action (as editor.js).
  const placed = { corrected: [null, 0], reflection: [null, 0] };
  const form = () => store.get("form");
  doc.body.querySelector(".ws-start").addEventListener("click", () => calls.push(["start"]));
  installKeyboard({
    store, steps,
    editor: {
      slotAt: (i) => (i === 3 ? "corrected" : i === 4 ? "reflection" : null),
      pointArgsOf: (type) => Editor.pointArgs(TABLE, type),
      takesBox: (action) => Editor.pointArgs(TABLE, action.type).some((a) => a.name === "start_box"),
      placePoint: (slot, point) => {
        calls.push(["placePoint", slot, point]);
        const action = form().editor_state[slot], [of, counter] = placed[slot];
        placed[slot] = [action, Editor.place(TABLE, action, of === action ? counter : 0, point)];
      },
      drawBox: record("drawBox"),
      clearBox: (slot) => { calls.push(["clearBox", slot]); delete form().editor_state[slot].target_box; },
    },
    stage: {
      goTo: record("goTo"), renderStage: () => {}, placeOnElement: record("placeOnElement"), zoomAt: record("zoomAt"),
      zoomReset: record("zoomReset"), zoomActual: record("zoomActual"), keepCursorInView: () => {}, showCursorLoupe: () => {},
    },
    draft: { save: record("save"), banner: record("banner") },
    panels: {
      setVerdict: (verdict) => {
        calls.push(["setVerdict", verdict]);
        if (verdict === "error" && store.get("current") > 4) return false;
        form().verdict = verdict;
        if (verdict === "error") form().tau = store.get("current");
        return true;
      },
      submit: record("submit"),
    },
    alternatives: { takeAlternative: record("take"), hotAlternative: () => hot, markAlternative: record("mark") },
    undoable: (label, change) => { calls.push(["undoable", label]); return change(); },
  });
  /** Presses ``key`` with the focus on ``target`` (the page by default); returns whether the page took it. */
  const press = (key, extra = {}, target = doc.activeElement || doc.body) => {
    const event = new Event("keydown", { key, code: CODES[key] || key, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, ...extra });
    target.dispatchEvent(event);
    return event.defaultPrevented;
  };
  const cursor = () => store.get("cursor");
  return { doc, store, calls, press, help, closeButton, category, thought, typeSelect, content, form, cursor, $: (id) => doc.getElementById(id) };
}

test("the page's keys: stepping, τ, saving, submitting, the verdicts, zoom and the view's toggles", () => {
  const { press, calls, store } = workspace({ current: 2 });
  for (const key of ["j", "k", "ArrowRight", "ArrowLeft", "Home", "End", "t"]) assert.equal(press(key), true, key);
  assert.deepEqual(calls.map(([, arg]) => arg), [3, 1, 3, 1, 1, 4, 3]);
  calls.length = 0;
  press("s", { ctrlKey: true });
  press("Enter", { ctrlKey: true });
  press("n");
  press("u");
  press("+");
  press("-");
  press("0");
  assert.deepEqual(calls.map(([name, arg]) => (arg === undefined ? name : `${name} ${arg}`)), ["save", "submit", "setVerdict no_error", "setVerdict unusable", "zoomAt 0.5", "zoomAt 0.5", "zoomReset"]);
  assert.deepEqual(calls.slice(4, 6).map((c) => c[3]), [1.5, 1 / 1.5]);
  press("o");
  press("c");
  assert.deepEqual([store.get("overlay"), store.get("compare")], [false, true]);
  assert.equal(press("x"), false);  // no command
});

test("keys that write the correction act on its screens only; elsewhere they say where they work", () => {
  const { press, calls } = workspace({ current: 1, hot: 2 });
  assert.equal(press("s"), true);
  assert.deepEqual(calls, [["banner", "error", "That key edits the correction: it works on the correction's screen (τ; t goes there)."]]);
  const other = workspace({ current: 1, fields: { verdict: "no_error" } });
  other.press("p");
  assert.deepEqual(other.calls, []);  // no first error: nothing to say
  const onTau = workspace({ current: 3, hot: 2, corrected: { ...click(1, 1), target_box: [0, 0, 5, 5] } });
  onTau.press("s");
  onTau.press("2", { altKey: true });
  onTau.press("w");
  onTau.press("Delete");
  assert.deepEqual(onTau.calls, [["start"], ["take", 2], ["mark", 2, "wrong"], ["undoable", "Deleted the element box"], ["clearBox", "corrected"]]);
  assert.equal(onTau.form().editor_state.corrected.target_box, undefined);
});

test("in a field the letters are text; Esc leaves the field; Ctrl+S still saves", () => {
  const { press, calls, thought, doc } = workspace();
  thought.focus();
  assert.equal(press("j"), false);
  press("s", { ctrlKey: true });
  assert.deepEqual(calls, [["save"]]);
  press("Escape");
  assert.equal(doc.activeElement, doc.body);
});

test("e marks τ here and goes to the category; with one chosen, to the thought, and a digit right after picks the category", () => {
  const first = workspace({ current: 2, fields: { verdict: null, tau: null } });
  first.press("e");
  assert.deepEqual([first.form().verdict, first.form().tau], ["error", 2]);
  assert.equal(first.doc.activeElement, first.category);
  const chosen = workspace({ current: 3, fields: { error_category: "wrong element" } });
  chosen.press("e");
  assert.equal(chosen.doc.activeElement, chosen.thought);
  let changed = 0;
  chosen.category.addEventListener("change", () => { changed++; });
  assert.equal(chosen.press("2"), true);
  assert.equal(chosen.category.value, "wrong text");
  assert.equal(changed, 1);
  assert.equal(chosen.press("1"), false);  // only right after e: now a 1 typed into the thought
  const finalScreen = workspace({ current: 5 });
  finalScreen.press("e");
  assert.notEqual(finalScreen.doc.activeElement, finalScreen.category);
});

test("a digit in a focused list of the side picks its option; an action type then leads to its field or to the cursor", () => {
  const { press, category, thought, typeSelect, content, doc, cursor, form } = workspace({ corrected: { type: "type", args: {}, style: "box" } });
  category.focus();
  assert.equal(press("1"), true);
  assert.equal(category.value, "wrong element");
  assert.equal(doc.activeElement, thought);  // on to the thought
  typeSelect.focus();
  press("1");
  assert.equal(typeSelect.value, "type");
  assert.equal(doc.activeElement, content);  // a type action's text comes next
  form().editor_state.corrected = click(250, 100);  // as the editor would on the change
  typeSelect.focus();
  press("2");
  assert.equal(typeSelect.value, "click");
  assert.deepEqual(cursor().slot, "corrected");  // a click's point: the keyboard cursor
  assert.equal(press("9", {}, typeSelect), false);  // no ninth option
});

test("p puts the cursor on the point placed (else the recorded one); the arrows halve towards the target; Enter places", () => {
  const { press, cursor, calls, store, form } = workspace({ corrected: { type: "click", args: {}, style: "box" } });
  press("p");
  assert.deepEqual(cursor().px, [250, 200]);  // the recorded click (250, 400) in pixels of 1000 × 500
  press("ArrowRight");
  assert.deepEqual(cursor().px, [625, 200]);  // half way to the view's right edge
  press("ArrowRight", { shiftKey: true });
  assert.deepEqual(cursor().px, [635, 200]);  // a fine step: 1 % of the view
  assert.deepEqual(calls, []);  // the arrows moved the cursor, not the step
  press("Enter");
  assert.deepEqual(calls, [["placePoint", "corrected", [635, 400]]]);
  assert.equal(store.get("cursor"), null);  // a click's one point placed
  press("p");
  assert.deepEqual(cursor().px, [635, 200]);  // now on the point placed
  press("Escape");
  assert.equal(cursor(), null);
  form().editor_state.corrected = { type: "drag", args: {}, style: "box" };
  press("p");
  press("Enter");
  assert.ok(cursor(), "a drag wants its end point next: the cursor stays");
  press("Enter");
  assert.equal(cursor(), null);
});

test("b draws a box from the keyboard: its first corner where the cursor is, the other moved by the arrows", () => {
  const { press, cursor, calls } = workspace({ corrected: click(500, 500) });
  press("b");
  assert.deepEqual(cursor().anchor, [500, 250]);
  press("ArrowDown");
  press("ArrowRight");
  press("Enter");
  assert.deepEqual(calls, [["drawBox", "corrected", SHOT, [500, 250], [750, 375]]]);
  assert.equal(cursor(), null);
  const hotkey = workspace({ corrected: { type: "hotkey", args: {}, style: "box" } });
  hotkey.press("b");  // a hotkey takes no box
  assert.equal(hotkey.cursor(), null);
});

test("Ctrl+arrow jumps to the next recorded element; Enter there places as a click on it would", () => {
  const { press, cursor, calls, $ } = workspace({ corrected: { type: "click", args: {}, style: "box" } });
  press("p");
  press("ArrowRight", { ctrlKey: true });
  assert.deepEqual([cursor().px, cursor().element], [[700, 200], 1]);
  press("ArrowRight", { ctrlKey: true });  // nothing further right
  assert.equal($("ws-place-hint").textContent, "No recorded element lies that way.");
  press("Enter");
  assert.deepEqual(calls, [["placeOnElement", "corrected", 3, 1, [700, 200]]]);
});

test("g labels the recorded elements, nearest first; typing a label puts the cursor on it; on a screen without any, the cells", () => {
  const { press, cursor } = workspace({ corrected: { type: "click", args: {}, style: "box" } });
  press("g");
  assert.deepEqual(cursor().hints.items.map((h) => [h.label, h.element]), [["a", 0], ["s", 1]]);
  assert.equal(press("x"), true);  // not a label: taken, the labels stay
  assert.ok(cursor().hints);
  press("s");
  assert.deepEqual([cursor().px, cursor().element, cursor().hints], [[700, 200], 1, null]);
  press("g");
  press("Escape");
  assert.equal(cursor().hints, null);
  press("ArrowLeft");  // any other key closes the labels and does what it does
  assert.equal(cursor().hints, null);
  const reflection = workspace({ current: 4, fields: { editor_state: { corrected: null, reflection: { type: "click", args: {}, style: "box" } } } });
  reflection.press("g");
  assert.equal(reflection.cursor().hints.kind, "cells");
  reflection.press("Backspace");
  reflection.press("9");
  assert.deepEqual(reflection.cursor().px.map(Math.round), [833, 417]);  // the bottom-right cell's centre
});

test("the help is a dialog: the page's keys wait behind it, Tab stays on it, Esc or ? closes it and the focus returns", () => {
  const { press, help, closeButton, thought, doc, calls, $ } = workspace();
  // The help's rows list their keys as the person presses them.
  assert.deepEqual(help.querySelectorAll(".ws-keys-of").map((cell) => cell.textContent), ["← k → j", "w"]);
  thought.focus();
  press("?", { shiftKey: true }, doc.body);
  assert.equal(help.hidden, false);
  assert.equal(doc.activeElement, closeButton);
  assert.equal(help.querySelector(".ws-modal-card").scrollTop, 0);
  assert.equal(press("j"), true);  // waits
  assert.deepEqual(calls, []);
  press("Tab");
  assert.equal(doc.activeElement, closeButton);
  press("Escape");
  assert.equal(help.hidden, true);
  assert.equal(doc.activeElement, thought);
  $("ws-help-btn").click();
  assert.equal(help.hidden, false);
  closeButton.click();
  assert.equal(help.hidden, true);
});

test("the buttons do what their keys do; the box mode's button says whether it is on", () => {
  const { $, calls, store } = workspace();
  for (const id of ["ws-zoom-in", "ws-zoom-out", "ws-zoom-level", "ws-zoom-fit", "ws-overlay-btn", "ws-compare-btn", "ws-box-btn"]) $(id).click();
  assert.deepEqual(calls.map(([name]) => name), ["zoomAt", "zoomAt", "zoomActual", "zoomReset"]);
  assert.deepEqual([store.get("overlay"), store.get("compare"), store.get("boxMode")], [false, true, true]);
  assert.equal($("ws-box-btn").getAttribute("aria-pressed"), "true");
  assert.equal(document.querySelector("kbd[data-key=e]").textContent, "e");
});
