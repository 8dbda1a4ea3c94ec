// The review page's DOM modules that need no layout (static/js/review/queue.js, review/markers.js), on a stand-in
// document that records what is made: the queue's rows rebuilt from the server's list, and the marks drawn for the
// server's markers (point, end, element box, none for an action without a point).
import { test } from "node:test";
import assert from "node:assert/strict";
import { installQueueRefresh, refreshSection } from "../../static/js/review/queue.js";
import { drawMarkers } from "../../static/js/review/markers.js";

class Node {
  constructor(tag) {
    this.tag = tag;
    this.children = [];
    this.dataset = {};
    this.style = {};
    this.textContent = "";
    this.className = "";
    this.removed = false;
  }
  append(...nodes) { this.children.push(...nodes); }
  prepend(...nodes) { this.children.unshift(...nodes); }
  replaceChildren(...nodes) { this.children = nodes; }
  remove() { this.removed = true; }
  // Every node is at the top of the screen, 10 px tall: labels placed one after another meet.
  getBoundingClientRect() {
    const top = parseFloat(this.style.marginTop || "0");
    return { left: 0, right: 50, top, bottom: top + 10 };
  }
  text() { return [this.textContent, ...this.children.map((c) => c.text())].join(""); }
  all(match) { return [...(match(this) ? [this] : []), ...this.children.flatMap((c) => c.all(match))]; }
}

function standIn() {
  globalThis.document = { createElement: (tag) => new Node(tag), documentElement: { lang: "en" } };
}

test("the queue's rows are rebuilt from the server's list: texts, a presence cell and the review link", async () => {
  standIn();
  const body = new Node("tbody"), count = new Node("span");
  const section = new Node("section");
  section.dataset.projectId = "3 4";
  section.querySelector = (selector) => ({ "[data-role=queue-body]": body, "[data-role=count]": count })[selector];
  const asked = [], sent = [];
  globalThis.fetch = async (url) => {
    asked.push(url);
    return { ok: true, json: async () => ({ results: [
      { id: 7, trace_id: 9, review_url: "/reviews/7/", external_id: "t-9", annotator: "ann", verdict_text: "Error at step 2", submitted_at: "2026-11-28T10:52:12Z" },
    ] }) };
  };
  globalThis.window = { studioLive: { send: (message) => sent.push(message) } };
  await refreshSection(section);
  assert.deepEqual(asked, ["/api/reviews/?status=submitted&project=3%204"]);
  assert.equal(body.children.length, 1);
  const [row] = body.children;
  assert.deepEqual(row.dataset, { annotationId: 7, traceId: 9 });
  assert.deepEqual(row.children.slice(0, 3).map((td) => td.textContent), ["t-9", "ann", "Error at step 2"]);
  assert.match(row.children[3].textContent, /^Nov 2[78], 2026, \d{1,2}:52\s[AP]M$/);  // in the page's language
  assert.equal(row.children[4].dataset.presenceTrace, 9);
  const link = row.children[5].children[0];
  assert.equal(link.href, "/reviews/7/");
  assert.equal(link.textContent, "Review");
  assert.equal(count.textContent, "1");
  assert.deepEqual(sent, [{ type: "presence.snapshot" }]);
});

test("an empty queue says so across the table; a refused list leaves the rows as they were", async () => {
  standIn();
  const body = new Node("tbody");
  const section = new Node("section");
  section.dataset.projectId = "3";
  section.querySelector = (selector) => (selector === "[data-role=queue-body]" ? body : null);
  globalThis.window = {};
  globalThis.fetch = async () => ({ ok: true, json: async () => ({ results: [] }) });
  await refreshSection(section);
  assert.equal(body.children.length, 1);
  assert.equal(body.children[0].className, "empty-row");
  assert.equal(body.children[0].children[0].colSpan, 6);
  assert.equal(body.text(), "Nothing waiting for review.");
  globalThis.fetch = async () => ({ ok: false });
  body.replaceChildren(new Node("tr"));
  await refreshSection(section);
  assert.equal(body.children[0].className, "");
});

test("the marks: a point with its label, its end and its element box in percent of the image; none without a point", () => {
  standIn();
  const layer = new Node("div");
  const old = new Node("div");
  layer.querySelectorAll = () => [old];
  const frame = {
    querySelector: () => layer,
    querySelectorAll: () => layer.all((n) => n.className === "marker-label"),
  };
  drawMarkers(frame, [
    { kind: "original", label: "original", type: "drag", text: "drag(…)", extent: [1000, 1000], start: [250, 500], end: [750, 500], box: [100, 200, 350, 300] },
    { kind: "corrected", label: "corrected", type: "click", text: "click(…)", extent: [1000, 1000], start: [260, 500] },
    { kind: "reflection", label: "post-reflection", type: "hotkey", text: "hotkey(…)", extent: [1000, 1000] },
  ]);
  assert.ok(old.removed);
  assert.deepEqual(layer.children.map((n) => n.className), ["marker-box original", "marker original", "marker end original", "marker corrected"]);
  const [box, dot, end, second] = layer.children;
  assert.deepEqual([box.style.left, box.style.top, box.style.width, box.style.height], ["10.000%", "20.000%", "25.000%", "10.000%"]);
  assert.deepEqual([dot.style.left, dot.style.top], ["25.000%", "50.000%"]);
  assert.equal(dot.title, "original: drag(…)");
  assert.equal(dot.children[0].textContent, "original · drag");
  assert.deepEqual([end.style.left, end.title], ["75.000%", "original (end)"]);
  // The second label met the first: it moved below it.
  assert.equal(dot.children[0].style.marginTop, "0px");
  assert.equal(second.children[0].style.marginTop, "12px");
});

test("every section of the queue is rebuilt on a live event about an annotation, and only then", async () => {
  const listeners = [];
  const sections = ["3", "4"].map((projectId) => {
    const section = new Node("section");
    section.dataset.projectId = projectId;
    section.querySelector = () => new Node("tbody");
    return section;
  });
  globalThis.document = {
    createElement: (tag) => new Node(tag), documentElement: { lang: "en" },
    addEventListener: (type, listener) => listeners.push([type, listener]),
    querySelectorAll: (selector) => (selector === ".review-section" ? sections : []),
  };
  globalThis.window = {};
  const asked = [];
  globalThis.fetch = async (url) => { asked.push(url); return { ok: true, json: async () => ({ results: [] }) }; };
  installQueueRefresh();
  assert.deepEqual(listeners.map(([type]) => type), ["studio:live"]);
  const [[, listener]] = listeners;
  listener({ detail: { type: "presence", trace: 9 } });
  assert.deepEqual(asked, []);
  listener({ detail: { type: "annotation", id: 7 } });
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(asked, ["/api/reviews/?status=submitted&project=3", "/api/reviews/?status=submitted&project=4"]);
});
