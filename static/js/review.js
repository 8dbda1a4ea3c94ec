// Review pages: draws the original / corrected / post-reflection actions over the screenshots, and keeps
// the review queue current from live events. Data comes from json_script blocks and the API; text via textContent.
// An ES module sharing the workspace's: zoom.js (the viewer), action_editor.js (edit, then accept), api.js (CSRF and
// answers) and geometry.js (markers come in the one coordinate form: points in the project's convention with their
// screenshot's extent, annotation/review_selectors.py _marker).
import { readJSON as readData } from "./dom.js";
import { api } from "./api.js";
import { fractionToModel } from "./geometry.js";
import * as Zoom from "./zoom.js";
import * as Editor from "./action_editor.js";
import * as History from "./workspace/history.js";
import { windowsToLoad } from "./workspace/steps.js";
import { layoutKeys, shortcutMode, showKeyHints } from "./keys.js";
import {
  actionOnTau, boxSize, clampPosition, clickFraction, editedMarkers, editorsShown, marginClearing, missingTitle,
  percentOn, queueRowTexts, reviewCommandFor, screenLoaded, screenName, screenTitle, tauScreens, thumbNumber,
  viewerLayout, windowProblem,
} from "./review_logic.js";
import { gettext, interpolate } from "./i18n.js";

{
  // --- markers over o_τ and o_{τ+1} ---
  const readJSON = (id) => readData(id, []);

  // A point in the convention, placed on its screenshot (a marker's extent) in percent of the image.
  function place(el, marker, p) {
    [el.style.left, el.style.top] = percentOn(marker, p);
  }

  // Marks go into the frame's zoom layer (they move with the image). An action without a point (a hotkey, a wait)
  // draws nothing: its text is beside the screenshot already (the legend, the viewer's caption, the editor), and
  // the legend says it has no point on the screen.
  function drawMarkers(frame, markers) {
    const layer = frame.querySelector(".zoom-layer");
    layer.querySelectorAll(".marker, .marker-box").forEach((m) => m.remove());
    for (const m of markers) {
      if (!m.start) continue;
      if (m.box) {
        // The element box drawn for the action, under its point.
        const box = document.createElement("div");
        box.className = "marker-box " + m.kind;
        box.dataset.kind = m.kind;
        box.title = interpolate(gettext("%(label)s: element box"), { label: m.label });
        place(box, m, m.box.slice(0, 2));
        [box.style.width, box.style.height] = boxSize(m);
        layer.append(box);
      }
      const dot = document.createElement("div");
      dot.className = "marker " + m.kind;
      dot.title = m.label + ": " + m.text;
      dot.dataset.kind = m.kind;
      place(dot, m, m.start);
      const label = document.createElement("span");
      label.className = "marker-label";
      label.textContent = m.label + " · " + m.type;
      dot.append(label);
      layer.append(dot);
      if (m.end) {
        const end = document.createElement("div");
        end.className = "marker end " + m.kind;
        end.title = interpolate(gettext("%(label)s (end)"), { label: m.label });
        place(end, m, m.end);
        layer.append(end);
      }
    }
    separateLabels(frame);
  }

  // Labels never overlap: a label that meets one above it moves down, below the other (close original and
  // corrected points get stacked labels). Measured on screen, so it is redone when the zoom settles.
  function separateLabels(frame) {
    const labels = [...frame.querySelectorAll(".marker-label")];
    labels.forEach((l) => { l.style.marginTop = "0px"; });
    const placed = [];
    for (const label of labels.sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)) {
      for (let tries = 0; tries < labels.length; tries++) {
        const margin = marginClearing(parseFloat(label.style.marginTop), label.getBoundingClientRect(), placed);
        if (margin === null) break;
        label.style.marginTop = margin + "px";
      }
      placed.push(label.getBoundingClientRect());
    }
  }

  // --- zoom: one view for every screenshot on the page (o_τ and o_τ+1 stay aligned) ---
  // The rule is static/js/zoom.js's, as in the workspace: a wheel notch at most a quarter, "100 %" the screenshot's
  // own pixels (the level button), "Fit" apart. The level is read on the frame last zoomed (the first at the start).
  const frames = [...document.querySelectorAll(".shot-frame")];
  let view = { ...Zoom.FIT };
  let settle = null;
  let measured = frames[0] || null;
  const levelButton = document.getElementById("review-zoom-level");
  const fitButton = document.getElementById("review-zoom-fit");
  // The measured frame's width on the screen and its screenshot's own width; null until its image has loaded.
  function shownFrame() {
    const frame = [measured, ...frames].find((f) => f && f.clientWidth && !f.hidden && f.querySelector("img").naturalWidth);
    return frame ? { width: frame.clientWidth, imageWidth: frame.querySelector("img").naturalWidth } : null;
  }
  function showLevel() {
    if (!levelButton) return;
    const shown = shownFrame();
    levelButton.textContent = shown ? Zoom.levelText(view, shown.width, shown.imageWidth) : gettext("Fit");
    fitButton.setAttribute("aria-pressed", String(view.scale === 1));
  }
  function setView(next) {
    view = next;
    for (const frame of frames) {
      const layer = frame.querySelector(".zoom-layer");
      layer.style.transform = Zoom.transform(view);
      layer.style.setProperty("--zoom", String(view.scale));  // marks keep their size on screen
      frame.classList.toggle("zoomed", view.scale > 1);
    }
    showLevel();
    clearTimeout(settle);
    settle = setTimeout(() => frames.forEach(separateLabels), 120);
  }
  for (const frame of frames) {
    Zoom.attach(frame, { get: () => view, set: (next) => { measured = frame; setView(next); } });
    frame.querySelector("img").addEventListener("load", showLevel);
  }
  const zoomBy = (factor) => setView(Zoom.zoomAt(view, 0.5, 0.5, factor));
  const actualSize = () => {
    const shown = shownFrame();
    if (shown) setView(Zoom.actualSize(view, shown.width, shown.imageWidth));
  };
  const bind = (id, handler) => { const b = document.getElementById(id); if (b) b.addEventListener("click", handler); };
  bind("review-zoom-in", () => zoomBy(Zoom.BUTTON_STEP));
  bind("review-zoom-out", () => zoomBy(1 / Zoom.BUTTON_STEP));
  bind("review-zoom-level", actualSize);
  bind("review-zoom-fit", () => setView({ ...Zoom.FIT }));
  window.addEventListener("resize", showLevel);
  showLevel();
  window.reviewZoom = () => ({ ...view });  // for tests

  document.querySelectorAll(".shot-frame[data-markers]").forEach((frame) => drawMarkers(frame, readJSON(frame.dataset.markers)));

  // --- the whole trace: filmstrip and viewer (every verdict; the only screens of a "no error" answer) ---
  // The page carries the screens around τ (annotation.review.selectors.review_viewer: a short trace's whole); the
  // others come from GET /api/reviews/<id>/steps/ a window at a time, half a window kept loaded on either side of the
  // screen shown (the workspace's rule, workspace/steps.js windowsToLoad), and are kept for the page's life.
  const viewer = readData("trace-viewer-data", null);
  const { stepCount, total, start } = viewerLayout(viewer);
  const screens = new Array(total);  // position (step index - 1; the final screen last) → its screen, once here
  if (viewer) for (const screen of viewer.screens) screens[screen.index - 1] = screen;
  const strip = document.getElementById("viewer-strip");
  const viewerFrame = document.getElementById("viewer-frame");
  const pending = new Map();  // window start → its request
  let shown = 0;
  // The final screen comes with the last step's window.
  const hasScreen = (index) => screenLoaded(screens, index, stepCount, viewer.has_final);
  function fetchWindow([first, last]) {
    if (pending.has(first)) return pending.get(first);
    const request = api("GET", `${viewer.steps_url}?first=${first}&last=${last}`).then((res) => {
      pending.delete(first);
      const problem = windowProblem(res);
      if (problem) return problem;
      for (const screen of res.data.screens) { screens[screen.index - 1] = screen; addThumb(screen.index - 1); }
      keepCurrentInView();
      return "";
    });
    pending.set(first, request);
    return request;
  }
  // Loads what is missing around ``position``; resolves to "" once its screen is here, else why it is not.
  function loadAround(position) {
    const index = Math.min(position + 1, stepCount);
    const requests = windowsToLoad(hasScreen, index, stepCount, viewer.window).map(fetchWindow);
    if (screens[position]) return Promise.resolve("");
    return requests[0] || Promise.resolve("not found");
  }
  function markCurrent() {
    if (!strip) return;
    const previous = strip.querySelector("button[aria-current]");
    if (previous) { previous.classList.remove("current"); previous.removeAttribute("aria-current"); }
    const b = strip.children[shown];
    if (!b) return;
    b.classList.add("current");
    b.setAttribute("aria-current", "step");
    keepCurrentInView();
  }
  // The strip scrolls to the current screen; the page itself never jumps. Redone as thumbnails arrive (a button
  // widens when its thumbnail is added).
  function keepCurrentInView() {
    const b = strip && strip.children[shown];
    if (b && (b.offsetLeft < strip.scrollLeft || b.offsetLeft + b.offsetWidth > strip.scrollLeft + strip.clientWidth)) {
      strip.scrollLeft = b.offsetLeft - strip.clientWidth / 2;
    }
  }
  function render(position, problem) {
    const screen = screens[position];
    const image = document.getElementById("viewer-image");
    const title = document.getElementById("viewer-title");
    if (!screen) {
      viewerFrame.hidden = true;
      title.textContent = missingTitle(position, stepCount, problem);
      document.getElementById("viewer-thought").textContent = "";
      document.getElementById("viewer-action").textContent = "";
      drawMarkers(viewerFrame, []);
      return;
    }
    if (screen.image) {
      image.src = screen.image;
      image.alt = interpolate(gettext("Screenshot of %(screen)s"), { screen: screen.title });
      viewerFrame.hidden = false;
    } else viewerFrame.hidden = true;
    title.textContent = screenTitle(screen);
    document.getElementById("viewer-thought").textContent = screen.thought;
    document.getElementById("viewer-action").textContent = screen.action;
    drawMarkers(viewerFrame, screen.markers);
  }
  // Shows the screen at ``position`` (its step's index - 1), reading its window first when the page lacks it.
  function showScreen(position) {
    if (!total) return Promise.resolve();
    shown = clampPosition(position, total);
    const wanted = shown;
    markCurrent();
    render(wanted, "");
    return loadAround(wanted).then((problem) => { if (shown === wanted) render(wanted, problem); });
  }
  // A screen's thumbnail once its data is here (the strip has a numbered button for every screen from the start).
  function addThumb(position) {
    const b = strip && strip.children[position], screen = screens[position];
    if (!b || !screen || !screen.thumb || b.querySelector("img")) return;
    const im = document.createElement("img");
    im.src = screen.thumb; im.alt = ""; im.loading = "lazy"; im.height = 54;
    im.addEventListener("load", keepCurrentInView);
    b.prepend(im);
  }
  if (strip && total) {
    const buttons = [];
    for (let i = 0; i < total; i++) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "viewer-thumb" + (viewer.tau && i + 1 === viewer.tau ? " tau" : "");
      b.title = screenName(i, stepCount);
      const n = document.createElement("span");
      n.className = "viewer-num";
      n.textContent = thumbNumber(i, stepCount);
      b.append(n);
      b.addEventListener("click", () => showScreen(i));
      buttons.push(b);
    }
    strip.append(...buttons);
    screens.forEach((_, i) => addThumb(i));
    showScreen(start);
  }
  window.reviewShowScreen = (position) => showScreen(position);  // for tests

  // --- edit, then accept: the correction's fields are for an error verdict only (the server drops them otherwise) ---
  const verdictSelect = document.getElementById("edit-verdict"), errorFields = document.getElementById("edit-error-fields");
  // The action editors sit beside the screenshots they are placed on (o_τ, o_τ+1), shown while the edit form is
  // open for an error verdict.
  const editDetails = document.getElementById("edit-accept");
  const showBeside = () => {
    const on = editorsShown(editDetails && editDetails.open, verdictSelect ? verdictSelect.value : null, errorFields ? errorFields.dataset.forVerdict : null);
    for (const node of document.querySelectorAll("[data-edit-beside]")) node.hidden = !on;
  };
  if (editDetails) editDetails.addEventListener("toggle", showBeside);
  if (verdictSelect && errorFields) {
    verdictSelect.addEventListener("change", () => { errorFields.hidden = verdictSelect.value !== errorFields.dataset.forVerdict; showBeside(); });
  }
  showBeside();
  // --- edit, then accept: the workspace's structured editor (static/js/action_editor.js), checked by the server ---
  const editData = readJSON("review-edit-data");
  if (editData && editData.check_url) {
    const tauInput = document.getElementById("edit-tau");
    const formTau = () => (tauInput && tauInput.value ? Number(tauInput.value) : null);
    const slots = {};
    for (const slot of ["corrected", "reflection"]) {
      slots[slot] = {
        host: document.querySelector(`[data-review-slot="${slot}"]`),
        field: document.getElementById(`edit-${slot}_action`),
        action: editData.slots[slot].action ? JSON.parse(JSON.stringify(editData.slots[slot].action)) : null,
        canonical: editData.slots[slot].canonical,
        check: null, placed: 0, seq: 0, timer: null,
        // Whether the lead gave this action (placed, typed, a type or box changed; or in the refused edit shown
        // again): only then the form sends it. Untouched, the server keeps the annotator's, and on a moved τ asks
        // for a new point; an action sent with a moved τ is the lead's new one (annotation/review/services.py).
        given: !!editData.slots[slot].given,
      };
    }
    const servedActions = Object.fromEntries(Object.keys(slots).map((slot) => [slot, JSON.stringify(slots[slot].action)]));
    const give = (slot, given) => {
      slots[slot].given = given;
      if (slots[slot].field) slots[slot].field.disabled = !given;
    };
    for (const slot of Object.keys(slots)) give(slot, slots[slot].given);
    // The τ whose screens are at the top of the page (o_τ, o_τ+1): the annotator's, until the lead types another.
    let shownTau = editData.tau;
    const shownScreens = { ...editData.screens };
    const servedDiff = {};  // the thoughts' served diff, kept while another τ's screens are shown
    let table = null;
    const drawEditor = (slot) => {
      const s = slots[slot];
      if (!s.host) return;
      Editor.render(s.host, {
        table, platform: editData.platform, slot, action: s.action, editable: true, check: s.check,
        fallbackCanonical: s.canonical,
        pointHint: gettext("click the screenshot above"),
        onType: (type) => { s.action = type ? { type, args: {}, style: (s.action && s.action.style) || "box" } : null; s.placed = 0; give(slot, true); changed(slot); },
        onArg: (name, value, quiet) => {
          if (!s.action) return;
          if (value === undefined) delete s.action.args[name]; else s.action.args[name] = value;
          give(slot, true);
          changed(slot, quiet);
        },
        onClearPoint: (name) => { delete s.action.args[name]; give(slot, true); changed(slot); },
        // The stored element box can be taken off (then the form sends an empty <slot>_box edit).
        onClearBox: () => {
          give(slot, true);
          delete s.action.target_box;
          const input = document.getElementById(`edit-${slot}_box`);
          if (input) { input.value = ""; input.disabled = false; }
          changed(slot);
        },
      });
    };
    // Every edit is checked by the server's grammar; the form sends the canonical text it returns, valid or not
    // (a refused answer comes back with the problem beside what was typed).
    const changed = (slot, quiet) => {
      const s = slots[slot];
      recordEdit(quiet ? `arg:${slot}` : null);
      if (!quiet) { drawEditor(slot); drawEdited(slot); }
      clearTimeout(s.timer);
      s.timer = setTimeout(async () => {
        const seq = ++s.seq;
        const res = await api("POST", editData.check_url, { slot, action: s.action, tau: formTau() });
        if (res.status !== 200 || seq !== s.seq) return;
        s.check = res.data;
        s.field.value = s.check.canonical || "";
        drawEditor(slot);
        if (s.given) {
          // The mark and the legend under the screen name the action the lead gave, not the annotator's any more.
          drawEdited(slot);
          const legend = document.querySelector(`[data-legend="${slot}"]`);
          if (legend) legend.textContent = s.field.value || "—";
        }
      }, 120);
    };
    // The action being edited is drawn where the annotator's was (its point, end and element box, in the project's
    // convention like the server's markers), so a placed point shows on its pixel at every zoom.
    const frameOf = { corrected: "error-markers", reflection: "reflection-markers" };
    // On another τ than the annotator's, the marks are the new o_τ's recorded action and what the lead gave there.
    function drawEdited(slot) {
      const frame = document.querySelector(`.shot-frame[data-markers='${frameOf[slot]}']`);
      const screen = shownScreens[slot], s = slots[slot];
      if (!frame || !screen) return;
      let own = null, others = [];
      if (shownTau === editData.tau) {
        const marks = readJSON(frameOf[slot]);
        if (!s.given) { drawMarkers(frame, marks); return; }  // the annotator's marks, as served
        own = marks.find((m) => m.kind === slot);
        others = marks.filter((m) => m !== own);
      } else if (slot === "corrected") {
        const recorded = screens[tauScreens(shownTau, total).corrected];
        others = ((recorded && recorded.markers) || []).map((m) => ({ ...m, label: gettext("original") }));
      }
      const action = actionOnTau(shownTau, editData.tau, s.given) ? s.action : null;
      drawMarkers(frame, [...others, ...editedMarkers(slot, own, action, s.field.value, screen.extent)]);
    }
    // The screens at the top follow the τ typed: o_τ and o_τ+1 of the new τ (read as the viewer reads its screens),
    // their titles and the recorded action under o_τ; the lead's points are placed on them.
    async function followTau() {
      const tau = formTau();
      if (!tau || tau === shownTau || !total) return;
      const positions = tauScreens(tau, total);
      await Promise.all(Object.values(positions).filter((p) => p !== null).map(loadAround));
      if (formTau() !== tau) return;  // typed on meanwhile
      shownTau = tau;
      for (const slot of Object.keys(slots)) {
        const frame = document.querySelector(`.shot-frame[data-markers='${frameOf[slot]}']`);
        const position = positions[slot], screen = position === null ? null : screens[position];
        const name = document.querySelector(`[data-tau-screen="${slot}"]`);
        if (name) name.textContent = position === null ? gettext("none") : screenName(position, stepCount);
        shownScreens[slot] = screen && screen.image ? screen.size : null;
        if (frame) {
          frame.hidden = !shownScreens[slot];
          if (shownScreens[slot]) {
            const img = frame.querySelector("img");
            img.src = screen.image;
            [img.width, img.height] = [screen.size.width, screen.size.height];
            img.alt = `Screenshot of ${screenName(position, stepCount)}`;
          }
        }
        slots[slot].placed = 0;
        drawEdited(slot);
      }
      const original = document.querySelector('[data-legend="original"]');
      const recorded = screens[positions.corrected];
      if (original && recorded) original.textContent = recorded.action || "—";
      // The thoughts: the served word diff is of the annotator's τ; on another τ both sides are shown plain, the
      // recorded one the new step's.
      for (const [id, text] of [["diff-before", recorded ? recorded.thought : ""], ["diff-after", null]]) {
        const node = document.getElementById(id);
        if (!node) continue;
        if (!servedDiff[id]) servedDiff[id] = [...node.childNodes];
        if (tau === editData.tau) node.replaceChildren(...servedDiff[id]);
        else node.replaceChildren(text === null ? servedDiff[id].map((n) => n.textContent).join("") : text);
      }
      document.getElementById("edit-accept").dataset.tauShown = String(tau);
    }
    // Points are placed on the screens shown above: o_τ for the correction, o_τ+1 for the post-reflection.
    const placeOn = (frame, slot) => {
      if (!frame) return;
      frame.addEventListener("click", (event) => {
        const s = slots[slot], screen = shownScreens[slot];
        const details = document.getElementById("edit-accept");
        if (!details || !details.open || !s.action || !screen || formTau() !== shownTau) return;
        const box = frame.querySelector(".zoom-layer").getBoundingClientRect();
        const point = fractionToModel(screen, clickFraction(box, event.clientX, event.clientY));
        s.placed = Editor.place(table, s.action, s.placed, point);
        give(slot, true);
        changed(slot);
      });
    };
    // --- undo and redo of the edit form (static/js/workspace/history.js): every field and both actions ---
    const details = document.getElementById("edit-accept");
    const named = () => [...details.querySelectorAll("select[name], textarea[name], input[name]:not([type=hidden])")];
    const boxInputs = () => Object.keys(slots).map((slot) => document.getElementById(`edit-${slot}_box`)).filter(Boolean);
    const snapshot = () => ({
      fields: Object.fromEntries(named().map((node) => [node.name, node.value])),
      actions: Object.fromEntries(Object.entries(slots).map(([slot, s]) => [slot, s.action])),
      boxes: Object.fromEntries(boxInputs().map((node) => [node.id, [node.value, node.disabled]])),
    });
    let history = History.createHistory();
    let baseline = JSON.parse(JSON.stringify(snapshot()));
    let restoring = false;
    const undoButton = document.getElementById("edit-undo"), redoButton = document.getElementById("edit-redo");
    const renderHistory = () => {
      if (undoButton) { undoButton.disabled = !History.canUndo(history); redoButton.disabled = !History.canRedo(history); }
    };
    function recordEdit(group) {
      if (restoring) return;
      const now = snapshot();
      history = History.record(history, baseline, now, { group, at: Date.now() });
      baseline = JSON.parse(JSON.stringify(now));
      renderHistory();
    }
    function stepHistory(direction) {
      const result = direction === "undo" ? History.undo(history, snapshot()) : History.redo(history, snapshot());
      if (!result) return;
      history = result.history;
      const form = result.form;
      restoring = true;
      for (const node of named()) if (node.name in form.fields) node.value = form.fields[node.name];
      for (const node of boxInputs()) if (form.boxes[node.id]) [node.value, node.disabled] = form.boxes[node.id];
      for (const slot of Object.keys(slots)) {
        slots[slot].action = form.actions[slot]; slots[slot].placed = 0;
        // Back to the annotator's action: nothing of the lead's is sent for it.
        give(slot, editData.slots[slot].given || JSON.stringify(form.actions[slot]) !== servedActions[slot]);
        changed(slot);
      }
      followTau();
      if (verdictSelect && errorFields) { errorFields.hidden = verdictSelect.value !== errorFields.dataset.forVerdict; showBeside(); }
      restoring = false;
      baseline = JSON.parse(JSON.stringify(snapshot()));
      renderHistory();
    }
    details.addEventListener("input", (event) => { if (event.target.name) recordEdit(`field:${event.target.name}`); });
    details.addEventListener("change", (event) => { if (event.target.name && event.target.tagName === "SELECT") recordEdit(null); });
    if (undoButton) {
      undoButton.addEventListener("click", () => stepHistory("undo"));
      redoButton.addEventListener("click", () => stepHistory("redo"));
    }
    // Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y while the form is open; inside a text field the browser's own text undo runs.
    document.addEventListener("keydown", (event) => {
      if (!details.open) return;
      const typing = event.target.matches && event.target.matches("textarea, input:not([type=checkbox]):not([type=radio])");
      const command = History.historyCommandFor(event, typing);
      if (!command) return;
      event.preventDefault();
      stepHistory(command);
    });
    window.reviewHistory = () => ({ past: history.past.length, future: history.future.length });  // for tests

    placeOn(document.querySelector(".shot-frame[data-markers='error-markers']"), "corrected");
    placeOn(document.querySelector(".shot-frame[data-markers='reflection-markers']"), "reflection");
    fetch(editData.table_url, { credentials: "same-origin" }).then((r) => r.json()).then((served) => {
      table = served;
      for (const slot of Object.keys(slots)) { drawEditor(slot); if (slots[slot].action) changed(slot, true); }
      document.getElementById("edit-accept").dataset.ready = "1";
      followTau();  // a refused edit shown again keeps the τ the lead typed
    });
    if (tauInput) {
      tauInput.addEventListener("change", () => { for (const slot of Object.keys(slots)) changed(slot, true); });
      tauInput.addEventListener("input", () => followTau());
    }
  }

  // --- keys on one review: a accept, r reject (focus the comment; Ctrl+Enter sends), → next undecided ---
  const acceptButton = document.getElementById("accept-button");
  const rejectButton = document.getElementById("reject-button");
  const comment = document.getElementById("review-comment");
  const nextLink = document.getElementById("next-review");
  // The key hints follow the person's choice (on, with Alt, off) and keyboard layout (static/js/keys.js).
  const keyMode = shortcutMode();
  layoutKeys((printed) => showKeyHints(document, keyMode, printed));
  // Each command: [whether its control is on this page, what it does]. A key whose control is not here is left alone.
  const reviewCommands = {
    reject_send: [() => !!rejectButton, () => rejectButton.click()],
    zoom_in: [() => frames.length > 0, () => zoomBy(Zoom.BUTTON_STEP)],
    zoom_out: [() => frames.length > 0, () => zoomBy(1 / Zoom.BUTTON_STEP)],
    zoom_reset: [() => frames.length > 0, () => setView({ ...Zoom.FIT })],
    screen_next: [() => !!total, () => showScreen(shown + 1)],
    screen_previous: [() => !!total, () => showScreen(shown - 1)],
    accept: [() => !!acceptButton, () => acceptButton.click()],
    reject: [() => !!(comment && rejectButton), () => comment.focus()],
    next: [() => !!nextLink, () => nextLink.click()],
  };
  document.addEventListener("keydown", (event) => {
    const typing = !!(event.target.closest && event.target.closest("input, textarea, select, [contenteditable]"));
    const command = reviewCommandFor(event, { typing, inComment: !!comment && event.target === comment, mode: keyMode });
    if (!command) return;
    const [available, run] = reviewCommands[command];
    if (!available()) return;
    event.preventDefault();
    run();
  });

  // --- the queue: rebuild a project's rows when an annotation of it changes ---
  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  }

  async function refreshSection(section) {
    const projectId = section.dataset.projectId;
    const response = await fetch("/api/reviews/?status=submitted&project=" + encodeURIComponent(projectId), { credentials: "same-origin" });
    if (!response.ok) return;
    const rows = (await response.json()).results;
    const body = section.querySelector("[data-role=queue-body]");
    const trs = rows.map((a) => {
      const tr = document.createElement("tr");
      tr.dataset.annotationId = a.id;
      tr.dataset.traceId = a.trace_id;
      const presence = document.createElement("td");
      presence.className = "presence";
      presence.dataset.presenceTrace = a.trace_id;
      const action = document.createElement("td");
      const link = document.createElement("a");
      link.className = "button primary";
      link.href = a.review_url;
      link.textContent = gettext("Review");
      action.append(link);
      tr.append(...queueRowTexts(a).map(cell), presence, action);
      return tr;
    });
    if (!trs.length) {
      const tr = document.createElement("tr");
      tr.className = "empty-row";
      const td = cell(gettext("Nothing waiting for review."));
      td.colSpan = 6;
      td.className = "empty";
      tr.append(td);
      trs.push(tr);
    }
    body.replaceChildren(...trs);
    const count = section.querySelector("[data-role=count]");
    if (count) count.textContent = String(rows.length);
    if (window.studioLive) window.studioLive.send({ type: "presence.snapshot" });
  }

  document.addEventListener("studio:live", (e) => {
    const event = e.detail;
    if (event.type !== "annotation") return;
    document.querySelectorAll(".review-section").forEach((section) => refreshSection(section));
  });
}
