// The page's element builders (static/js/dom.js): text always goes in as textContent, never parsed as HTML; a page's
// JSON data block falls back when it is missing or unreadable. dom.js reads `document` when called, not when
// imported, so a stand-in document that records what is done to its elements is enough here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { $, el, readJSON, svg } from "../../static/js/dom.js";

class Element {
  constructor(tag, namespace = null) {
    this.tag = tag;
    this.namespace = namespace;
    this.attributes = {};
    this.textContent = "";
  }
  setAttribute(name, value) { this.attributes[name] = value; }
  // A builder that parsed markup would go through one of these; the stand-in refuses them.
  set innerHTML(value) { throw new Error(`innerHTML set to ${value}`); }
  insertAdjacentHTML() { throw new Error("insertAdjacentHTML called"); }
}

function standIn(blocks = {}) {
  const made = [];
  globalThis.document = {
    getElementById: (id) => (id in blocks ? Object.assign(new Element("script"), { id, textContent: blocks[id] }) : null),
    createElement: (tag) => { const node = new Element(tag); made.push(node); return node; },
    createElementNS: (namespace, tag) => { const node = new Element(tag, namespace); made.push(node); return node; },
  };
  return made;
}

const HOSTILE = "<img src=x onerror=alert(1)>\u0000 «step» 👆 \u202Eevil";

test("el: text goes in as textContent, exactly as given, markup and all", () => {
  standIn();
  const node = el("div", { class: "step" }, HOSTILE);
  assert.equal(node.tag, "div");
  assert.equal(node.textContent, HOSTILE);
  assert.equal(node.className, "step");
});

test("el: data- attributes are attributes, other keys are properties, and no text leaves textContent empty", () => {
  standIn();
  const node = el("button", { "data-step": 7, type: "button", disabled: true });
  assert.deepEqual(node.attributes, { "data-step": 7 });
  assert.equal(node.type, "button");
  assert.equal(node.disabled, true);
  assert.equal(node.textContent, "");
  assert.equal(el("span", null, 0).textContent, "0");  // a zero is text, not "no text"
  assert.equal(el("span", {}, null).textContent, "");
});

test("svg: elements in the SVG namespace, every attribute set as a string", () => {
  standIn();
  const node = svg("circle", { cx: 34, cy: 546, r: 6 }, HOSTILE);
  assert.equal(node.namespace, "http://www.w3.org/2000/svg");
  assert.deepEqual(node.attributes, { cx: "34", cy: "546", r: "6" });
  assert.equal(node.textContent, HOSTILE);
});

test("readJSON: the page's data block, or the fallback when it is absent or not JSON", () => {
  standIn({ "ws-data": JSON.stringify({ trace: { id: 3 }, note: HOSTILE }), broken: "{not json", empty: "" });
  assert.deepEqual(readJSON("ws-data", null), { trace: { id: 3 }, note: HOSTILE });
  assert.equal(readJSON("missing", "fallback"), "fallback");
  assert.deepEqual(readJSON("broken", []), []);
  assert.equal(readJSON("empty", null), null);
  assert.equal($("missing"), null);
  assert.equal($("ws-data").id, "ws-data");
});
