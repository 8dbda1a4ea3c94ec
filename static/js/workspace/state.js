// @ts-check
/* The workspace's shared state: the few values more than one module reads (the screen shown, the answer's form, the
   draft's version and why saving is blocked, the keyboard cursor, the view's zoom and toggles, the action table),
   each under a declared name. Modules get it through the store's API: ``get`` and ``set`` (an undeclared name
   throws, so a typo or a module inventing its own shared field fails at once), ``update`` and ``subscribe`` (told
   after every ``set`` of that name that changed its value). State only one module reads stays inside that module.
   Pure (tests/js/state.test.mjs).

   The form and the keyboard cursor are objects edited in place by the modules that own them (the editors of the
   form, then ``edited()`` of autosave.js; the keyboard's cursor): ``set`` replaces them as a whole. */

/* The declared names and what each holds:
     current   the screen shown (1..N, N + 1: the final screen)
     form      the answer's fields as the page edits them (autosave.js ``pickFields``)
     version   the draft's version the form is based on (the server's)
     blocked   why nothing is saved now: null, "login", "conflict" or "restored"
     cursor    the keyboard cursor ({slot, px, range, element, anchor, hints}) or null (keyboard.js)
     zoom      one view for every pane: {scale, ox, oy} (static/js/zoom.js)
     overlay   whether actions are drawn over the screenshots
     compare   whether o_{i+1} is shown beside o_i
     boxMode   whether any drag draws an element box
     table     the served action table, null until it arrives */
/** @type {string[]} */
export const STATE_NAMES = ["current", "form", "version", "blocked", "cursor", "zoom", "overlay", "compare", "boxMode", "table"];

/**
 * The page as the workspace's modules read it (workspace.js): its root element, the annotation's and the trace's
 * ids, whether it may still change the annotation (asked at use), the served lease (null without one), the project's
 * platform, the served canonical texts of the two slots (shown until the server checks an edit), the fields each
 * verdict keeps ({verdict: {field: its empty value}}) and the filmstrip's marks (annotation.selectors.workspace_strip).
 * @typedef {{ root: HTMLElement, annotationId: string, traceId: number, editable: () => boolean,
 *   lease: { id: number, expires_at: string, page: string } | null, platform: string,
 *   canonical: Record<string, string>, verdictAnswers: Record<string, Record<string, any>>,
 *   strip: { without_shot: number[], off_screen: number[], gaps: Record<string, { missing_before: number,
 *   missing_before_words: string }> } | null }} WorkspacePage
 */
/**
 * The store: ``get(name)``; ``set(name, value)`` (returns the value); ``update(name, change)``: ``set(name,
 * change(get(name)))``; ``subscribe(name, listener)``: ``listener(value, before)`` after every change of ``name``,
 * returns what stops it. A name not in STATE_NAMES throws.
 * @typedef {{ get: (name: string) => any, set: (name: string, value: any) => any,
 *   update: (name: string, change: (value: any) => any) => any,
 *   subscribe: (name: string, listener: (value: any, before: any) => void) => () => boolean }} Store
 */

// Made for each store: no two stores share an object.
const defaults = () => ({
  current: 1, form: null, version: 0, blocked: null, cursor: null, zoom: { scale: 1, ox: 0, oy: 0 },
  overlay: true, compare: false, boxMode: false, table: null,
});

/**
 * A store holding the defaults, then ``initial``'s values (declared names only).
 * @param {Record<string, any>} [initial]
 * @returns {Store}
 */
export function createWorkspaceState(initial) {
  const values = defaults();
  const listeners = new Map(STATE_NAMES.map((name) => [name, new Set()]));
  const known = (name) => {
    if (!listeners.has(name)) throw new Error(`The workspace's state has no "${name}"`);
  };
  for (const [name, value] of Object.entries(initial || {})) { known(name); values[name] = value; }

  function get(name) {
    known(name);
    return values[name];
  }
  function set(name, value) {
    known(name);
    const before = values[name];
    values[name] = value;
    if (before !== value) for (const listener of [...listeners.get(name)]) listener(value, before);
    return value;
  }
  return {
    get,
    set,
    /* ``set(name, change(get(name)))``. */
    update: (name, change) => set(name, change(get(name))),
    /* ``listener(value, before)`` after every change of ``name``; returns what stops it. */
    subscribe(name, listener) {
      known(name);
      listeners.get(name).add(listener);
      return () => listeners.get(name).delete(listener);
    },
  };
}
