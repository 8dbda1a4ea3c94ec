// The review page's rules (static/js/review_logic.js, wired by static/js/review.js): where marks go and how labels
// clear each other, the trace viewer's screens, titles and the server's answer, the edited action's mark, its keys
// and the queue's rows.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  actionOnTau, boxSize, clampPosition, clickFraction, editedMarkers, editorsShown, marginClearing, missingTitle,
  percentOn, queueRowTexts, reviewCommandFor, screenLoaded, screenName, screenTitle, tauScreens, thumbNumber,
  viewerLayout, windowProblem,
} from "../../static/js/review_logic.js";
import { fractionToModel } from "../../static/js/geometry.js";
import { ERRORS, GRAMMAR_POINTS } from "./served.mjs";

const key = (k, extra) => Object.assign({ key: k, ctrlKey: false, metaKey: false, altKey: false, defaultPrevented: false }, extra);
const outside = { typing: false, inComment: false };

test("outside any field: a accepts, r rejects, → goes on, j k step the viewer, + - 0 zoom", () => {
  const commands = ["a", "r", "ArrowRight", "j", "k", "+", "=", "-", "0"].map((k) => reviewCommandFor(key(k), outside));
  assert.deepEqual(commands, ["accept", "reject", "next", "screen_next", "screen_previous", "zoom_in", "zoom_in", "zoom_out", "zoom_reset"]);
  assert.equal(reviewCommandFor(key("x"), outside), null);
});

test("a modifier, a key handled already, or a field with the focus leave the keys alone", () => {
  assert.equal(reviewCommandFor(key("a", { ctrlKey: true }), outside), null);
  assert.equal(reviewCommandFor(key("a", { altKey: true }), outside), null);
  assert.equal(reviewCommandFor(key("a", { metaKey: true }), outside), null);
  assert.equal(reviewCommandFor(key("a", { defaultPrevented: true }), outside), null);
  assert.equal(reviewCommandFor(key("a"), { typing: true, inComment: false }), null);
  assert.equal(reviewCommandFor(key("r"), { typing: true, inComment: true }), null);  // an r typed in the comment
});

test("Ctrl+Enter in the comment sends the rejection; not from another field, not Enter alone", () => {
  assert.equal(reviewCommandFor(key("Enter", { ctrlKey: true }), { typing: true, inComment: true }), "reject_send");
  assert.equal(reviewCommandFor(key("Enter", { ctrlKey: true }), { typing: true, inComment: false }), null);
  assert.equal(reviewCommandFor(key("Enter"), { typing: true, inComment: true }), null);
  assert.equal(reviewCommandFor(key("Enter", { ctrlKey: true }), outside), null);
});

test("a queue row: the trace, the annotator, the verdict and when it was submitted, to the minute", () => {
  const review = { external_id: "t-7", annotator: "ann", verdict_text: "Error at step 3", submitted_at: "2026-11-28T10:52:12.123456Z" };
  assert.deepEqual(queueRowTexts(review).slice(0, 3), ["t-7", "ann", "Error at step 3"]);
  assert.match(queueRowTexts(review)[3], /^Nov 2[78], 2026, \d{1,2}:52\s[AP]M$/);  // the page's language: "en" under node
  assert.equal(queueRowTexts({ ...review, submitted_at: null })[3], "");
});

test("a mark sits at its point's share of its screenshot's extent, in percent to 3 places", () => {
  const marker = { extent: [1000, 1000] };
  assert.deepEqual(percentOn(marker, [250, 500]), ["25.000%", "50.000%"]);
  assert.deepEqual(percentOn({ extent: [1920, 1080] }, [640, 1080]), ["33.333%", "100.000%"]);
  assert.deepEqual(boxSize({ extent: [1000, 1000], box: [100, 200, 350, 300] }), ["25.000%", "10.000%"]);
});

test("a point the grammar made of a pixel is marked on that pixel's share of the image", () => {
  for (const { shot, px, point } of GRAMMAR_POINTS.slice(0, 60)) {
    const [left, top] = percentOn({ extent: shot.extent }, point).map(parseFloat);
    // The grammar rounds to its grid: the mark is within one grid step of the pixel.
    assert.ok(Math.abs(left - (px[0] / shot.width) * 100) <= 100 / shot.extent[0] + 1e-3, JSON.stringify({ shot, px, point }));
    assert.ok(Math.abs(top - (px[1] / shot.height) * 100) <= 100 / shot.extent[1] + 1e-3, JSON.stringify({ shot, px, point }));
  }
});

test("a label that meets a placed one moves below it, 2 px apart; one that meets none stays", () => {
  const placed = [{ left: 0, right: 100, top: 0, bottom: 20 }, { left: 300, right: 400, top: 0, bottom: 50 }];
  assert.equal(marginClearing(0, { left: 50, right: 150, top: 10, bottom: 30 }, placed), 12);  // 20 - 10 + 2
  assert.equal(marginClearing(12, { left: 50, right: 150, top: 22, bottom: 42 }, placed), null);
  assert.equal(marginClearing(5, { left: 350, right: 450, top: 40, bottom: 60 }, placed), 17);  // 5 + 50 - 40 + 2
  assert.equal(marginClearing(0, { left: 100, right: 200, top: 0, bottom: 20 }, placed), null);  // edges only touch
  assert.equal(marginClearing(0, { left: 0, right: 100, top: 0, bottom: 20 }, []), null);
});

test("the viewer: a step's screens, the final one after them, opening on τ's (else the first)", () => {
  assert.deepEqual(viewerLayout({ step_count: 8, has_final: true, tau: 3 }), { stepCount: 8, total: 9, start: 2 });
  assert.deepEqual(viewerLayout({ step_count: 8, has_final: false, tau: null }), { stepCount: 8, total: 8, start: 0 });
  assert.deepEqual(viewerLayout({ step_count: 4, has_final: true, tau: 9 }), { stepCount: 4, total: 5, start: 0 });
  assert.deepEqual(viewerLayout(null), { stepCount: 0, total: 0, start: 0 });
  assert.deepEqual([-1, 0, 4, 8, 12].map((p) => clampPosition(p, 9)), [0, 0, 4, 8, 8]);
});

test("the last step's screen counts as loaded only with the final screen, which comes in its window", () => {
  const screens = new Array(5);
  screens[0] = {}; screens[3] = {};
  assert.equal(screenLoaded(screens, 1, 4, true), true);
  assert.equal(screenLoaded(screens, 2, 4, true), false);
  assert.equal(screenLoaded(screens, 4, 4, true), false);  // the final screen (position 4) is missing
  assert.equal(screenLoaded(screens, 4, 4, false), true);
  screens[4] = {};
  assert.equal(screenLoaded(screens, 4, 4, true), true);
});

test("the viewer's names and titles: steps by number, the final screen, τ, a missing screenshot, loading, a failure", () => {
  assert.deepEqual([0, 3, 4].map((p) => screenName(p, 4)), ["step 1", "step 4", "final screen"]);
  assert.deepEqual([0, 3, 4].map((p) => thumbNumber(p, 4)), ["1", "4", "end"]);
  assert.equal(screenTitle({ title: "Step 3", is_tau: true, image: "/m/3.png" }), "Step 3 (τ)");
  assert.equal(screenTitle({ title: "Step 2", is_tau: false, image: "" }), "Step 2 — no screenshot");
  assert.equal(missingTitle(2, 4, ""), "step 3 — loading…");
  assert.equal(missingTitle(4, 4, "status offline"), "final screen — could not be loaded (status offline): go to it again to retry");
});

test("a window of screens that did not come says the server's own words, else its status", () => {
  assert.equal(windowProblem({ status: 200, data: { screens: [] } }), "");
  for (const answer of ERRORS.answers) {
    assert.equal(windowProblem({ status: answer.status, data: answer.data }), String(answer.data.detail), answer.what);
  }
  assert.equal(windowProblem({ status: 0, data: null }), "status offline");
  assert.equal(windowProblem({ status: 502, data: null }), "status 502");
});

test("the editors beside the screenshots show while the form is open on the error verdict", () => {
  assert.equal(editorsShown(true, "error", "error"), true);
  assert.equal(editorsShown(true, "correct", "error"), false);
  assert.equal(editorsShown(false, "error", "error"), false);
  assert.equal(editorsShown(undefined, null, null), false);  // no edit form on the page
  assert.equal(editorsShown(true, null, "error"), true);  // no verdict to choose: the form is for the error
});

test("the screens of a τ typed: o_τ its step's, o_τ+1 the next step's or the final screen, none past the trace", () => {
  // 3 steps and the final screen: 4 screens.
  assert.deepEqual(tauScreens(2, 4), { corrected: 1, reflection: 2 });
  assert.deepEqual(tauScreens(3, 4), { corrected: 2, reflection: 3 });  // o_4: the final screen
  assert.deepEqual(tauScreens(3, 3), { corrected: 2, reflection: null });  // no final screen kept
  assert.deepEqual(tauScreens(null, 4), { corrected: null, reflection: null });
  assert.equal(screenName(tauScreens(3, 4).reflection, 3), "final screen");
});

test("on the annotator's τ its action is drawn; on another τ only an action the lead gave there", () => {
  assert.equal(actionOnTau(2, 2, false), true);
  assert.equal(actionOnTau(3, 2, false), false);  // its point was placed on step 2's screen
  assert.equal(actionOnTau(3, 2, true), true);
});

test("an edited action is marked where its point is, labelled after the annotator's, once it has a point", () => {
  const own = { label: "Corrected", kind: "corrected" };
  const action = { type: "drag", args: { start_box: [10, 20], end_box: [30, 40] }, target_box: [5, 15, 25, 35] };
  assert.deepEqual(editedMarkers("corrected", own, action, "drag(...)", [1000, 1000]), [{
    label: "Corrected (edited)", kind: "corrected", type: "drag", text: "drag(...)", extent: [1000, 1000],
    start: [10, 20], end: [30, 40], box: [5, 15, 25, 35],
  }]);
  const click = { type: "click", args: { start_box: [1, 2] } };
  const [mark] = editedMarkers("reflection", undefined, click, "click(1, 2)", [1000, 1000]);
  assert.equal(mark.label, "reflection (edited)");
  assert.equal(mark.end, undefined);
  assert.equal(mark.box, undefined);
  assert.deepEqual(editedMarkers("corrected", own, { type: "click", args: {} }, "", [1000, 1000]), []);
  assert.deepEqual(editedMarkers("corrected", own, null, "", [1000, 1000]), []);
});

test("a click on the zoomed layer is its share of the layer's box, the point the grammar makes of it", () => {
  const box = { left: 100, top: 50, width: 800, height: 450 };
  assert.deepEqual(clickFraction(box, 500, 275), [0.5, 0.5]);
  assert.deepEqual(clickFraction(box, 100, 500), [0, 1]);
  for (const { shot, px, point } of GRAMMAR_POINTS.slice(0, 60)) {
    const scale = 800 / shot.width;  // the layer shown 800 px wide, at (100, 50)
    const f = clickFraction({ left: 100, top: 50, width: 800, height: shot.height * scale }, 100 + px[0] * scale, 50 + px[1] * scale);
    assert.deepEqual(fractionToModel(shot, f), point, JSON.stringify({ shot, px }));
  }
});
