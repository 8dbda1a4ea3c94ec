// @ts-check
/* Which key a press is, on any keyboard layout, and whether a page's shortcuts take it (the person's choice in their
   account settings, read from ``<body data-shortcuts>``). Pure but for ``layoutKeys`` and ``shortcutMode``
   (tests/js/keys.test.mjs).

   A layout that types Latin letters (QWERTY, AZERTY, Dvorak) keeps its own letters: e is where that layout prints e.
   A layout that types other letters (Russian, Arabic, Greek) is matched by the key's place (``event.code``): the key
   in e's place on a QWERTY keyboard is e, whatever it types (у, ث); so is Option+e on a Mac, which types a dead
   key. */

// How single-key shortcuts work (WCAG 2.1.4): "single" (a character key alone), "modifier" (Alt / Option with
// it), "off" (none: buttons, and the keys that are no characters: arrows, Home, End, Delete, Esc, Enter).
export const SHORTCUT_MODES = ["single", "modifier", "off"];

/**
 * What the key tables read of a key press (a KeyboardEvent has all of it): the key typed, its place, the modifiers,
 * and whether a handler took it already.
 * @typedef {{ key: string, code?: string, ctrlKey?: boolean, metaKey?: boolean, altKey?: boolean, shiftKey?: boolean,
 *   defaultPrevented?: boolean }} KeyPress
 */
/**
 * The layout's letters where QWERTY has a-z ({e: "у", …}), only for the keys whose letter is no Latin one.
 * @typedef {Record<string, string>} Printed
 */

// What the places of the punctuation keys type on a US QWERTY keyboard, without and with Shift.
const QWERTY_PUNCTUATION = {
  Minus: ["-", "_"], Equal: ["=", "+"], Slash: ["/", "?"], Comma: [",", "<"], Period: [".", ">"],
  Semicolon: [";", ":"], Quote: ["'", "\""], BracketLeft: ["[", "{"], BracketRight: ["]", "}"], Backquote: ["`", "~"],
  NumpadAdd: ["+", "+"], NumpadSubtract: ["-", "-"],
};

/* What the key in ``code``'s place types on a US QWERTY keyboard (``shift``: with Shift), or null (no character). */
/** @param {string | undefined} code @param {boolean | undefined} shift @returns {string | null} */
export function qwertyChar(code, shift) {
  const letter = /^Key([A-Z])$/.exec(code || "");
  if (letter) return shift ? letter[1] : letter[1].toLowerCase();
  const digit = /^(?:Digit|Numpad)([0-9])$/.exec(code || "");
  if (digit && !shift) return digit[1];
  const punctuation = QWERTY_PUNCTUATION[code];
  return punctuation ? punctuation[shift ? 1 : 0] : null;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]$/;

/* The key of a press for the page's key tables: a named key ("ArrowLeft", "Escape") as it is; a character the
   layout types in ASCII as typed; any other character (у, ث, é, a dead key) as its place types on QWERTY. */
/** @param {KeyPress} event @returns {string} */
export function keyOf(event) {
  const typed = event.key || "";
  if (typed.length === 1 && PRINTABLE_ASCII.test(typed)) return typed;
  if (typed.length > 1 && typed !== "Dead" && typed !== "Unidentified") return typed;
  return qwertyChar(event.code, event.shiftKey) || typed;
}

/* Whether a key is a character key (a letter, digit, punctuation mark: what WCAG 2.1.4 is about), not a named one. */
/** @type {(key: unknown) => boolean} */
export const isCharacterKey = (key) => typeof key === "string" && key.length === 1;

/* The key a page shortcut looks up for this press under ``mode``, or null when the press is no shortcut: named keys
   (arrows, Home, End, Delete) without a modifier in every mode; a character key alone ("single") or with Alt /
   Option ("modifier"), never in "off". Ctrl and ⌘ presses are the page's other commands (save, submit, undo). */
/** @param {KeyPress} event @param {string} [mode] @returns {string | null} */
export function shortcutKey(event, mode = "single") {
  if (event.ctrlKey || event.metaKey) return null;
  const key = keyOf(event);
  if (!isCharacterKey(key)) return event.altKey ? null : key;
  if (mode === "modifier") return event.altKey ? key : null;
  if (mode === "off" || event.altKey) return null;
  return key;
}

/* How the help and the key hints write a shortcut's ``key`` under ``mode`` (null in "off" for a character key).
   ``printed``: what the person's layout prints for a key (``layoutKeys``), so the e key reads "у" on a Russian one. */
/** @param {string} key @param {string} [mode] @param {Printed} [printed] @returns {string | null} */
export function keyLabel(key, mode = "single", printed = {}) {
  if (!isCharacterKey(key)) return key;
  if (mode === "off") return null;
  const shown = printed[key] || key;
  return mode === "modifier" ? `Alt+${shown}` : shown;
}

/* The letters the layout prints where QWERTY has a-z, from what ``navigator.keyboard.getLayoutMap()`` answers
   (``layout``: a Map of code to character) and the presses seen (``seen``: code to key, which the browsers without
   that map learn from): {e: "у", …}, only for the keys whose letter is no Latin one. */
/**
 * @param {Map<string, string> | null | undefined} layout @param {Record<string, string>} [seen]
 * @returns {Printed}
 */
export function printedLetters(layout, seen = {}) {
  /** @type {Printed} */
  const printed = {};
  const entries = [...(layout ? layout.entries() : []), ...Object.entries(seen)];
  for (const [code, char] of entries) {
    const latin = qwertyChar(code, false);
    if (latin && /^[a-z]$/.test(latin) && typeof char === "string" && char.length === 1 && !PRINTABLE_ASCII.test(char)) {
      printed[latin] = char.toLowerCase();
    }
  }
  return printed;
}

/* The person's choice, as the page's body carries it (``data-shortcuts``); "single" where a page says nothing. */
/** @param {Document} [doc] @returns {string} one of SHORTCUT_MODES */
export function shortcutMode(doc = globalThis.document) {
  const mode = doc && doc.body && doc.body.dataset.shortcuts;
  return SHORTCUT_MODES.includes(mode) ? mode : "single";
}

// The layout's letters as last learned (``layoutKeys``), for what is drawn later (the keyboard cursor's hint labels).
/** @type {Printed} */
let printedNow = {};

/* ``text`` (Latin letters of keys, a hint label) as the person's layout prints those keys: "ab" reads "фи" on a
   Russian one; a letter the layout prints itself stays. */
/** @param {string} text @param {Printed} [printed] @returns {string} */
export function asPrinted(text, printed = printedNow) {
  return [...text].map((c) => printed[c.toLowerCase()] || c).join("");
}

/* The layout's letters (``printedLetters``) once the browser says them: ``onChange(printed)`` is called with what
   is known at once, then again when the layout map answers and when a press shows a letter not seen before. */
/** @param {(printed: Printed) => void} onChange @returns {void} */
export function layoutKeys(onChange) {
  /** @type {Record<string, string>} */
  const seen = {};
  let layout = null;
  const tell = () => { printedNow = printedLetters(layout, seen); onChange(printedNow); };
  tell();
  const keyboard = globalThis.navigator && navigator.keyboard;
  if (keyboard && keyboard.getLayoutMap) keyboard.getLayoutMap().then((map) => { layout = map; tell(); }, () => {});
  globalThis.document.addEventListener("keydown", (event) => {
    const latin = qwertyChar(event.code, false);
    if (!latin || !/^[a-z]$/.test(latin) || event.altKey || event.ctrlKey || event.metaKey) return;
    const key = (event.key || "").toLowerCase();
    if (key.length !== 1 || seen[event.code] === key) return;
    seen[event.code] = key;
    tell();
  }, true);
}

/* The key hints of a page written for ``mode`` and the layout's letters (``printed``): each ``<kbd data-key="e">``
   reads the key as ``keyLabel`` writes it (hidden when the key is off), and each control with ``data-title-key``
   says its key in its tooltip's "(e)" and in ``aria-keyshortcuts`` (neither when the key is off). */
/** @param {ParentNode} root @param {string} mode @param {Printed} [printed] @returns {void} */
export function showKeyHints(root, mode, printed = {}) {
  for (const kbd of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll("kbd[data-key]"))) {
    const label = keyLabel(kbd.dataset.key, mode, printed);
    kbd.hidden = label === null;
    if (label !== null) kbd.textContent = label;
  }
  for (const control of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll("[data-title-key]"))) {
    const key = control.dataset.titleKey;
    const label = keyLabel(key, mode, printed);
    if (!("titleBase" in control.dataset)) control.dataset.titleBase = control.title;
    control.title = titleWithKey(control.dataset.titleBase, key, label);
    if (label === null) control.removeAttribute("aria-keyshortcuts");
    else control.setAttribute("aria-keyshortcuts", label);
  }
}

/* A tooltip that names ``key`` in parentheses ("Zoom out (-)", "Zoom in (+; or the wheel)") naming ``label``
   instead, or no key where ``label`` is null ("Zoom out", "Zoom in (or the wheel)"). */
/** @param {string} title @param {string} key @param {string | null} label @returns {string} */
export function titleWithKey(title, key, label) {
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const named = new RegExp(`\\(${escaped}(\\)|; )`);
  if (label !== null) return title.replace(named, (_, end) => `(${label}${end}`);
  return title.replace(new RegExp(` ?\\(${escaped}\\)`), "").replace(new RegExp(`\\(${escaped}; `), "(");
}
