// @ts-check
/* Review pages: the original / corrected / post-reflection actions drawn over the screenshots, the whole trace's
   viewer, the lead's edit form, the keys of one review, and the review queue kept current from live events.
   The entry module (<script type="module">, no build step): it reads the page's data (json_script blocks) and wires
   the modules, built like the workspace's: each exports a function that takes what it uses (elements, the page's
   data, the other modules' functions it calls) and returns its own functions.
     review/markers.js       the marks over a screenshot and their labels kept apart
     review/zoom.js          one zoom for every screenshot on the page (static/js/zoom.js's rule)
     review/viewer.js        the filmstrip and the viewer of every screen, read a window at a time
     review/edit_form.js     edit, then accept: the verdict's fields and the two slots' editors, checked by the server
     review/edit_tau.js      the screens at the top follow the τ typed; the edited action's marks
     review/edit_history.js  undo and redo of the edit form (static/js/workspace/history.js)
     review/keys.js          the keys of one review
     review/queue.js         the queue's rows rebuilt on live events
   Their decisions are review_logic.js's (pure, node-tested). Markers come in the one coordinate form (geometry.js:
   points in the project's convention with their screenshot's extent, annotation/review_selectors.py _marker).
   Everything is rendered with textContent. */
import { readJSON } from "./dom.js";
import { drawMarkers, separateLabels } from "./review/markers.js";
import { createReviewZoom } from "./review/zoom.js";
import { createViewer } from "./review/viewer.js";
import { createEditSlots, createVerdictFields } from "./review/edit_form.js";
import { createTauScreens } from "./review/edit_tau.js";
import { createFormHistory } from "./review/edit_history.js";
import { installReviewKeys } from "./review/keys.js";
import { installQueueRefresh } from "./review/queue.js";

/** @param {string} id the server's markers in the page's data block ``id`` */
const readMarks = (id) => readJSON(id, []);
/** @param {string} id @param {() => void} handler */
const bind = (id, handler) => { const b = document.getElementById(id); if (b) b.addEventListener("click", handler); };

/** @type {HTMLElement[]} */
const frames = [...document.querySelectorAll(/** @type {"div"} */ (".shot-frame"))];
const zoom = createReviewZoom({
  frames, levelButton: document.getElementById("review-zoom-level"), fitButton: document.getElementById("review-zoom-fit"),
  relabel: separateLabels,
});
bind("review-zoom-in", zoom.zoomIn);
bind("review-zoom-out", zoom.zoomOut);
bind("review-zoom-level", zoom.actualSize);
bind("review-zoom-fit", zoom.fit);
window.reviewZoom = zoom.view;  // for tests
for (const frame of frames) if (frame.dataset.markers) drawMarkers(frame, readMarks(frame.dataset.markers));

const viewer = createViewer({
  data: readJSON("trace-viewer-data", null), strip: document.getElementById("viewer-strip"),
  frame: document.getElementById("viewer-frame"), drawMarkers,
});
window.reviewShowScreen = viewer.showScreen;  // for tests

const details = /** @type {HTMLDetailsElement | null} */ (document.getElementById("edit-accept"));
const verdictFields = createVerdictFields({
  details, verdictSelect: /** @type {HTMLSelectElement | null} */ (document.getElementById("edit-verdict")),
  errorFields: document.getElementById("edit-error-fields"),
});
const editData = readJSON("review-edit-data", null);
if (editData && editData.check_url) startEditForm(editData);
installReviewKeys({ zoom, viewer });
installQueueRefresh();

/**
 * The edit form's slots, the τ its screens follow, and its history; made together, they call each other through
 * the arrows below (read when called, after all three are made).
 * @param {import("./review/edit_form.js").EditData} editData
 */
function startEditForm(editData) {
  const tauInput = /** @type {HTMLInputElement | null} */ (document.getElementById("edit-tau"));
  const formTau = () => (tauInput && tauInput.value ? Number(tauInput.value) : null);
  /** @type {ReturnType<typeof createTauScreens>} */
  let tau;
  /** @type {ReturnType<typeof createFormHistory>} */
  let history;
  const slots = createEditSlots({ editData, formTau, hooks: {
    drawEdited: (slot) => tau.drawEdited(slot),
    recordEdit: (group) => history.recordEdit(group),
    placingScreen: (slot) => tau.placingScreen(slot),
  } });
  tau = createTauScreens({ editData, viewer, slots: slots.slots, formTau, drawMarkers, readMarks });
  history = createFormHistory({
    details, actions: slots.actions, boxInputs: slots.boxInputs,
    restore: (actions) => { slots.restore(actions); tau.followTau(); verdictFields.refresh(); },
  });
  slots.placeOn(document.querySelector(".shot-frame[data-markers='error-markers']"), "corrected");
  slots.placeOn(document.querySelector(".shot-frame[data-markers='reflection-markers']"), "reflection");
  fetch(editData.table_url, { credentials: "same-origin" }).then((r) => r.json()).then((served) => {
    slots.tableLoaded(served);
    details.dataset.ready = "1";
    tau.followTau();  // a refused edit shown again keeps the τ the lead typed
  });
  if (tauInput) {
    tauInput.addEventListener("change", () => { for (const slot of slots.names) slots.changed(slot, true); });
    tauInput.addEventListener("input", () => tau.followTau());
  }
}
