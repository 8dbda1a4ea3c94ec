// A stand-in document for the page modules that wire elements and events (static/js/review/*.js and others): elements
// with children, text, classes, attributes and data-* (dataset), events dispatched as the DOM does (capturing
// listeners from the document down, then the target's, then bubbling up to the document; stopPropagation ends it),
// and querySelector / matches / closest for the selectors these modules use (tag, #id, .class, [attr],
// [attr=value], :not(…), descendants, lists). No layout: the sizes a module measures are plain fields a test sets.

const camel = (name) => name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

class Text {
  constructor(text) { this.nodeType = 3; this.textContent = String(text); this.parentNode = null; }
}

export class Event {
  constructor(type, fields) {
    Object.assign(this, { type, bubbles: true, defaultPrevented: false, ...fields });
  }
  preventDefault() { this.defaultPrevented = true; }
  stopPropagation() { this.stopped = true; }
  stopImmediatePropagation() { this.stopped = true; this.stoppedHere = true; }
}

export class CustomEvent extends Event {}

class Listeners {
  constructor() { this.listeners = {}; }
  addEventListener(type, listener, options) {
    const capture = options === true || !!(options && options.capture);
    (this.listeners[type] ||= []).push({ listener, capture });
  }
  removeEventListener(type, listener) { this.listeners[type] = (this.listeners[type] || []).filter((l) => l.listener !== listener); }
  /** Runs this node's listeners of the event's type for ``phase``: "capture" (the capturing ones), "bubble" (the
      others) or "target" (all, the capturing ones first); stopImmediatePropagation ends it. */
  fire(event, phase = "target") {
    event.currentTarget = this;
    const all = [...(this.listeners[event.type] || [])];
    const run = phase === "target" ? [...all.filter((l) => l.capture), ...all.filter((l) => !l.capture)]
      : all.filter((l) => l.capture === (phase === "capture"));
    for (const { listener } of run) { if (event.stoppedHere) return; listener(event); }
  }
}

export class Element extends Listeners {
  constructor(tag, doc) {
    super();
    this.ownerDocument = doc;
    this.tagName = tag.toUpperCase();
    this.nodeType = 1;
    this.childNodes = [];
    this.parentNode = null;
    this.dataset = {};
    this.attributes = {};
    this.classes = new Set();
    this.style = { setProperty(name, value) { this[name] = value; } };
    this.hidden = false;
    this.disabled = false;
    this.id = "";
    this.title = "";
    // Layout a test may set: this module measures nothing itself.
    this.clientWidth = 0;
    this.offsetLeft = 0;
    this.offsetWidth = 0;
    this.scrollLeft = 0;
    this.rect = { left: 0, top: 0, width: 0, height: 0 };
    const element = this;
    this.classList = {
      add: (...names) => names.forEach((n) => element.classes.add(n)),
      remove: (...names) => names.forEach((n) => element.classes.delete(n)),
      contains: (name) => element.classes.has(name),
      toggle: (name, on) => {
        const want = on === undefined ? !element.classes.has(name) : !!on;
        if (want) element.classes.add(name); else element.classes.delete(name);
        return want;
      },
    };
  }
  get className() { return [...this.classes].join(" "); }
  set className(value) { this.classes = new Set(String(value).split(/\s+/).filter(Boolean)); }
  get children() { return this.childNodes.filter((n) => n.nodeType === 1); }
  get firstElementChild() { return this.children[0] || null; }
  get textContent() { return this.childNodes.map((n) => n.textContent).join(""); }
  set textContent(value) { this.replaceChildren(...(value === "" || value == null ? [] : [String(value)])); }
  adopt(nodes) {
    return nodes.map((n) => {
      const node = typeof n === "string" ? new Text(n) : n;
      if (node.parentNode && node.parentNode !== this) node.parentNode.childNodes = node.parentNode.childNodes.filter((c) => c !== node);
      node.parentNode = this;
      return node;
    });
  }
  append(...nodes) { this.childNodes.push(...this.adopt(nodes)); }
  prepend(...nodes) { this.childNodes.unshift(...this.adopt(nodes)); }
  appendChild(node) { this.append(node); return node; }
  replaceChildren(...nodes) { this.childNodes = this.adopt(nodes); }
  replaceChild(node, old) {
    const at = this.childNodes.indexOf(old);
    const [adopted] = this.adopt([node]);
    this.childNodes = this.childNodes.filter((n) => n !== adopted);
    this.childNodes.splice(this.childNodes.indexOf(old), 1, adopted);
    old.parentNode = null;
    return at >= 0 ? old : null;
  }
  get childElementCount() { return this.children.length; }
  remove() {
    if (this.parentNode) this.parentNode.childNodes = this.parentNode.childNodes.filter((n) => n !== this);
    this.parentNode = null;
  }
  contains(node) { for (let n = node; n; n = n.parentNode) if (n === this) return true; return false; }
  setAttribute(name, value) {
    if (name.startsWith("data-")) this.dataset[camel(name.slice(5))] = String(value);
    else if (name === "class") this.className = value;
    else if (name === "id") this.id = String(value);
    else this.attributes[name] = String(value);
  }
  getAttribute(name) {
    if (name.startsWith("data-")) return this.dataset[camel(name.slice(5))] ?? null;
    if (name === "class") return this.className || null;
    if (name in this.attributes) return this.attributes[name];
    const property = this[name];
    return property === undefined || property === null || property === "" || property === false ? null : String(property);
  }
  hasAttribute(name) { return this.getAttribute(name) !== null; }
  removeAttribute(name) {
    if (name.startsWith("data-")) delete this.dataset[camel(name.slice(5))];
    else delete this.attributes[name];
  }
  /** Every element under this one, in document order. */
  descendants() { return this.children.flatMap((c) => [c, ...c.descendants()]); }
  querySelectorAll(selector) { return this.descendants().filter((n) => matches(n, selector)); }
  querySelector(selector) { return this.querySelectorAll(selector)[0] || null; }
  matches(selector) { return matches(this, selector); }
  closest(selector) { for (let n = this; n && n.nodeType === 1; n = n.parentNode) if (matches(n, selector)) return n; return null; }
  getBoundingClientRect() {
    const { left, top, width, height } = this.rect;
    return { left, top, width, height, right: left + width, bottom: top + height, x: left, y: top };
  }
  /** Dispatches ``event`` to this element: captured from the document down, then here, then bubbling up. */
  dispatchEvent(event) {
    event.target ||= this;
    const path = [];
    for (let n = this.parentNode; n; n = n.parentNode) path.push(n);
    for (const n of [...path].reverse()) { if (event.stopped) break; n.fire(event, "capture"); }
    if (!event.stopped) this.fire(event);
    for (const n of path) { if (event.stopped || !event.bubbles) break; n.fire(event, "bubble"); }
    return !event.defaultPrevented;
  }
  get isConnected() { for (let n = this; n; n = n.parentNode) if (n.nodeType === 9) return true; return false; }
  /** A select's options. */
  get options() { return this.children.filter((n) => n.tagName === "OPTION"); }
  click() { this.dispatchEvent(new Event("click")); }
  focus() { this.ownerDocument.activeElement = this; }
  setPointerCapture() {}
  scrollIntoView() { this.scrolledTo = true; }
  blur() { if (this.ownerDocument.activeElement === this) this.ownerDocument.activeElement = this.ownerDocument.body; }
}

/** A new, empty document (its elements go in its ``body``), set as globalThis.document, with a window beside it
    (globalThis.window) and this module's Event and CustomEvent as the globals a module makes its own events with. */
export function standInDocument() {
  const doc = new Listeners();
  Object.assign(doc, { nodeType: 9, cookie: "csrftoken=tok", documentElement: { lang: "en" }, parentNode: null });
  doc.createElement = (tag) => new Element(tag, doc);
  doc.createElementNS = (_, tag) => new Element(tag, doc);
  doc.body = new Element("body", doc);
  doc.body.parentNode = doc;
  doc.activeElement = doc.body;
  doc.getElementById = (id) => doc.body.descendants().find((n) => n.id === id) || null;
  doc.querySelectorAll = (selector) => doc.body.querySelectorAll(selector);
  doc.querySelector = (selector) => doc.body.querySelector(selector);
  doc.dispatchEvent = (event) => { event.target ||= doc; doc.fire(event); return !event.defaultPrevented; };
  /** An element made of ``tag`` and its fields (``data``: its dataset), with ``children`` in it. */
  doc.make = (tag, fields = {}, ...children) => {
    const { data, class: className, ...rest } = fields;
    const node = doc.createElement(tag);
    Object.assign(node, rest);
    if (className) node.className = className;
    Object.assign(node.dataset, data || {});
    node.append(...children);
    return node;
  };
  const win = new Listeners();
  win.dispatchEvent = (event) => { win.fire(event); return !event.defaultPrevented; };
  globalThis.document = doc;
  globalThis.window = win;
  // What a module makes of its own events is this document's.
  globalThis.Event = Event;
  globalThis.CustomEvent = CustomEvent;
  return doc;
}

/** Whether ``node`` matches ``selector`` (a list of descendant chains of compound selectors). */
export function matches(node, selector) {
  return splitTop(selector, ",").some((one) => matchesChain(node, one.trim().split(/\s+(?![^[(]*[\])])/)));
}

function matchesChain(node, parts) {
  if (!matchesCompound(node, parts[parts.length - 1])) return false;
  if (parts.length === 1) return true;
  for (let n = node.parentNode; n && n.nodeType === 1; n = n.parentNode) if (matchesChain(n, parts.slice(0, -1))) return true;
  return false;
}

function splitTop(text, separator) {
  const parts = [];
  let depth = 0, start = 0;
  for (let i = 0; i < text.length; i++) {
    if ("([".includes(text[i])) depth++;
    else if (")]".includes(text[i])) depth--;
    else if (text[i] === separator && depth === 0) { parts.push(text.slice(start, i)); start = i + 1; }
  }
  return [...parts, text.slice(start)];
}

function matchesCompound(node, compound) {
  const pattern = /^(?:([a-zA-Z][\w-]*|\*)|#([\w-]+)|\.([\w-]+)|\[([\w-]+)(?:=(?:"([^"]*)"|'([^']*)'|([^\]]*)))?\]|:not\(((?:[^()]|\([^()]*\))*)\))/;
  let rest = compound;
  while (rest) {
    const m = rest.match(pattern);
    if (!m) throw new Error(`the stand-in document cannot read the selector ${JSON.stringify(compound)}`);
    const [whole, tag, id, className, attribute, double, single, bare, not] = m;
    if (tag && tag !== "*" && node.tagName !== tag.toUpperCase()) return false;
    if (id && node.id !== id) return false;
    if (className && !node.classes.has(className)) return false;
    if (attribute) {
      const value = node.getAttribute(attribute);
      const wanted = double ?? single ?? bare;
      if (value === null || (wanted !== undefined && value !== wanted)) return false;
    }
    if (not !== undefined && matches(node, not)) return false;
    rest = rest.slice(whole.length);
  }
  return true;
}

/** Lets the pending promise callbacks (and ``ms`` of timers) run. */
export const settle = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fetch (set as globalThis.fetch) that answers with ``answer``: a list whose next [status, data] answers each
    request, or a function of [method, url, body] giving one. Returns the requests, each [method, url, body]. */
export function fakeFetch(answer) {
  const sent = [];
  globalThis.fetch = async (url, init = {}) => {
    const request = [init.method || "GET", url, init.body === undefined ? undefined : JSON.parse(init.body)];
    sent.push(request);
    const [status, data] = typeof answer === "function" ? await answer(...request) : answer.shift();
    return { status, ok: status >= 200 && status < 300, json: async () => data };
  };
  return sent;
}
