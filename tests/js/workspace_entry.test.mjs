// The workspace's entry module (static/js/workspace.js, run as it loads) on the page as the template lays it out
// (tests/js/workspace_page.mjs): the page's data reaches the modules (the categories, the step it opens on, the
// strip), what it asks the server on load (the action table, then the correction checked; the alternatives), keys
// and clicks reach the module that owns them (stepping, the view's toggles redrawing the stage, undo of an edit), the
// long texts cut with their buttons, the lease's heartbeat, and the Versions panel's restore wired to the draft.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Event, fakeFetch, settle } from "./stand_in_dom.mjs";
import { TABLE } from "./served.mjs";
import { click, step, workspacePage } from "./workspace_page.mjs";

const { doc, root, browser, $ } = workspacePage();
// The action table is answered once a test lets it (``serveTable``): what the page does before it comes is seen.
let serveTable;
const tableServed = new Promise((resolve) => { serveTable = resolve; });
const VERSIONS = { can_restore: true, versions: [
  { number: 5, at: null, by: "ann", kind: "save", status: "Draft", current: true, changes: [] },
  { number: 4, at: null, by: "ann", kind: "save", status: "Draft", current: false, changes: ["verdict: set"], restore_url: "/api/annotations/7/versions/4/restore/" },
] };
const sent = fakeFetch(async (method, url, body) => {
  if (url === "/api/actions/table/") { await tableServed; return [200, TABLE]; }
  if (url.startsWith("/api/annotations/7/steps/")) return [200, { steps: [step(5), step(6)] }];
  if (url === "/api/annotations/7/check-action/") return [200, { canonical: "click(checked)", errors: [], valid: true }];
  if (url === "/api/annotations/7/alternatives/") {
    return [200, { annotation: 7, convention: "relative-1000", model: { configured: true, problem: "" },
      job: { id: 3, status: "succeeded", step: 3, model_name: "m", weights_hash: "ab", settings: {}, reused: false, message: "" },
      alternatives: [{ id: 31, number: 1, parsed: true, mark: "", reply: "click(start_box='(900,900)')", actions: [click(900, 900)] }] }];
  }
  if (url === "/api/annotations/7/draft/") return [200, { ...body, version: body.version + 1 }];
  if (url === "/api/annotations/7/versions/") return [200, VERSIONS];
  if (url.endsWith("/restore/")) return [200, { version: 7 }];
  return [200, {}];
});

await import("../../static/js/workspace.js");
const atLoad = sent.map(([method, url]) => `${method} ${url}`);

/** The marks drawn over the stage's screenshots: each one's class. */
const marks = () => $("ws-stage").querySelectorAll("g.mark").map((g) => g.className);
const press = (key, code, extra = {}) => {
  const event = new Event("keydown", { key, code, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, ...extra });
  (doc.activeElement || doc.body).dispatchEvent(event);
  return event.defaultPrevented;
};

test("on load the page asks for the action table and the alternatives; the step it opens on is τ's, drawn from the page's data", () => {
  // The steps the page lacks around the one shown are read ahead, a window at a time.
  assert.deepEqual(atLoad, ["GET /api/annotations/7/steps/?first=5&last=6", "GET /api/actions/table/", "GET /api/annotations/7/alternatives/"]);
  assert.equal(root.dataset.ready, undefined);  // not before the table
  assert.equal(doc.querySelector(".ws-action-editor[data-slot=corrected]").childElementCount, 0);
  assert.deepEqual($("f-error_category").options.map((o) => o.value), ["", "wrong element", "wrong text"]);
  assert.equal($("ws-step-num").textContent, "Step 3 of 6");
  assert.equal($("ws-thought").textContent, "thought 3");
  assert.equal($("ws-stage").querySelector("img").src, "/shots/3.png");
  assert.deepEqual($("ws-strip").children.map((b) => b.textContent).slice(0, 3), ["1", "2", "3"]);
  // The screens around the one shown are read ahead.
  assert.ok(browser.images.includes("/shots/4.png"), browser.images.join(" "));
});

test("once the table is here the page is ready and the correction is checked; the alternatives are drawn on τ's screen", async () => {
  serveTable();
  await settle();
  assert.equal(root.dataset.ready, "1");
  await settle(150);  // the editor asks the server 120 ms after a change
  assert.deepEqual(sent.slice(3).map(([method, url, body]) => [method, url, body.slot, body.tau]),
    [["POST", "/api/annotations/7/check-action/", "corrected", 3], ["POST", "/api/annotations/7/check-action/", "reflection", 3]]);
  assert.ok(doc.querySelector(".ws-action-editor[data-slot=corrected]").childElementCount > 0);  // the editor, drawn from the table
  assert.deepEqual(marks(), ["mark recorded", "mark alt", "mark fix"]);
  assert.equal($("ws-alts").hidden, false);
});

test("the view's keys reach their module: o turns the overlay off and c sets the panes side by side, each redrawing the stage", () => {
  assert.equal(press("o", "KeyO"), true);
  assert.deepEqual(marks(), []);
  press("o", "KeyO");
  assert.deepEqual(marks(), ["mark recorded", "mark alt", "mark fix"]);
  press("c", "KeyC");
  assert.equal($("ws-stage").children.length, 2);
  $("ws-compare-btn").click();
  assert.equal($("ws-stage").children.length, 1);
});

test("j steps to the next screen: the step's panel and the stage follow", () => {
  assert.equal(press("j", "KeyJ"), true);
  assert.equal($("ws-step-num").textContent, "Step 4 of 6");
  assert.equal($("ws-stage").querySelector("img").src, "/shots/4.png");
  press("k", "KeyK");
  assert.equal($("ws-step-num").textContent, "Step 3 of 6");
  // Every step's thought is cut again: step 3's is long.
  $("ws-thought").scrollHeight = 200;
  press("j", "KeyJ");
  press("k", "KeyK");
  assert.equal($("ws-thought-more").hidden, false);
});

test("an edit is kept in this browser and saved; the undo button puts it back", async () => {
  const category = $("f-error_category");
  category.value = "wrong text";
  category.dispatchEvent(new Event("change"));
  assert.equal(JSON.parse(browser.storage.get("ws-draft-7")).form.error_category, "wrong text");
  assert.equal($("ws-undo").disabled, false);
  $("ws-undo").click();
  assert.equal(category.value, "wrong element");
  assert.equal($("ws-redo").disabled, false);
  // The autosave's interval saves what is not saved yet.
  category.value = "wrong text";
  category.dispatchEvent(new Event("change"));
  const autosave = browser.intervals.find((i) => i.ms === 4000);
  sent.length = 0;
  autosave.fn();
  await settle();
  assert.deepEqual(sent.map(([method, url, body]) => [method, url, body.version, body.error_category]), [["PUT", "/api/annotations/7/draft/", 5, "wrong text"]]);
});

test("a long thought and a long instruction are cut, each with its button to show all", () => {
  const thought = $("ws-thought"), more = $("ws-thought-more");
  assert.equal(more.textContent, "Show all");
  more.click();
  assert.deepEqual([thought.classList.contains("expanded"), more.textContent, more.getAttribute("aria-expanded")], [true, "Show less", "true"]);
  more.click();
  assert.equal(thought.classList.contains("expanded"), false);
  const instruction = $("ws-instruction"), instructionMore = $("ws-instruction-more");
  const observer = browser.resize.find((o) => o.node === instruction);
  observer.fn();
  assert.equal(instructionMore.hidden, true);  // it fits
  instruction.scrollHeight = 80;
  instruction.clientHeight = 40;
  observer.fn();
  assert.equal(instructionMore.hidden, false);
  instructionMore.click();
  assert.deepEqual([instruction.classList.contains("expanded"), instructionMore.textContent], [true, "Show less"]);
  instructionMore.click();
  assert.deepEqual([instruction.classList.contains("expanded"), instructionMore.textContent], [false, "Show all"]);
});

test("the lease's heartbeat is the served lease's; closing the page frees it with a beacon", async () => {
  const heartbeat = browser.intervals.find((i) => i.ms === 30000);
  sent.length = 0;
  await heartbeat.fn();
  assert.deepEqual(sent, [["POST", "/api/leases/12/heartbeat/", undefined]]);
  window.dispatchEvent(new Event("pagehide"));
  assert.deepEqual(browser.beacons, [["/api/leases/12/release/", { csrfmiddlewaretoken: "tok", page: "p1" }]]);
});

test("the Versions panel lists the versions; a restore saves the page first, then reloads it without its local copy", async () => {
  const panel = $("versions");
  sent.length = 0;
  panel.open = true;
  panel.dispatchEvent(new Event("toggle"));
  await settle();
  assert.deepEqual(sent.map(([method, url]) => `${method} ${url}`), ["GET /api/annotations/7/versions/"]);
  const category = $("f-error_category");
  category.value = "wrong element";
  category.dispatchEvent(new Event("change"));
  panel.querySelector(".versions-restore").click();
  await settle();
  assert.deepEqual(sent.slice(1).map(([method, url, body]) => [method, url, body.version]),
    [["PUT", "/api/annotations/7/draft/", 6], ["POST", "/api/annotations/7/versions/4/restore/", 7]]);
  assert.equal(browser.reloads, 1);
  assert.equal(browser.storage.has("ws-draft-7"), false);
});
