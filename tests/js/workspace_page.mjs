// The workspace's page as frontend_templates/annotation/workspace.html lays it out, on the stand-in document, with the
// page's data (ws-data, annotation.selectors.workspace_payload's shape) and the browser's parts the workspace uses that
// the stand-in document lacks (local storage, intervals, observers, images, the location, beacons) recorded: for the
// tests of the entry module static/js/workspace.js, which starts on the page as it loads.
import { standInDocument } from "./stand_in_dom.mjs";

export const shot = (index) => ({ url: `/shots/${index}.png`, thumb: `/thumbs/${index}.png`, width: 1000, height: 500, extent: [1000, 1000] });
export const click = (x, y) => ({ type: "click", args: { start_box: [x, y] }, style: "box" });
/** Step ``index`` as the server gives it (annotation.selectors.workspace_steps). */
export const step = (index) => ({ index, shot: shot(index), thought: `thought ${index}`, action_text: `click(start_box='(${index},${index})')`,
  actions: [click(100 * index, 100)], elements: [] });

/**
 * The page of annotation 7 (trace 11: six steps and a final screen; the page carries steps 1 to 4) answered with
 * ``annotation`` (its fields over a draft with a first error at τ 3), ``lease`` (served, or null), ``stored``
 * (the local copy this browser kept, or none); without ``instruction`` the trace awaits one (the template's note, no
 * button to show all of it). Returns the document, what the page recorded and its parts.
 */
export function workspacePage({ annotation = {}, lease = { id: 12, expires_at: "2026-12-07T20:00:00+00:00", page: "p1" }, editable = true, stored = null, instruction = true } = {}) {
  const doc = standInDocument();
  const m = doc.make;
  const ann = {
    id: 7, trace_id: 11, status: "draft", status_display: "Draft", version: 5, verdict: "error", tau: 3, error_category: "wrong element",
    note: "", corrected_thought: "press Save", corrected_action: "click(start_box='(300,100)')", reflection_thought: "", reflection_action: "",
    no_reflection_reason: "", unusable_reason: "", editor_state: { corrected: click(300, 100), reflection: null }, editable, feedback_url: null,
    ...annotation,
  };
  const data = {
    annotation: ann, lease,
    trace: { id: 11, external_id: "t-11", instruction: "Save the file", outcome: "", step_count: 6, final_shot: shot(7) },
    project: { id: 3, name: "P", platform: "desktop", convention: "relative-1000", error_categories: ["wrong element", "wrong text"], lease_idle_minutes: 30 },
    strip: { without_shot: [], off_screen: [], gaps: {} },
    steps: [1, 2, 3, 4].map(step), steps_url: "/api/annotations/7/steps/", steps_window: 4,
    verdict_answers: { error: {}, no_error: { tau: null, error_category: "" }, unusable: { tau: null, error_category: "" } },
  };
  const id = (tag, name, fields = {}, ...children) => m(tag, { id: name, ...fields }, ...children);
  const root = id("div", "ws", { data: { annotation: "7", editable: editable ? "1" : "0", tableUrl: "/api/actions/table/", loginUrl: "/login/", queueUrl: "/queue/" } },
    m("header", {},
      ...(instruction ? [id("p", "ws-instruction", { scrollHeight: 20, clientHeight: 40 }, "Save the file"), id("button", "ws-instruction-more", { hidden: true })]
        : [id("p", "ws-instruction", { class: "ws-instruction-missing" }, "No instruction was recorded for this trace")]),
      id("span", "ws-status-pill"), id("span", "ws-save"), id("button", "ws-undo", { disabled: true }), id("button", "ws-redo", { disabled: true }),
      id("button", "ws-help-btn"), id("button", "ws-skip"), id("button", "ws-submit"), id("form", "ws-next", { hidden: editable }, m("button"))),
    id("div", "ws-banner", { hidden: true }), id("div", "ws-submit-errors", { hidden: true }),
    id("nav", "ws-strip"),
    m("section", {},
      id("span", "ws-step-label"), id("span", "ws-step-tags"),
      ...["ws-zoom-out", "ws-zoom-level", "ws-zoom-in", "ws-zoom-fit", "ws-box-btn", "ws-compare-btn", "ws-overlay-btn"].map((name) => id("button", name)),
      id("div", "ws-stage"), id("p", "ws-announce"), id("p", "ws-place-hint", { hidden: true })),
    m("aside", { class: "ws-side" },
      m("section", { class: "ws-panel" },
        id("span", "ws-step-num"), id("span", "ws-step-recorded"), id("button", "ws-thought-more", { hidden: true }),
        id("p", "ws-thought", { scrollHeight: 40, clientHeight: 40 }), id("code", "ws-action"), id("p", "ws-parse-error", { hidden: true }), id("p", "ws-off-screen", { hidden: true }),
        id("p", "ws-gap", { hidden: true }), id("div", "ws-human", { hidden: true }, id("code", "ws-human-text"))),
      id("section", "ws-verdict-panel", { class: "ws-panel" },
        m("div", { class: "ws-verdict" }, ...["error", "no_error", "unusable"].map((verdict) => m("button", { data: { verdict } }))),
        id("p", "ws-verdict-text"), id("p", "ws-undo-note", { hidden: true }),
        id("label", "ws-unusable-wrap", { hidden: true }, id("textarea", "f-unusable_reason", { data: { field: "unusable_reason" } })),
        id("div", "ws-error-fields", { hidden: true }, id("select", "f-error_category", { data: { field: "error_category" } }, m("option", { value: "" }, "— choose —"))),
        id("textarea", "f-note", { data: { field: "note" } })),
      id("section", "ws-correction", { hidden: true },
        m("span", { class: "ws-tau" }), m("div", { class: "ws-starts", data: { starts: "corrected" } }),
        id("textarea", "f-corrected_thought", { data: { field: "corrected_thought" } }),
        m("div", { class: "ws-action-editor", data: { slot: "corrected" } }),
        id("div", "ws-alts", { hidden: true }, id("div", "ws-alts-ask"), id("p", "ws-alts-status"), id("ol", "ws-alts-list"))),
      id("section", "ws-reflection", { hidden: true },
        id("p", "ws-reflection-missing", { hidden: true }),
        id("div", "ws-reflection-body", {}, id("textarea", "f-reflection_thought", { data: { field: "reflection_thought" } }),
          m("div", { class: "ws-action-editor", data: { slot: "reflection" } })),
        id("label", "ws-no-reflection-wrap", {}, id("textarea", "f-no_reflection_reason", { data: { field: "no_reflection_reason" } }))),
      id("section", "ws-goto", { hidden: true }, id("span", "ws-goto-text")),
      id("details", "versions", { class: "versions ws-panel", data: { versionsUrl: "/api/annotations/7/versions/", version: "5", mount: "workspace" } },
        m("p", { class: "versions-note", hidden: true }), m("ol", { class: "versions-list" }))),
  );
  const help = id("div", "ws-help", { class: "ws-modal", hidden: true }, m("div", { class: "ws-modal-card" },
    m("table", {}, m("tr", { data: { command: "next" } }, m("td", { class: "ws-keys-of" }))), m("button", { data: { close: "" } })));
  const login = id("div", "ws-login", { class: "ws-modal", hidden: true }, id("button", "ws-login-retry"));
  doc.body.append(m("script", { id: "ws-data" }, JSON.stringify(data)), root, help, login);

  const browser = { storage: new Map(), intervals: [], resize: [], images: [], beacons: [], reloads: 0 };
  if (stored) browser.storage.set("ws-draft-7", JSON.stringify(stored));
  globalThis.localStorage = {
    getItem: (key) => browser.storage.get(key) ?? null, setItem: (key, value) => browser.storage.set(key, value), removeItem: (key) => browser.storage.delete(key),
  };
  globalThis.setInterval = (fn, ms) => { browser.intervals.push({ fn, ms }); return browser.intervals.length; };
  globalThis.clearInterval = () => {};
  globalThis.ResizeObserver = class { constructor(fn) { this.fn = fn; browser.resize.push(this); } observe(node) { this.node = node; } };
  globalThis.IntersectionObserver = class { observe() {} unobserve() {} };
  globalThis.Image = class { set src(url) { browser.images.push(url); } };
  globalThis.navigator = { sendBeacon: (url, form) => browser.beacons.push([url, Object.fromEntries(form)]) };
  window.location = { href: "/annotations/7/", reload: () => { browser.reloads++; } };
  return { doc, root, data, browser, $: (name) => doc.getElementById(name) };
}
