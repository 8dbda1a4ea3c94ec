// @ts-check
/* The structured action editor, shared by the annotator's workspace and the lead's edit-then-accept form.
   Everything it offers comes from the server's action table (/api/actions/table/: the platform's action space,
   each action's arguments and their kinds); the canonical UI-TARS text and the problems come from the server's
   check of the same grammar. The editor holds no rule of its own: it draws an action and reports edits. */
import { el } from "./dom.js";
import { gettext } from "./i18n.js";

/**
 * One argument of an action as the served table describes it: its kind ("point", "direction", "text", "keys",
 * "duration", …), whether the grammar requires it and whether the platform's prompt does.
 * @typedef {{ name: string, kind: string, required: boolean, required_in_target: boolean, description?: string }} ArgSpec
 */
/**
 * How the overlay marks an action (workspace/overlay.js): a shape, and a badge or the argument whose value is the
 * badge (its values joined by ``badge_join``).
 * @typedef {{ shape: string, badge: string, badge_arg?: string, badge_join?: string }} ActionMark
 */
/**
 * An action of the served table: its name, its label, what it does, its arguments and its mark.
 * @typedef {{ name: string, label: string, description?: string, args: ArgSpec[], platforms?: string[],
 *   mark?: ActionMark }} ActionSpec
 */
/**
 * The served action table (traces.grammar.action_table_json, GET /api/actions/table/): the actions, each platform's
 * action space (``targets``: platform → action names) and the scroll directions; the rest of its fields are read by
 * other modules.
 * @typedef {{ actions: ActionSpec[], targets: Record<string, string[]>, directions: string[], [field: string]: any }} ActionTable
 */
/**
 * An action as the page edits it: its type, its arguments by name (a point is [x, y] in the project's convention;
 * text, keys, a direction or a duration otherwise), how its point is written and its element box, if any.
 * @typedef {{ type: string, args: Record<string, any>, style?: string, target_box?: number[] }} Action
 */
/**
 * The server's check of an action (the grammar's): its canonical UI-TARS text, its problems and whether it is valid.
 * @typedef {{ canonical: string, errors: string[], valid: boolean }} Check
 */

/** @type {(table: ActionTable | null, type: string) => ActionSpec | null | undefined} */
export const spec = (table, type) => (table ? table.actions.find((a) => a.name === type) : null);
/** @type {(table: ActionTable | null, type: string) => ArgSpec[]} */
export const pointArgs = (table, type) => (spec(table, type) ? spec(table, type).args.filter((a) => a.kind === "point") : []);

/**
 * The points a click places, in order: the required ones (a drag: start, then end), else the first optional one.
 * @param {ActionTable | null} table
 * @param {string} type
 * @returns {ArgSpec[]}
 */
export function placeablePoints(table, type) {
  const all = pointArgs(table, type);
  return all.some((a) => a.required) ? all.filter((a) => a.required) : all.slice(0, 1);
}

/**
 * Put ``point`` into ``action`` as the next point to place; returns the next placement counter.
 * @param {ActionTable | null} table
 * @param {Action} action
 * @param {number} counter the points placed so far
 * @param {number[]} point
 * @returns {number}
 */
export function place(table, action, counter, point) {
  const placeable = placeablePoints(table, action.type);
  if (!placeable.length) return counter;
  const k = counter % placeable.length;
  if (k === 0) for (const a of placeable.slice(1)) delete action.args[a.name];
  action.args[placeable[k].name] = point;
  return k + 1;
}

/**
 * What the editor draws and whom it tells of an edit: the table, the platform, the slot, the action (null: none
 * chosen), whether it can be edited, the server's check (null before the first), the canonical text shown before
 * the first check, onType(type), onArg(name, value, quiet: a field being typed in), onClearPoint(name), pointHint
 * (what to do to place a point), onClearBox() and boxHint (how to draw the element box; without it the box row shows
 * only a stored box).
 * @typedef {{ table: ActionTable | null, platform: string, slot: string, action: Action | null, editable: boolean,
 *   check?: Check | null, fallbackCanonical?: string, onType?: (type: string) => void,
 *   onArg?: (name: string, value: any, quiet: boolean) => void, onClearPoint?: (name: string) => void,
 *   pointHint?: string, onClearBox?: () => void, boxHint?: string | null }} EditorOptions
 */

/**
 * Draw the editor of ``o.action`` into ``host``.
 * @param {HTMLElement} host
 * @param {EditorOptions} o
 * @returns {void}
 */
export function render(host, o) {
  if (!o.table) { host.textContent = gettext("Loading the action table…"); return; }
  const action = o.action;
  // Redrawn after every server check: whoever is typing in a field keeps the focus and the caret.
  const active = /** @type {HTMLInputElement | null} */ (host.contains(document.activeElement) ? document.activeElement : null);
  const focused = active ? (active.dataset.arg ? `[data-arg="${active.dataset.arg}"]` : active.dataset.slotType ? "[data-slot-type]" : null) : null;
  let caret = null;
  try { caret = active && active.selectionStart != null ? [active.selectionStart, active.selectionEnd] : null; } catch (e) { caret = null; }
  host.replaceChildren();
  const typeSel = el("select", { class: "ws-type", "data-slot-type": o.slot, disabled: !o.editable });
  typeSel.appendChild(el("option", { value: "" }, gettext("— action type —")));
  // Only what the platform's prompt offers (the served table says which); a stored type stays visible.
  const offered = o.table.targets[o.platform] || [];
  for (const a of o.table.actions) {
    if (!offered.includes(a.name) && !(action && action.type === a.name)) continue;
    const option = el("option", { value: a.name }, `${a.label} · ${a.name}`);
    if (action && action.type === a.name) option.selected = true;
    typeSel.appendChild(option);
  }
  typeSel.addEventListener("change", () => o.onType(typeSel.value));
  host.appendChild(el("label", {}, gettext("Action"))).appendChild(typeSel);
  const sp = action && spec(o.table, action.type);
  if (sp) {
    if (sp.description) host.appendChild(el("p", { class: "muted small" }, sp.description));
    for (const arg of sp.args) {
      const value = action.args[arg.name];
      const label = el("label", {}, `${arg.name}${arg.required_in_target ? "" : " " + gettext("(optional)")}`);
      if (arg.kind === "point") {
        const row = el("div", { class: "ws-point" });
        // Read only, a point not placed is said as such: no hint offers a click that would do nothing.
        const unplaced = o.editable ? o.pointHint || gettext("click the screenshot") : "—";
        row.appendChild(el("code", { "data-point": `${o.slot}-${arg.name}` }, Array.isArray(value) ? `(${value[0]}, ${value[1]})` : unplaced));
        if (value !== undefined && !arg.required && o.editable) {
          const clear = el("button", { type: "button", class: "ws-ghost small" }, gettext("clear"));
          clear.addEventListener("click", () => o.onClearPoint(arg.name));
          row.appendChild(clear);
        }
        label.appendChild(row);
      } else if (arg.kind === "direction") {
        const sel = el("select", { disabled: !o.editable, "data-arg": arg.name });
        sel.appendChild(el("option", { value: "" }, "—"));
        for (const d of o.table.directions) { const option = el("option", { value: d }, d); option.selected = value === d; sel.appendChild(option); }
        sel.addEventListener("change", () => o.onArg(arg.name, sel.value || undefined, false));
        label.appendChild(sel);
      } else {
        const common = { disabled: !o.editable, "data-arg": arg.name };
        // Typed text (a type action's content) reads in the direction of its first letter, as the thoughts do.
        const input = arg.kind === "text" ? el("textarea", { ...common, dir: "auto", rows: 2 })
          : el("input", { ...common, type: arg.kind === "duration" ? "number" : "text" });
        input.placeholder = arg.description || "";
        input.value = value === undefined ? "" : value;
        input.addEventListener("input", () => {
          const v = arg.kind === "duration" ? (input.value === "" ? undefined : Number(input.value)) : input.value;
          o.onArg(arg.name, v === "" && !arg.required_in_target ? undefined : v, true);
        });
        label.appendChild(input);
      }
      host.appendChild(label);
    }
  }
  // The element box of the target (start_box), beside its point: drawn on the screenshot, shown here.
  // Read only, only a stored box is shown (the hint would offer a drag that does nothing).
  const boxHint = o.editable ? o.boxHint : null;
  if (sp && sp.args.some((a) => a.name === "start_box") && (boxHint || Array.isArray(action.target_box))) {
    const label = el("label", {}, gettext("element box (optional)"));
    const row = el("div", { class: "ws-point" });
    const box = action.target_box;
    const shown = Array.isArray(box) ? `[${box.join(", ")}]` : boxHint;
    row.appendChild(el("code", { "data-box": o.slot, title: shown }, shown));
    if (Array.isArray(box) && o.editable && o.onClearBox) {
      const clear = el("button", { type: "button", class: "ws-ghost small", "data-clear-box": o.slot }, gettext("clear"));
      clear.addEventListener("click", () => o.onClearBox());
      row.appendChild(clear);
    }
    label.appendChild(row);
    host.appendChild(label);
  }
  const canonical = el("div", { class: "ws-canonical" });
  canonical.appendChild(el("div", { class: "ws-field-label" }, gettext("UI-TARS action (checked by the server)")));
  canonical.appendChild(el("code", { class: "ws-code", "data-canonical": o.slot }, o.check ? o.check.canonical || "—" : o.fallbackCanonical || "—"));
  const errors = el("ul", { class: "ws-errors", "data-errors": o.slot });
  if (o.check) for (const e of o.check.errors) errors.appendChild(el("li", {}, e));
  if (o.check && o.check.valid) errors.appendChild(el("li", { class: "ok" }, gettext("✓ valid")));
  canonical.appendChild(errors);
  host.appendChild(canonical);
  // An input or a textarea (with a caret) or a select (without).
  const again = /** @type {HTMLInputElement | null} */ (focused && host.querySelector(focused));
  if (again) {
    again.focus({ preventScroll: true });
    try { if (caret && again.setSelectionRange) again.setSelectionRange(caret[0], caret[1]); } catch (e) { /* number inputs have no caret */ }
  }
}
