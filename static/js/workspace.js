/* Annotator workspace: step through a trace, mark the first error, correct it, write the post-reflection.
   Everything imported is rendered with textContent; the action grammar comes from the server's table. */
(function () {
  "use strict";
  const root = document.getElementById("ws");
  if (!root) return;
  const DATA = JSON.parse(document.getElementById("ws-data").textContent);
  const ANN_ID = root.dataset.annotation;
  const EDITABLE = root.dataset.editable === "1";
  const STEPS = DATA.steps;
  const N = STEPS.length;
  const FINAL = DATA.trace.final_shot;
  const LAST_VIEW = FINAL ? N + 1 : N; // o_{n+1}: the final screen, when the runner kept it
  const LOCAL_KEY = "ws-draft-" + ANN_ID;
  const SVGNS = "http://www.w3.org/2000/svg";
  const FIELDS = ["verdict", "tau", "error_category", "note", "unusable_reason", "corrected_thought",
    "reflection_thought", "no_reflection_reason", "editor_state"];

  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else if (k.startsWith("data-")) node.setAttribute(k, v); else node[k] = v;
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const svg = (tag, attrs, text) => {
    const node = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = String(text);
    return node;
  };

  // --- state -----------------------------------------------------------------------------------
  const ann = DATA.annotation;
  const state = {
    current: 1, overlay: true, compare: false, table: null, cursor: null,
    // An element box being drawn with the mouse ({slot, a, b}: corners in screenshot pixels), and the imported
    // element under the pointer (its index in the step's elements) that a click would snap to.
    boxDrag: null, hoverElement: null,
    // One view for every pane: scale (1 = the screenshot fitted) and where the image's top-left corner sits, in
    // fractions of the frame; kept while stepping, so the same region stays in view from screen to screen.
    zoom: { scale: 1, ox: 0, oy: 0 },
    version: ann.version, form: pickFields(ann), serverForm: pickFields(ann),
    saving: false, pendingAgain: false, retryDelay: 1000, retryUntil: 0, retryTimer: null, blocked: null,
    lastInput: Date.now(), placeIndex: { corrected: 0, reflection: 0 },
    modelStarts: {},  // step index → the pre-scoring model's reply {thought, action}, from static/js/prescore.js
  };
  state.form.editor_state = normaliseEditor(state.form.editor_state);
  state.serverForm.editor_state = normaliseEditor(state.serverForm.editor_state);

  function pickFields(source) {
    const out = {};
    for (const f of FIELDS) out[f] = source[f] === undefined ? null : JSON.parse(JSON.stringify(source[f]));
    return out;
  }
  function normaliseEditor(value) {
    const v = value && typeof value === "object" ? value : {};
    return { corrected: v.corrected || null, reflection: v.reflection || null };
  }
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const dirty = () => !same(state.form, state.serverForm);

  // A safety copy survives a crash or a closed tab; the server stays the source of truth.
  function keepLocalCopy() {
    try { localStorage.setItem(LOCAL_KEY, JSON.stringify({ version: state.version, form: state.form, at: Date.now() })); }
    catch (e) { /* storage full or disabled: the in-memory copy still holds the work */ }
  }
  function restoreLocalCopy() {
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(LOCAL_KEY) || "null"); } catch (e) { saved = null; }
    if (!saved || !EDITABLE) return false;
    if (saved.version === state.version && !same(saved.form, state.form)) {
      state.form = Object.assign(pickFields(state.form), saved.form);
      state.form.editor_state = normaliseEditor(state.form.editor_state);
      return true; // edits that never reached the server: save them now
    }
    localStorage.removeItem(LOCAL_KEY);
    return false;
  }

  // --- network ---------------------------------------------------------------------------------
  function csrfToken() {
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }
  async function api(method, url, body) {
    const response = await fetch(url, {
      method, credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    return { status: response.status, data: data || {} };
  }
  const isAuthProblem = (res) => res.status === 401 || (res.status === 403 &&
    /credentials|authenticat|csrf|log in/i.test(String(res.data.detail || "")));

  // --- save status -----------------------------------------------------------------------------
  function setSaveState(kind, text) {
    const node = $("ws-save");
    node.dataset.state = kind;
    node.textContent = text;
  }
  function banner(kind, message, actions) {
    const node = $("ws-banner");
    node.replaceChildren();
    if (!message) { node.hidden = true; return; }
    node.className = "ws-banner " + kind;
    node.appendChild(el("span", {}, message));
    for (const [label, fn] of actions || []) {
      const b = el("button", { type: "button" }, label);
      b.addEventListener("click", fn);
      node.appendChild(b);
    }
    node.hidden = false;
  }

  let debounceTimer = null;
  function edited() {
    state.lastInput = Date.now();
    keepLocalCopy();
    if (!EDITABLE) return;
    setSaveState("dirty", "Unsaved changes");
    clearTimeout(debounceTimer);
    debounceTimer = setTimeout(save, 700);
  }

  function save() {
    clearTimeout(debounceTimer);
    if (state.saving) { state.pendingAgain = true; return state.savePromise; }
    state.savePromise = saveNow();
    return state.savePromise;
  }

  async function saveNow() {
    if (!EDITABLE || state.blocked) return;
    if (!dirty()) { setSaveState("saved", "Saved"); return; }
    state.saving = true;
    const sent = JSON.parse(JSON.stringify(state.form));
    setSaveState("saving", "Saving…");
    let res;
    try {
      res = await api("PUT", `/api/annotations/${ANN_ID}/draft/`, Object.assign({ version: state.version }, sent));
    } catch (e) {
      res = { status: 0, data: {} };
    }
    state.saving = false;
    if (res.status === 200) {
      state.version = res.data.version;
      state.serverForm = pickFields(res.data);
      state.serverForm.editor_state = normaliseEditor(state.serverForm.editor_state);
      // The server owns the answer's rules (a verdict without τ keeps no correction; a moved τ drops the points
      // placed on the old step): what it took away, the page takes away too. Otherwise the editor state stays as
      // sent (the server only renders the canonical action strings from it).
      const unchanged = same(sent, state.form);
      const adopted = adoptCleared(sent, state.serverForm);
      state.retryDelay = 1000;
      keepLocalCopy();
      if (unchanged) state.serverForm = JSON.parse(JSON.stringify(state.form));
      if (adopted) {
        renderAll();
        if (state.form.verdict === "error" && state.form.tau) { checkAction("corrected"); checkAction("reflection"); }
      }
      if (dirty() || state.pendingAgain) { state.pendingAgain = false; return save(); }
      setSaveState("saved", "Saved");
      if (!$("ws-banner").classList.contains("conflict")) banner("", "");
      return;
    }
    if (res.status === 409 && res.data.current) return conflict(res.data);
    if (isAuthProblem(res)) return sessionExpired();
    if (res.status === 0 || res.status >= 500) return retryLater();
    state.blocked = null;
    setSaveState("error", "Not saved");
    banner("error", "Not saved: " + (res.data.detail || describeErrors(res.data)));
  }
  // Fields (and editor points) the server emptied that the user has not touched since sending: take them over.
  function adoptCleared(sent, server) {
    let adopted = false;
    for (const name of FIELDS) {
      if (name === "editor_state" || same(server[name], sent[name]) || !same(state.form[name], sent[name])) continue;
      if (server[name] === null || server[name] === "") { state.form[name] = server[name]; adopted = true; }
    }
    const editor = state.form.editor_state;
    if (same(editor, sent.editor_state)) {
      for (const slot of Object.keys(sent.editor_state || {})) {
        const before = sent.editor_state[slot];
        const after = server.editor_state[slot];
        if (!before) continue;
        if (!after) { editor[slot] = null; adopted = true; continue; }
        for (const arg of Object.keys(before.args || {})) {
          if (!(arg in (after.args || {}))) { delete editor[slot].args[arg]; adopted = true; }
        }
      }
    }
    return adopted;
  }
  function describeErrors(data) {
    return Object.entries(data || {}).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(" ") : v}`).join("; ");
  }
  function retryLater() {
    const wait = state.retryDelay;
    state.retryDelay = Math.min(state.retryDelay * 2, 30000);
    setSaveState("offline", `Offline — retrying in ${Math.round(wait / 1000)} s`);
    state.retryUntil = Date.now() + wait;
    clearTimeout(state.retryTimer);
    state.retryTimer = setTimeout(save, wait);
  }
  function sessionExpired() {
    state.blocked = "login";
    setSaveState("offline", "Not saved — log in again");
    $("ws-login").hidden = false;
  }
  function conflict(data) {
    state.blocked = "conflict";
    const newer = data.current;
    setSaveState("error", "Conflict");
    banner("conflict", data.detail + " Your version is kept in this page.", [
      ["Load the newer version", () => {
        state.blocked = null;
        state.version = newer.version;
        state.form = pickFields(newer);
        state.form.editor_state = normaliseEditor(state.form.editor_state);
        state.serverForm = JSON.parse(JSON.stringify(state.form));
        keepLocalCopy(); banner("", ""); renderAll(); setSaveState("saved", "Saved");
      }],
      ["Keep mine (overwrite)", () => {
        state.blocked = null;
        state.version = newer.version;
        state.serverForm = pickFields(newer);
        state.serverForm.editor_state = normaliseEditor(state.serverForm.editor_state);
        banner("", ""); save();
      }],
    ]);
  }
  $("ws-login-retry").addEventListener("click", () => {
    $("ws-login").hidden = true; state.blocked = null; state.retryDelay = 1000; save();
  });
  window.addEventListener("online", () => { if (!state.blocked) save(); });
  window.addEventListener("beforeunload", (event) => {
    keepLocalCopy();
    if (EDITABLE && dirty()) { event.preventDefault(); event.returnValue = ""; }
  });
  setInterval(() => { if (EDITABLE && dirty() && !state.saving && !state.blocked && Date.now() >= state.retryUntil) save(); }, 4000);

  // --- lease heartbeat (the active time is credited by the server) -----------------------------
  // Submit, skip and a lost lease end the lease: from then on nothing beats or sends a farewell for it.
  let heartbeatTimer = null;
  function leaseEnded() {
    clearInterval(heartbeatTimer);
    heartbeatTimer = null;
    state.leaseEnded = true;
  }
  if (DATA.lease && EDITABLE) {
    const beat = async () => {
      if (state.leaseEnded || document.hidden || Date.now() - state.lastInput > 5 * 60 * 1000) return;
      try {
        const res = await api("POST", `/api/leases/${DATA.lease.id}/heartbeat/`);
        if (res.status === 409) { leaseEnded(); banner("error", res.data.detail); }
        else if (isAuthProblem(res)) sessionExpired();
      } catch (e) { /* offline: the save status already tells */ }
    };
    heartbeatTimer = setInterval(beat, 30000);
    ["keydown", "mousedown", "input"].forEach((t) => document.addEventListener(t, () => { state.lastInput = Date.now(); }, true));
    // Closing the tab frees the trace at once (leads stop seeing "open now"); the draft is kept and opening the
    // annotation again takes a new lease. A beacon survives the page going away; a fetch would not.
    window.addEventListener("pagehide", () => {
      if (state.leaseEnded) return;
      const form = new FormData();
      form.append("csrfmiddlewaretoken", csrfToken());
      form.append("page", DATA.lease.page);
      navigator.sendBeacon(`/api/leases/${DATA.lease.id}/release/`, form);
    });
  }

  // --- geometry: model coordinates <-> screenshot pixels (extent served by the server) ---------
  const toPx = (shot, p) => [p[0] / shot.extent[0] * shot.width, p[1] / shot.extent[1] * shot.height];
  const toModel = (shot, px) => {
    if (shot.extent[0] === shot.width && shot.extent[1] === shot.height) return [Math.round(px[0]), Math.round(px[1])];
    return [Math.floor(px[0] / shot.width * shot.extent[0] + 0.5), Math.floor(px[1] / shot.height * shot.extent[1] + 0.5)];
  };
  const shotOf = (index) => (index === N + 1 ? FINAL : (STEPS[index - 1] || {}).shot || null);
  const Editor = window.StudioActionEditor;  // static/js/action_editor.js, shared with the review page
  const pointArgsOf = (type) => Editor.pointArgs(state.table, type);

  // --- overlay drawing -------------------------------------------------------------------------
  // ``extra`` (optional): {label, row, attrs}: a number written on the marker (an alternative's), the row of the
  // corner badges it takes, and attributes of its group.
  function drawAction(layer, shot, action, tone, extra) {
    if (!action || !action.type) return;
    const number = extra && extra.label ? `${extra.label}` : "";
    const args = action.args || {};
    // Marker sizes are in screenshot pixels: divided by the zoom, they keep their size on screen and never cover
    // more of the element being judged as the annotator zooms in.
    const scale = Math.max(shot.width, shot.height) / 1000 / state.zoom.scale;
    const r = 14 * scale, sw = 3 * scale, font = 15 * scale;
    const start = Array.isArray(args.start_box) ? toPx(shot, args.start_box) : null;
    const end = Array.isArray(args.end_box) ? toPx(shot, args.end_box) : null;
    const g = svg("g", Object.assign({ class: "mark " + tone, "data-action": action.type }, (extra && extra.attrs) || {}));
    let badged = false;
    const badge = (x, y, text) => {
      badged = true;
      text = number ? `${number} ${text}`.trim() : text;
      const t = svg("text", { x: x + r * 1.3, y: y - r * 1.1, "font-size": font, class: "badge-text" }, text);
      const pad = 5 * scale;
      const w = Math.min(text.length, 60) * font * 0.6 + 2 * pad;
      g.appendChild(svg("rect", { x: x + r * 1.3 - pad, y: y - r * 1.1 - font, width: w, height: font * 1.45, rx: 4 * scale, class: "badge" }));
      g.appendChild(t);
    };
    const ring = (p, rr) => g.appendChild(svg("circle", { cx: p[0], cy: p[1], r: rr, "stroke-width": sw, class: "ring" }));
    const dot = (p) => g.appendChild(svg("circle", { cx: p[0], cy: p[1], r: 3 * scale, class: "dot" }));
    const arrow = (a, b) => {
      g.appendChild(svg("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], "stroke-width": sw, class: "arrow", "marker-end": `url(#head-${tone})` }));
    };
    if (Array.isArray(action.target_box)) {
      const [a, b] = [toPx(shot, action.target_box.slice(0, 2)), toPx(shot, action.target_box.slice(2))];
      g.appendChild(svg("rect", { x: a[0], y: a[1], width: b[0] - a[0], height: b[1] - a[1], "stroke-width": sw * 0.7, class: "element-box" }));
    }
    const type = action.type;
    // Actions without a point get a badge in the corner: the recorded one on the first row, the correction on
    // the row below, so neither hides the other.
    const corner = [shot.width * 0.02, shot.height * 0.06 * (extra && extra.row ? extra.row : tone === "fix" ? 2 : 1)];
    const keyAction = ["hotkey", "press", "keydown", "keyup", "release"].includes(type);
    if (keyAction && !String(args.key || "").trim()) return;  // no key chosen yet: nothing to show
    if (["click", "left_single", "hover", "long_press"].includes(type) && start) {
      ring(start, r); dot(start);
      if (type !== "click" && type !== "left_single") badge(start[0], start[1], type.replace("_", " "));
    } else if (type === "left_double" && start) {
      ring(start, r); ring(start, r * 1.6); dot(start); badge(start[0], start[1], "double");
    } else if (type === "right_single" && start) {
      ring(start, r); dot(start); badge(start[0], start[1], "right");
    } else if (["drag", "swipe", "select"].includes(type) && start) {
      ring(start, r * 0.8); dot(start);
      if (end) arrow(start, end);
      badge(start[0], start[1], type);
    } else if (type === "scroll") {
      const p = start || [shot.width / 2, shot.height / 2];
      const d = { up: [0, -1], down: [0, 1], left: [-1, 0], right: [1, 0] }[args.direction] || [0, 1];
      const len = 90 * scale;
      ring(p, r * 0.8); dot(p);
      arrow(p, end || [p[0] + d[0] * len, p[1] + d[1] * len]);
      badge(p[0], p[1], "scroll " + (args.direction || ""));
    } else if (type === "type") {
      if (!start && !args.content) return;  // nothing typed and nowhere to type it yet
      const p = start || corner;
      if (start) { ring(p, r * 0.8); dot(p); }
      badge(p[0], p[1], "⌨ " + JSON.stringify(String(args.content || "")).slice(1, -1));
    } else if (keyAction) {
      badge(corner[0], corner[1], "⌘ " + String(args.key).trim().split(/\s+/).join(" + "));
    } else {
      const label = { finished: "✓ finished", wait: "… wait", call_user: "☎ call user", press_home: "⌂ home", press_back: "← back",
        open_app: "open " + (args.app_name || "") }[type] || type;
      badge(corner[0], corner[1], label + (type === "finished" && args.content ? ": " + args.content : ""));
    }
    if (number && !badged && start) badge(start[0], start[1], "");  // a plain click still shows its number
    layer.appendChild(g);
  }

  function overlayLayer(index, options, shot) {
    const layer = svg("svg", { viewBox: `0 0 ${shot.width} ${shot.height}`, class: "ws-overlay", preserveAspectRatio: "none" });
    const defs = svg("defs");
    for (const tone of ["recorded", "fix", "alt"]) {
      const m = svg("marker", { id: `head-${tone}`, viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" });
      m.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "head " + tone }));
      defs.appendChild(m);
    }
    layer.appendChild(defs);
    if (state.overlay && options.drawRecorded && index <= N) for (const a of STEPS[index - 1].actions || []) drawAction(layer, shot, a, "recorded");
    const slot = options.slot;
    // The alternatives under the correction: one taken sits where the correction starts, which stays on top.
    if (state.overlay) drawAlternatives(layer, shot, index);
    if (state.overlay && slot && state.form.editor_state[slot]) drawAction(layer, shot, state.form.editor_state[slot], "fix");
    const box = (a, b, cls) => layer.appendChild(svg("rect", {
      x: Math.min(a[0], b[0]), y: Math.min(a[1], b[1]), width: Math.abs(b[0] - a[0]), height: Math.abs(b[1] - a[1]),
      "stroke-width": Math.max(shot.width, shot.height) / 1000 * 2 / state.zoom.scale, class: cls,
    }));
    // The element under the pointer, of those the source recorded on this screen (on a correction's screen: what a
    // click snaps to; on any other, what the recorded action was meant to hit).
    const elements = index <= N ? STEPS[index - 1].elements || [] : [];
    if (state.hoverElement !== null && state.hoverElement.index === index && elements[state.hoverElement.element]) {
      const e = elements[state.hoverElement.element].box;
      box(toPx(shot, e.slice(0, 2)), toPx(shot, e.slice(2)), "ws-element-hover");
    }
    if (state.boxDrag && slot && state.boxDrag.slot === slot) box(state.boxDrag.a, state.boxDrag.b, "ws-box-draft");
    if (state.cursor && slot && state.cursor.slot === slot && state.cursor.anchor) box(state.cursor.anchor, state.cursor.px, "ws-box-draft");
    if (state.cursor && slot && state.cursor.slot === slot) {
      const [cx, cy] = state.cursor.px, arm = Math.max(shot.width, shot.height) / 40 / state.zoom.scale;
      const g = svg("g", { class: "ws-cursor", "stroke-width": Math.max(shot.width, shot.height) / 1000 * 3 / state.zoom.scale });
      g.appendChild(svg("line", { x1: cx - arm, y1: cy, x2: cx + arm, y2: cy }));
      g.appendChild(svg("line", { x1: cx, y1: cy - arm, x2: cx, y2: cy + arm }));
      g.appendChild(svg("circle", { cx, cy, r: arm / 3 }));
      layer.appendChild(g);
    }
    return layer;
  }

  function shotPane(index, options) {
    const shot = shotOf(index);
    const pane = el("figure", { class: "ws-pane" });
    const caption = el("figcaption", {}, index === N + 1 ? `o${sub(N + 1)} · final screen` : `o${sub(index)} · step ${index}`);
    if (!shot) {
      pane.appendChild(el("div", { class: "ws-missing" }, index > N ? "No screen after the last step was kept." : "No screenshot was recorded for this step."));
      pane.appendChild(caption);
      return pane;
    }
    const frame = el("div", { class: "ws-frame" });
    frame.style.aspectRatio = `${shot.width} / ${shot.height}`;
    // The image and its overlay move together inside the frame: zoom and pan transform this layer only.
    const view = el("div", { class: "ws-zoom" });
    view.style.transform = zoomTransform();
    const img = el("img", { src: shot.url, alt: `screenshot of step ${index}`, draggable: false, decoding: "async" });
    img.width = shot.width; img.height = shot.height;
    view.appendChild(img);
    view.appendChild(overlayLayer(index, options, shot));
    frame.appendChild(view);
    frame.redrawOverlay = () => view.replaceChild(overlayLayer(index, options, shot), view.querySelector(".ws-overlay"));
    const loupe = el("div", { class: "ws-loupe" });
    loupe.setAttribute("aria-hidden", "true");
    loupe.hidden = true;
    loupe.style.backgroundImage = `url("${shot.url}")`;
    frame.appendChild(loupe);
    const slot = options.slot;
    if (slot && EDITABLE) {
      frame.classList.add("placing");
      frame.dataset.slot = slot;
      frame.addEventListener("click", (event) => {
        // (The click that ends a drag never reaches here: static/js/zoom.js swallows it.) Measured on the transformed layer: exact at every zoom and pan.
        const px = pxAt(view, shot, event);
        const element = elementAt(index, shot, px);
        const action = state.form.editor_state[slot];
        if (element !== null && action && !insideOwnBox(action, toModel(shot, px)) && snaps(action)) snapTo(slot, index, element);
        else placePoint(slot, toModel(shot, px));
      });
    }
    attachZoomGestures(frame, view, loupe, !!(slot && EDITABLE), { index, shot, slot });
    pane.appendChild(frame);
    pane.appendChild(caption);
    return pane;
  }
  const sub = (n) => String(n).split("").map((d) => "₀₁₂₃₄₅₆₇₈₉"[+d]).join("");

  // --- zoom, pan and the loupe ------------------------------------------------------------------
  // Gestures and the zoom arithmetic are static/js/zoom.js's (shared with the review page); + - 0 from the keyboard.
  // Every pane shares state.zoom, so o_i | o_i+1 stay aligned. While the view moves only a CSS transform changes
  // (cheap, every frame); the markers are redrawn at their on-screen size once it settles.
  const Zoom = window.StudioZoom;
  const LOUPE_RADIUS = 75, LOUPE_POWER = 3;
  let settleTimer = null;
  function zoomTransform() { return Zoom.transform(state.zoom); }
  function setZoom(view) {
    state.zoom = view;
    const stage = $("ws-stage");
    for (const layer of stage.querySelectorAll(".ws-zoom")) layer.style.transform = zoomTransform();
    stage.classList.toggle("zoomed", state.zoom.scale > 1);
    $("ws-zoom-level").textContent = `${Math.round(state.zoom.scale * 100)} %`;
    clearTimeout(settleTimer);
    settleTimer = setTimeout(() => {
      for (const frame of stage.querySelectorAll(".ws-frame")) if (frame.redrawOverlay) frame.redrawOverlay();
      announceStep();  // pre-scoring draws its ghost action into the new overlay
      if (state.cursor) showCursorLoupe();
    }, 120);
  }
  function zoomAt(u, v, factor) { setZoom(Zoom.zoomAt(state.zoom, u, v, factor)); }
  function zoomReset() { setZoom({ ...Zoom.FIT }); }
  window.wsZoom = () => ({ ...state.zoom });  // for tests

  function attachZoomGestures(frame, view, loupe, placing, pane) {
    Zoom.attach(frame, {
      get: () => state.zoom,
      set: setZoom,
      hover: (event) => {
        if (placing && !state.cursor) showLoupe(frame, view, loupe, event.clientX, event.clientY);
        hoverElement(frame, pane.index, pane.shot, pxAt(view, pane.shot, event));
      },
      leave: () => {
        if (!state.cursor) loupe.hidden = true;
        if (state.hoverElement !== null) { state.hoverElement = null; if (frame.redrawOverlay) frame.redrawOverlay(); }
      },
      // Shift+drag (or any drag while "Draw box" is on) draws the target's element box instead of panning.
      draw: placing ? {
        start: (event) => {
          const action = state.form.editor_state[pane.slot];
          if (!(event.shiftKey || state.boxMode) || !action || !takesBox(action)) return false;
          const px = pxAt(view, pane.shot, event);
          state.boxDrag = { slot: pane.slot, a: px, b: px };
          return true;
        },
        move: (event) => { state.boxDrag.b = pxAt(view, pane.shot, event); frame.redrawOverlay(); },
        end: (event, cancelled) => {
          const drag = state.boxDrag;
          state.boxDrag = null;
          if (cancelled) { frame.redrawOverlay(); return; }
          drag.b = pxAt(view, pane.shot, event);
          setBox(pane.slot, pane.shot, drag.a, drag.b);
        },
      } : null,
    });
  }

  // --- element boxes: drawn (drag, keyboard), or snapped to one the source recorded ---------------
  // A point on the transformed layer, in screenshot pixels (exact at every zoom and pan, as point placement).
  function pxAt(view, shot, event) {
    const box = view.getBoundingClientRect();
    return [Math.min(shot.width, Math.max(0, (event.clientX - box.left) / box.width * shot.width)),
      Math.min(shot.height, Math.max(0, (event.clientY - box.top) / box.height * shot.height))];
  }
  // Only the start point (the target) has a box; the table says which actions have one.
  const takesBox = (action) => pointArgsOf(action.type).some((a) => a.name === "start_box");
  const snaps = (action) => { const p = Editor.placeablePoints(state.table, action.type); return p.length === 1 && p[0].name === "start_box"; };
  const insideOwnBox = (action, p) => Array.isArray(action.target_box)
    && p[0] >= action.target_box[0] && p[0] <= action.target_box[2] && p[1] >= action.target_box[1] && p[1] <= action.target_box[3];
  // The smallest recorded element under ``px`` (the innermost one), or null.
  function elementAt(index, shot, px) {
    const elements = index <= N ? STEPS[index - 1].elements || [] : [];
    let best = null, bestArea = Infinity;
    elements.forEach((e, i) => {
      const a = toPx(shot, e.box.slice(0, 2)), b = toPx(shot, e.box.slice(2));
      const area = (b[0] - a[0]) * (b[1] - a[1]);
      if (px[0] >= a[0] && px[0] <= b[0] && px[1] >= a[1] && px[1] <= b[1] && area < bestArea) { best = i; bestArea = area; }
    });
    return best;
  }
  function hoverElement(frame, index, shot, px) {
    const found = elementAt(index, shot, px);
    const now = state.hoverElement;
    if ((found === null && now === null) || (now && now.index === index && now.element === found)) return;
    state.hoverElement = found === null ? null : { index, element: found };
    frame.redrawOverlay();
  }
  // A new box: the point goes back to the server's default, the box's centre (and can then be moved inside it).
  function setBox(slot, shot, a, b) {
    const action = state.form.editor_state[slot];
    if (!action) return;
    const p = toModel(shot, a), q = toModel(shot, b);
    const box = [Math.min(p[0], q[0]), Math.min(p[1], q[1]), Math.max(p[0], q[0]), Math.max(p[1], q[1])];
    if (box[0] === box[2] || box[1] === box[3]) { renderStage(); return; }  // a press without a drag draws nothing
    action.target_box = box;
    delete action.args.start_box;
    state.placeIndex[slot] = 1;
    renderAll(); edited(); checkAction(slot);
  }
  function snapTo(slot, index, element) {
    const action = state.form.editor_state[slot];
    action.target_box = STEPS[index - 1].elements[element].box.slice();
    delete action.args.start_box;
    state.placeIndex[slot] = 1;
    renderAll(); edited(); checkAction(slot);
  }
  function clearBox(slot) {
    const action = state.form.editor_state[slot];
    if (!action) return;
    delete action.target_box;
    renderAll(); edited(); checkAction(slot);
  }

  // The loupe: LOUPE_POWER times what the frame shows, centred on the point that a click (or Enter) would place.
  function showLoupe(frame, view, loupe, clientX, clientY) {
    const image = view.getBoundingClientRect(), box = frame.getBoundingClientRect();
    const fx = (clientX - image.left) / image.width, fy = (clientY - image.top) / image.height;
    if (fx < 0 || fx > 1 || fy < 0 || fy > 1) { loupe.hidden = true; return; }
    const width = image.width * LOUPE_POWER, height = image.height * LOUPE_POWER;
    loupe.style.backgroundSize = `${width}px ${height}px`;
    loupe.style.backgroundPosition = `${LOUPE_RADIUS - fx * width}px ${LOUPE_RADIUS - fy * height}px`;
    // Up and to the right of the point, so it never hides the point itself; flipped near the frame's edges.
    let left = clientX - box.left + 24, top = clientY - box.top - 2 * LOUPE_RADIUS - 24;
    if (left + 2 * LOUPE_RADIUS > box.width) left = clientX - box.left - 2 * LOUPE_RADIUS - 24;
    if (top < 0) top = clientY - box.top + 24;
    loupe.style.left = `${left}px`;
    loupe.style.top = `${top}px`;
    loupe.hidden = false;
  }
  function showCursorLoupe() {
    const frame = document.querySelector("#ws-stage .ws-frame.placing");
    const shot = shotOf(state.current);
    if (!frame || !state.cursor || !shot) return;
    const view = frame.querySelector(".ws-zoom"), image = view.getBoundingClientRect();
    const [x, y] = state.cursor.px;
    showLoupe(frame, view, frame.querySelector(".ws-loupe"), image.left + x / shot.width * image.width, image.top + y / shot.height * image.height);
  }
  // The keyboard cursor stays in view: when it leaves the zoomed region, the view centres on it.
  function keepCursorInView() {
    const shot = shotOf(state.current), z = state.zoom;
    if (!state.cursor || !shot || z.scale === 1) return;
    const fx = state.cursor.px[0] / shot.width, fy = state.cursor.px[1] / shot.height;
    const u = fx * z.scale + z.ox, v = fy * z.scale + z.oy;
    if (u > 0.05 && u < 0.95 && v > 0.05 && v < 0.95) return;
    state.zoom = Zoom.clamp(z.scale, 0.5 - fx * z.scale, 0.5 - fy * z.scale);
  }

  // --- which slot edits on which screen --------------------------------------------------------
  function slotAt(index) {
    const f = state.form;
    if (f.verdict !== "error" || !f.tau) return null;
    if (index === f.tau) return "corrected";
    if (index === f.tau + 1 && shotOf(index)) return "reflection";
    return null;
  }

  // --- step switch (measured by bench/annotate.py) ----------------------------------------------
  const prefetched = new Set();
  function prefetch(index) {
    for (const i of [index + 1, index - 1, index + 2]) {
      const shot = shotOf(i);
      if (shot && !prefetched.has(shot.url)) { prefetched.add(shot.url); const im = new Image(); im.decoding = "async"; im.src = shot.url; }
    }
  }

  function goTo(index) {
    state.cursor = null;
    index = Math.max(1, Math.min(LAST_VIEW, index));
    performance.mark("ws-step-start");
    if (index !== state.current && dirty()) save();
    state.current = index;
    renderStep();
    performance.mark("ws-step-end");
    performance.measure("ws-step-switch", "ws-step-start", "ws-step-end");
    prefetch(index);
  }
  window.wsGoTo = goTo; // for the benchmark and tests

  function renderStrip() {
    const strip = $("ws-strip");
    if (!strip.childElementCount) {
      for (let i = 1; i <= LAST_VIEW; i++) {
        const shot = shotOf(i);
        // Out of the Tab order (j/k and the digits reach every step): Tab walks the form, not 30 thumbnails.
        const b = el("button", { type: "button", class: "ws-thumb", "data-step": i, title: i > N ? "final screen" : `step ${i}`, tabIndex: -1 });
        if (shot) {
          const im = el("img", { src: shot.thumb, alt: "", loading: "lazy", decoding: "async" });
          // Sized before it loads, so the strip keeps its layout while thumbnails stream in.
          im.height = 60; im.width = Math.round(60 * shot.width / shot.height);
          b.appendChild(im);
        } else b.appendChild(el("span", { class: "ws-thumb-missing" }, "—"));
        b.appendChild(el("span", { class: "ws-thumb-num" }, i > N ? "end" : i));
        // A recorded point off the screen (the server measured it at import): marked on its thumbnail.
        if (i <= N && STEPS[i - 1].off_screen) b.appendChild(el("span", { class: "ws-off-screen-mark", title: "a recorded point outside the screen" }, "off"));
        b.addEventListener("click", () => goTo(i));
        const dropped = i <= N ? STEPS[i - 1].missing_before : 0;
        if (dropped) {
          // A gap in the recording: a visible break in the strip before this step.
          strip.appendChild(el("span", { class: "ws-gap-mark", title: `${dropped} step(s) missing here` }, `⋯ ${dropped}`));
        }
        strip.appendChild(b);
      }
    }
    const tau = state.form.verdict === "error" ? state.form.tau : null;
    for (const b of strip.querySelectorAll(".ws-thumb")) {
      const i = +b.dataset.step;
      b.classList.toggle("current", i === state.current);
      b.classList.toggle("tau", i === tau);
      b.classList.toggle("after-tau", !!tau && i > tau);
      if (i === state.current) b.setAttribute("aria-current", "step"); else b.removeAttribute("aria-current");
    }
    const cur = strip.querySelector(".current");
    if (cur) cur.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  function renderStage() {
    const stage = $("ws-stage");
    const i = state.current;
    const slot = slotAt(i);
    const panes = [shotPane(i, { drawRecorded: true, slot })];
    if (state.compare && i < LAST_VIEW) panes.push(shotPane(i + 1, { drawRecorded: false, slot: null }));
    stage.replaceChildren(...panes);
    stage.classList.toggle("compare", state.compare);
    stage.classList.toggle("zoomed", state.zoom.scale > 1);
    $("ws-zoom-level").textContent = `${Math.round(state.zoom.scale * 100)} %`;
    const tau = state.form.verdict === "error" ? state.form.tau : null;
    stage.classList.toggle("dimmed", !!tau && i > tau + 1);
    const hint = $("ws-place-hint");
    if (slot && EDITABLE) {
      const a = state.form.editor_state[slot];
      const pts = a ? pointArgsOf(a.type).filter((p) => p.required || pointArgsOf(a.type).every((q) => !q.required)) : [];
      hint.hidden = false;
      hint.textContent = !a ? `Choose the ${slot === "corrected" ? "corrected" : "post-reflection"} action type, then click the screenshot to place it.`
        : pts.length ? `Click the screenshot to place ${pts.map((p) => p.name).join(" then ")} of the ${slot === "corrected" ? "corrected" : "post-reflection"} ${a.type}.`
          : `The ${a.type} action has no point to place.`;
    } else hint.hidden = true;
  }

  function renderStepInfo() {
    const i = state.current;
    const step = STEPS[i - 1];
    $("ws-step-num").textContent = i > N ? `${N + 1} (final screen)` : `${i} / ${N}`;
    $("ws-step-label").textContent = i > N ? "Final screen (after the last action)" : `Step ${i} of ${N}`;
    const tags = $("ws-step-tags");
    tags.replaceChildren();
    const tau = state.form.verdict === "error" ? state.form.tau : null;
    if (tau && i === tau) tags.appendChild(el("span", { class: "ws-tag tau" }, "τ · first error"));
    if (tau && i === tau + 1) tags.appendChild(el("span", { class: "ws-tag refl" }, "o_τ+1 · post-reflection"));
    if (tau && i > tau + 1) tags.appendChild(el("span", { class: "ws-tag after" }, "after τ"));
    $("ws-thought").textContent = step ? (step.thought || "(no thought recorded)") : "—";
    $("ws-action").textContent = step ? (step.action_text || "(no action)") : "—";
    const gap = step ? step.missing_before : 0;
    $("ws-gap").hidden = !gap;
    $("ws-gap").textContent = gap ? `The source dropped ${gap} step${gap > 1 ? "s" : ""} right before this one: ` +
      "the screen before it is not the previous step's result." : "";
    $("ws-parse-error").hidden = !(step && step.parse_error);
    $("ws-parse-error").textContent = step && step.parse_error ? "Does not parse: " + step.parse_error : "";
    $("ws-off-screen").hidden = !(step && step.off_screen);
    $("ws-off-screen").textContent = step && step.off_screen ? "Off the screen: " + step.off_screen : "";
    const human = step && step.human_edit;
    $("ws-human").hidden = !human;
    $("ws-human-text").textContent = human ? human.raw : "";
  }

  function renderPanels() {
    const f = state.form;
    for (const b of document.querySelectorAll("[data-verdict]")) b.classList.toggle("active", b.dataset.verdict === f.verdict);
    const vt = $("ws-verdict-text");
    vt.textContent = f.verdict === "error" ? `First error at step ${f.tau} (τ).` : f.verdict === "no_error" ? "The trace has no error."
      : f.verdict === "unusable" ? "Unusable." : "Not decided yet.";
    $("ws-unusable-wrap").hidden = f.verdict !== "unusable";
    $("ws-error-fields").hidden = f.verdict !== "error";
    for (const node of document.querySelectorAll("[data-field]")) {
      const v = f[node.dataset.field];
      if (document.activeElement !== node && node.value !== (v || "")) node.value = v || "";
      node.disabled = !EDITABLE;
    }
    const i = state.current;
    const tau = f.verdict === "error" ? f.tau : null;
    const showCorrection = tau && i === tau;
    const showReflection = tau && i === tau + 1 || (tau && i === tau && !shotOf(tau + 1));
    $("ws-correction").hidden = !showCorrection;
    $("ws-reflection").hidden = !showReflection;
    for (const node of document.querySelectorAll(".ws-tau")) node.textContent = tau || "";
    const missing = tau && !shotOf(tau + 1);
    $("ws-reflection-missing").hidden = !missing;
    $("ws-reflection-body").hidden = !!missing;
    if (missing) {
      $("ws-reflection-missing").textContent = tau === N
        ? `τ is the last step and the runner kept no screen after it: there is no o${sub(tau + 1)}, so no post-reflection can be given. The annotation will record why.`
        : `Step ${tau + 1} has no screenshot: no post-reflection can be given. The annotation will record why.`;
    }
    const goto = $("ws-goto");
    goto.hidden = !tau || showCorrection || showReflection;
    $("ws-goto-text").textContent = tau ? `τ = ${tau}. Press t to go to the correction, then → for the post-reflection.` : "";
    if (showCorrection) renderEditor("corrected");
    if (showReflection && !missing) renderEditor("reflection");
    renderStarts();
  }

  function renderStarts() {
    const box = document.querySelector('[data-starts="corrected"]');
    box.replaceChildren();
    const tau = state.form.tau;
    const step = tau ? STEPS[tau - 1] : null;
    if (!step || !EDITABLE) return;
    if (step.human_edit && step.human_edit.action) {
      const b = el("button", { type: "button", class: "ws-start human" }, "Start from the human-edited reply");
      b.title = "The source kept a human correction of this step";
      b.addEventListener("click", () => {
        state.form.corrected_thought = step.human_edit.thought;
        state.form.editor_state.corrected = step.human_edit.action;
        renderAll(); edited(); checkAction("corrected");
      });
      box.appendChild(b);
    }
    const suggestion = state.modelStarts[tau];
    if (suggestion) {
      const b = el("button", { type: "button", class: "ws-start model" }, "Start from the model's reply");
      b.title = "The pre-scoring model's own thought and action at this step";
      b.addEventListener("click", () => {
        state.form.corrected_thought = suggestion.thought || state.form.corrected_thought;
        state.form.editor_state.corrected = JSON.parse(JSON.stringify(suggestion.action));
        renderAll(); edited(); checkAction("corrected");
      });
      box.appendChild(b);
    }
    if ((step.actions || []).length) {
      const b = el("button", { type: "button", class: "ws-start" }, "Start from the recorded action");
      b.addEventListener("click", () => {
        state.form.editor_state.corrected = JSON.parse(JSON.stringify(step.actions[0]));
        if (!state.form.corrected_thought) state.form.corrected_thought = step.thought;
        renderAll(); edited(); checkAction("corrected");
      });
      box.appendChild(b);
    }
    const first = box.querySelector(".ws-start");
    if (first) { first.append(" "); first.appendChild(el("kbd", {}, "s")); }
  }

  // --- on-policy alternatives (issue 21 §4; annotation/alternatives/api.py) ----------------------
  // The server samples them, parses them and says whether a model is configured (else what to set); the page lists
  // every reply, draws the parsed ones as numbered markers on their step with drawAction (the served actions are in
  // the project's convention, like the recorded ones) and sends marks. A 403 (a blind project for annotators) hides it.
  const ALTS_URL = `/api/annotations/${ANN_ID}/alternatives/`;
  const alts = { data: null, hidden: false, hot: null, timer: null };
  const altsDone = (job) => !job || ["succeeded", "failed", "cancelled"].includes(job.status);
  async function loadAlternatives() {
    let res;
    try { res = await api("GET", ALTS_URL); } catch (e) { return; }
    if (res.status === 403 && !isAuthProblem(res)) { alts.hidden = true; renderAlternatives(); return; }
    if (res.status === 200) showAlternatives(res.data);
  }
  function showAlternatives(data) {
    alts.data = Object.assign({}, alts.data || {}, data);
    renderAlternatives();
    for (const frame of $("ws-stage").querySelectorAll(".ws-frame")) if (frame.redrawOverlay) frame.redrawOverlay();
    announceStep();  // pre-scoring draws its ghost into the new overlay
    clearTimeout(alts.timer);
    if (!altsDone(alts.data.job)) alts.timer = setTimeout(loadAlternatives, 1500);  // a job on the gpu queue: poll
  }
  function drawAlternatives(layer, shot, index) {
    const data = alts.data;
    if (!data || alts.hidden || !data.job || data.job.step !== index) return;
    for (const row of data.alternatives) {
      if (!row.parsed) continue;  // listed as text, never drawn
      for (const action of row.actions || []) {
        drawAction(layer, shot, action, "alt", { label: row.number, row: 2 + row.number,
          attrs: { "data-alt": row.number, class: `mark alt${row.mark ? " " + row.mark : ""}${alts.hot === row.number ? " hot" : ""}` } });
      }
    }
  }
  async function askAlternatives() {
    const res = await api("POST", ALTS_URL, { step: state.form.tau }).catch(() => ({ status: 0, data: {} }));
    if (res.status === 202) { showAlternatives(res.data); return; }
    if (isAuthProblem(res)) return sessionExpired();
    banner("error", "No alternatives: " + (res.data.detail || describeErrors(res.data) || "the server could not be reached"));
  }
  const altRow = (number) => (alts.data ? alts.data.alternatives.find((r) => r.number === number) : null);
  async function markAlternative(number, verdict) {
    const row = altRow(number);
    if (!row || !row.parsed || !EDITABLE) return null;
    const res = await api("POST", `${ALTS_URL}${row.id}/mark/`, { verdict }).catch(() => ({ status: 0, data: {} }));
    if (res.status !== 200) {
      if (isAuthProblem(res)) sessionExpired();
      else banner("error", `Alternative ${number} not marked: ${res.data.detail || describeErrors(res.data) || "the server could not be reached"}`);
      return null;
    }
    showAlternatives(res.data);
    return res.data;
  }
  // Taking one: the server marks it (one per annotation) and answers the starting point's thought; the editor gets
  // the served action, and the draft saves it as any edit.
  async function takeAlternative(number) {
    const row = altRow(number), job = alts.data && alts.data.job;
    if (!row || !row.parsed || !EDITABLE || !job) return;
    if (state.form.verdict !== "error" || job.step !== state.form.tau) {
      banner("error", `The alternatives are for step ${job.step}; τ is ${state.form.tau || "not set"}: ask again at τ.`);
      return;
    }
    const answer = await markAlternative(number, "taken");
    if (!answer) return;
    const start = answer.starting_point || {};
    if (start.thought) state.form.corrected_thought = start.thought;
    state.form.editor_state.corrected = JSON.parse(JSON.stringify(row.actions[0]));
    state.placeIndex.corrected = 0;
    renderAll(); edited(); checkAction("corrected");
  }
  function setHot(number) {
    if (alts.hot === number) return;
    alts.hot = number;
    for (const li of document.querySelectorAll("#ws-alts-list li")) li.classList.toggle("hot", Number(li.dataset.alt) === number);
    for (const frame of $("ws-stage").querySelectorAll(".ws-frame")) if (frame.redrawOverlay) frame.redrawOverlay();
  }
  function renderAlternatives() {
    const box = $("ws-alts");
    if (alts.hidden || !alts.data) { box.hidden = true; return; }
    box.hidden = false;
    const { job, model = {}, alternatives = [] } = alts.data;
    const ask = $("ws-alts-ask");
    ask.replaceChildren();
    if (!model.configured) ask.appendChild(el("p", { class: "notice small", id: "ws-alts-problem" }, model.problem));
    else if (EDITABLE) {
      const k = job && job.settings && job.settings.k;
      const b = el("button", { type: "button", id: "ws-alts-ask-btn", disabled: !altsDone(job) },
        job ? `Ask the model again${k ? ` (${k})` : ""}` : "Ask the model");
      b.title = "Sample the configured checkpoint's own replies at τ (a job on the gpu queue)";
      b.addEventListener("click", askAlternatives);
      ask.appendChild(b);
    }
    const status = $("ws-alts-status");
    status.textContent = !job ? "" : !altsDone(job) ? `Sampling at step ${job.step}… (${job.status})`
      : job.status !== "succeeded" ? `${job.status[0].toUpperCase()}${job.status.slice(1)}: ${job.message}`
        : `${job.message || `${alternatives.length} alternatives`} · step ${job.step} · ${job.model_name}${job.reused ? " (stored)" : ""}`;
    const list = $("ws-alts-list");
    list.replaceChildren();
    for (const row of alternatives) {
      const li = el("li", { class: `ws-alt${row.parsed ? "" : " unparsed"}${row.mark ? " " + row.mark : ""}${alts.hot === row.number ? " hot" : ""}`, "data-alt": row.number, tabIndex: 0 });
      li.appendChild(el("span", { class: "ws-alt-num" }, row.number));
      li.appendChild(el("code", { class: "ws-alt-text" }, row.parsed ? row.reply : row.text));
      const side = el("span", { class: "ws-alt-side" });
      side.appendChild(el("span", { class: "ws-alt-mark", "data-alt-mark": row.number },
        !row.parsed ? "not an action: text only" : row.mark === "taken" ? "taken" : row.mark === "wrong" ? "wrong" : ""));
      if (row.parsed && EDITABLE) {
        const take = el("button", { type: "button", class: "ws-ghost small", "data-alt-take": row.number }, "Take ");
        take.appendChild(el("kbd", {}, `Alt+${row.number}`));
        take.title = `Start the correction from alternative ${row.number} (Alt+${row.number})`;
        take.addEventListener("click", () => takeAlternative(row.number));
        const wrong = el("button", { type: "button", class: "ws-ghost small", "data-alt-wrong": row.number }, row.mark === "wrong" ? "Not wrong" : "Wrong");
        wrong.title = "Mark it wrong: it becomes a rejected side of a DPO pair (w on the hovered or focused one)";
        wrong.addEventListener("click", () => markAlternative(row.number, row.mark === "wrong" ? "" : "wrong"));
        side.append(take, wrong);
      }
      li.appendChild(side);
      li.addEventListener("mouseenter", () => setHot(row.number));
      li.addEventListener("focusin", () => setHot(row.number));
      list.appendChild(li);
    }
  }

  // --- structured action editor ----------------------------------------------------------------
  const checks = { corrected: null, reflection: null };
  function renderEditor(slot) {
    Editor.render(document.querySelector(`.ws-action-editor[data-slot="${slot}"]`), {
      table: state.table,
      platform: DATA.project.platform,
      slot,
      action: state.form.editor_state[slot],
      editable: EDITABLE,
      check: checks[slot],
      fallbackCanonical: slot === "corrected" ? ann.corrected_action : ann.reflection_action,
      onType: (type) => {
        // A new type starts empty: a point placed for the old action means nothing for the new one.
        const old = state.form.editor_state[slot];
        state.form.editor_state[slot] = type ? { type, args: {}, style: (old && old.style) || "box" } : null;
        state.placeIndex[slot] = 0;
        renderAll(); edited(); checkAction(slot);
      },
      onArg: (name, value, quiet) => setArg(slot, name, value, quiet),
      onClearPoint: (name) => { delete state.form.editor_state[slot].args[name]; renderAll(); edited(); checkAction(slot); },
      onClearBox: () => clearBox(slot),
      boxHint: "Shift+drag on the screenshot, b from the keyboard, or click an outlined element",
    });
  }

  function setArg(slot, name, value, quiet) {
    const action = state.form.editor_state[slot];
    if (!action) return;
    if (value === undefined) delete action.args[name]; else action.args[name] = value;
    if (!quiet) renderAll(); else renderStage();
    edited(); checkAction(slot);
  }

  function placePoint(slot, point) {
    const action = state.form.editor_state[slot];
    if (!action) { banner("error", "Choose the action type first, then click to place it."); return; }
    if (!Editor.placeablePoints(state.table, action.type).length) return;
    state.placeIndex[slot] = Editor.place(state.table, action, state.placeIndex[slot], point);
    renderAll(); edited(); checkAction(slot);
  }

  const checkTimers = {}, checkSeq = { corrected: 0, reflection: 0 };
  function checkAction(slot) {
    clearTimeout(checkTimers[slot]);
    checkTimers[slot] = setTimeout(async () => {
      const action = state.form.editor_state[slot];
      const seq = ++checkSeq[slot]; // answers can overtake each other: only the latest counts
      try {
        const res = await api("POST", `/api/annotations/${ANN_ID}/check-action/`, { slot, action, tau: state.form.tau });
        if (res.status === 200 && seq === checkSeq[slot]) {
          checks[slot] = res.data;
          // The point a box gives by default (its centre) is the server's: take it over while the box is unchanged.
          const now = state.form.editor_state[slot], served = res.data.action;
          if (now && served && Array.isArray(now.target_box) && !now.args.start_box && served.args.start_box
            && same(now.target_box, served.target_box)) {
            now.args.start_box = served.args.start_box;
            renderAll(); edited();
          } else renderPanels();
        }
      } catch (e) { /* offline: checked again on the next edit */ }
    }, 120);
  }

  // --- marking ---------------------------------------------------------------------------------
  function setVerdict(verdict) {
    if (!EDITABLE) return;
    const f = state.form;
    if (verdict === "error") {
      if (state.current > N) { banner("error", "The final screen is not a step: mark τ on a step."); return; }
      f.verdict = "error"; f.tau = state.current;
    } else {
      f.verdict = verdict;
    }
    renderAll(); edited();
    if (verdict === "error") { checkAction("corrected"); if (shotOf(f.tau + 1)) checkAction("reflection"); }
    if (verdict === "unusable") $("f-unusable_reason").focus();
  }
  for (const b of document.querySelectorAll("[data-verdict]")) b.addEventListener("click", () => setVerdict(b.dataset.verdict));
  for (const node of document.querySelectorAll("[data-field]")) {
    node.addEventListener(node.tagName === "SELECT" ? "change" : "input", () => {
      state.form[node.dataset.field] = node.value;
      edited();
    });
  }

  // --- submit / skip ---------------------------------------------------------------------------
  // Where each submit problem is typed or chosen: highlighted until it is edited.
  const PROBLEM_TARGETS = {
    verdict: "#ws-verdict-panel .ws-verdict", tau: "#ws-verdict-panel .ws-verdict",
    corrected_action: ".ws-action-editor[data-slot='corrected']", reflection_action: ".ws-action-editor[data-slot='reflection']",
  };
  function clearProblems() {
    for (const node of document.querySelectorAll(".ws-invalid")) { node.classList.remove("ws-invalid"); node.removeAttribute("aria-invalid"); }
    $("ws-submit-errors").hidden = true;
  }
  function showProblems(errors) {
    clearProblems();
    const box = $("ws-submit-errors");
    box.replaceChildren(el("strong", {}, "Cannot submit yet:"));
    const list = el("ul");
    let first = null;
    for (const [field, message] of Object.entries(errors)) {
      list.appendChild(el("li", {}, message));
      const node = document.querySelector(PROBLEM_TARGETS[field] || `[data-field='${field}']`);
      if (!node || node.closest("[hidden]")) continue;
      node.classList.add("ws-invalid");
      node.setAttribute("aria-invalid", "true");
      first = first || node;
    }
    box.appendChild(list);
    box.hidden = false;
    if (first) {
      first.scrollIntoView({ block: "center" });
      const control = first.matches("input, select, textarea") ? first : first.querySelector("input, select, textarea, button");
      if (control) control.focus({ preventScroll: true });
    }
  }
  document.addEventListener("input", (event) => { const bad = event.target.closest(".ws-invalid"); if (bad) { bad.classList.remove("ws-invalid"); bad.removeAttribute("aria-invalid"); } }, true);
  document.addEventListener("change", (event) => { const bad = event.target.closest(".ws-invalid"); if (bad) { bad.classList.remove("ws-invalid"); bad.removeAttribute("aria-invalid"); } }, true);

  async function submit() {
    if (!EDITABLE || root.dataset.editable === "0") return;  // read only, or already submitted
    for (let attempt = 0; attempt < 3 && (dirty() || state.saving) && !state.blocked; attempt++) await save();
    if (dirty() || state.blocked) { banner("error", "Save the draft first (see the status above), then submit."); return; }
    const res = await api("POST", `/api/annotations/${ANN_ID}/submit/`, { version: state.version }).catch(() => ({ status: 0, data: {} }));
    if (res.status === 200) {
      leaseEnded();
      clearProblems();
      localStorage.removeItem(LOCAL_KEY);
      $("ws-status-pill").textContent = "Submitted";
      $("ws-status-pill").className = "pill submitted";
      banner("ok", "Submitted for review. ", [["Next trace →", () => { window.location.href = root.dataset.queueUrl; }]]);
      setSaveState("saved", "Submitted");
      root.dataset.editable = "0";
      const returned = $("ws-returned");
      if (returned) returned.hidden = true;
      return;
    }
    if (res.status === 409 && res.data.current) return conflict(res.data);
    if (isAuthProblem(res)) return sessionExpired();
    showProblems(res.data.errors || { detail: res.data.detail || "the server could not be reached" });
  }
  const submitBtn = $("ws-submit");
  if (submitBtn) submitBtn.addEventListener("click", submit);
  // Skipping gives the trace back for good (it is not offered to this annotator again): asked first, in the page.
  async function skip() {
    await save();
    const res = await api("POST", `/api/annotations/${ANN_ID}/skip/`).catch(() => ({ status: 0, data: {} }));
    if (res.status === 200) {
      leaseEnded();
      window.location.href = `${root.dataset.queueUrl}?skipped=${encodeURIComponent(ANN_ID)}`;
      return;
    }
    if (isAuthProblem(res)) return sessionExpired();
    banner("error", "Not skipped: " + (res.data.detail || "the server could not be reached; try again."));
  }
  const skipBtn = $("ws-skip");
  if (skipBtn) skipBtn.addEventListener("click", () => {
    banner("conflict", "Skip this trace? It goes back to the pool and is not offered to you again; your draft is kept.", [
      ["Skip it", skip], ["Keep working", () => banner("", "")],
    ]);
    const confirmBtn = $("ws-banner").querySelector("button");
    if (confirmBtn) confirmBtn.focus();
  });

  // --- keyboard --------------------------------------------------------------------------------
  function toggleHelp(show) { $("ws-help").hidden = show === undefined ? !$("ws-help").hidden : !show; }
  $("ws-help-btn").addEventListener("click", () => toggleHelp());
  for (const b of document.querySelectorAll("[data-close]")) b.addEventListener("click", () => toggleHelp(false));
  $("ws-overlay-btn").addEventListener("click", () => { state.overlay = !state.overlay; renderStage(); });
  $("ws-compare-btn").addEventListener("click", () => { state.compare = !state.compare; renderStage(); });
  $("ws-zoom-in").addEventListener("click", () => zoomAt(0.5, 0.5, 1.5));
  $("ws-zoom-out").addEventListener("click", () => zoomAt(0.5, 0.5, 1 / 1.5));
  $("ws-zoom-level").addEventListener("click", zoomReset);
  $("ws-box-btn").addEventListener("click", () => { state.boxMode = !state.boxMode; $("ws-box-btn").setAttribute("aria-pressed", String(state.boxMode)); });

  // --- the keyboard path through a correction ---------------------------------------------------
  // e focuses the form; digits pick an option in a focused select; an action type that needs a point starts the
  // keyboard cursor (arrows nudge it, Shift for bigger steps, Enter places, Esc leaves); f focuses the thought of the
  // screen's slot; p starts the cursor again to move a point.
  function focusField(node) {
    if (!node) return;
    node.scrollIntoView({ block: "center" });
    node.focus({ preventScroll: true });
  }
  function startCursor(slot) {
    const action = state.form.editor_state[slot];
    const shot = shotOf(state.current);
    if (!action || !shot || !pointArgsOf(action.type).length || slotAt(state.current) !== slot) return false;
    const placed = pointArgsOf(action.type).map((a) => action.args[a.name]).find((v) => Array.isArray(v));
    state.cursor = { slot, px: placed ? toPx(shot, placed) : [shot.width / 2, shot.height / 2] };
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    keepCursorInView();
    renderStage();
    showCursorLoupe();
    return true;
  }
  function moveCursor(dx, dy, big) {
    const shot = shotOf(state.current);
    const step = big ? 0.05 : 0.01;
    const [x, y] = state.cursor.px;
    // Steps are fractions of what is in view, so a zoomed-in annotator nudges finely.
    const visible = 1 / state.zoom.scale;
    state.cursor.px = [Math.min(shot.width - 1, Math.max(0, x + dx * step * visible * shot.width)),
      Math.min(shot.height - 1, Math.max(0, y + dy * step * visible * shot.height))];
    keepCursorInView();
    renderStage();
    showCursorLoupe();
  }
  // b: a box from the keyboard. Its first corner is the keyboard point (started where the point is, or in the middle);
  // arrows move the other corner, Enter draws it.
  function startBox(slot) {
    const action = state.form.editor_state[slot];
    if (!action || !takesBox(action)) return;
    if (!state.cursor && !startCursor(slot)) return;
    state.cursor.anchor = [...state.cursor.px];
    renderStage();
  }
  function placeCursor() {
    if (state.cursor.anchor) {
      const { slot, anchor, px } = state.cursor;
      state.cursor = null;
      setBox(slot, shotOf(state.current), anchor, px);
      return;
    }
    const { slot, px } = state.cursor;
    placePoint(slot, toModel(shotOf(state.current), px));
    const action = state.form.editor_state[slot];
    const required = pointArgsOf(action.type).filter((a) => a.required);
    const done = required.every((a) => Array.isArray(action.args[a.name]));
    if (done) { state.cursor = null; renderStage(); }  // a drag wants its end point next: the cursor stays
  }
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target.tagName !== "SELECT" || event.altKey || !/^[1-9]$/.test(event.key) || !target.closest(".ws-side")) return;
    const option = [...target.options].filter((o) => o.value)[Number(event.key) - 1];
    if (!option) return;
    event.preventDefault();
    target.value = option.value;
    target.dispatchEvent(new Event("change", { bubbles: true }));
    const slot = target.dataset.slotType;
    if (slot && startCursor(slot)) return;
    if (slot) focusField(document.querySelector(`.ws-action-editor[data-slot="${slot}"] [data-arg]`));
    if (target.id === "f-error_category") focusField($("f-corrected_thought"));
  }, true);

  document.addEventListener("keydown", (event) => {
    if (!state.cursor) return;
    const moves = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    const act = moves[event.key] ? () => moveCursor(...moves[event.key], event.shiftKey)
      : event.key === "Enter" ? placeCursor
        : event.key === "b" && !state.cursor.anchor ? () => startBox(state.cursor.slot)
        : event.key === "Escape" ? () => { state.cursor = null; renderStage(); } : null;
    if (act) { event.preventDefault(); event.stopPropagation(); act(); }  // arrows move the cursor, not the step
  }, true);

  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName);
    const mod = event.ctrlKey || event.metaKey;
    if (mod && (event.key === "s" || event.key === "S")) { event.preventDefault(); save(); return; }
    if (mod && event.key === "Enter") { event.preventDefault(); submit(); return; }
    if (event.key === "Escape") { if (typing) event.target.blur(); toggleHelp(false); return; }
    // Alt+digit (by the key's place, so a layout that types a symbol with Alt still works): take alternative N.
    const altDigit = /^Digit([1-9])$/.exec(event.code || "");
    if (event.altKey && !mod && altDigit) { event.preventDefault(); takeAlternative(Number(altDigit[1])); return; }
    if (typing || mod || event.altKey) return;
    const keys = {
      ArrowLeft: () => goTo(state.current - 1), k: () => goTo(state.current - 1),
      ArrowRight: () => goTo(state.current + 1), j: () => goTo(state.current + 1),
      Home: () => goTo(1), End: () => goTo(LAST_VIEW),
      t: () => { if (state.form.tau) goTo(state.form.tau); },
      e: () => { setVerdict("error"); if (state.form.verdict === "error") focusField($("f-error_category")); },
      n: () => setVerdict("no_error"), u: () => setVerdict("unusable"),
      f: () => {
        const slot = slotAt(state.current);
        focusField(slot === "reflection" ? $("f-reflection_thought") : slot === "corrected" ? $("f-corrected_thought") : null);
      },
      p: () => { const slot = slotAt(state.current); if (slot) startCursor(slot); },
      b: () => { const slot = slotAt(state.current); if (slot) startBox(slot); },
      // The first starting point offered (the source's human-edited reply, else the model's reply, else the
      // recorded action) is copied into the correction.
      s: () => { const first = document.querySelector('[data-starts="corrected"] .ws-start'); if (first) first.click(); },
      w: () => { if (alts.hot) markAlternative(alts.hot, "wrong"); },
      o: () => { state.overlay = !state.overlay; renderStage(); },
      c: () => { state.compare = !state.compare; renderStage(); },
      "+": () => zoomAt(0.5, 0.5, 1.5), "=": () => zoomAt(0.5, 0.5, 1.5), "-": () => zoomAt(0.5, 0.5, 1 / 1.5),
      "0": zoomReset,
      "?": () => toggleHelp(),
    };
    if (keys[event.key]) { event.preventDefault(); keys[event.key](); }
  });

  // --- render ----------------------------------------------------------------------------------
  function renderStep() { renderStrip(); renderStage(); renderStepInfo(); renderPanels(); announceStep(); }

  // Pre-scoring (static/js/prescore.js) listens for this to draw its strip, badges and ghost action.
  function announceStep() {
    const layer = document.querySelector("#ws-stage .ws-overlay");
    const shot = shotOf(state.current);
    document.dispatchEvent(new CustomEvent("workspace:step", { detail: {
      traceId: DATA.trace.id, index: state.current, stepCount: N, svg: layer,
      width: shot ? shot.width : null, height: shot ? shot.height : null,
    } }));
  }
  document.addEventListener("workspace:goto", (event) => goTo(event.detail.index));
  document.addEventListener("prescore:starts", (event) => {
    if (String(event.detail.traceId) !== String(DATA.trace.id)) return;
    state.modelStarts = event.detail.starts || {};
    renderStarts();
  });
  function renderAll() { renderStep(); }

  const categories = $("f-error_category");
  for (const c of DATA.project.error_categories) categories.appendChild(el("option", { value: c }, c));
  const restored = restoreLocalCopy();
  state.current = state.form.verdict === "error" && state.form.tau ? state.form.tau : 1;
  renderAll();
  prefetch(state.current);
  fetch(root.dataset.tableUrl, { credentials: "same-origin" }).then((r) => r.json()).then((table) => {
    state.table = table;
    renderAll();
    if (state.form.verdict === "error" && state.form.tau) { checkAction("corrected"); checkAction("reflection"); }
    root.dataset.ready = "1";
  });
  loadAlternatives();
  if (restored) { setSaveState("dirty", "Restored unsaved edits"); save(); }
  if (!EDITABLE) setSaveState("saved", ann.status === "draft" ? "Read only" : `${ann.status[0].toUpperCase()}${ann.status.slice(1)} — read only`);
})();
