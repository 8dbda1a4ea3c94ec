// @ts-check
/* The Versions panel (the workspace and the lead's review page): every saved version of an annotation in words, from
   GET /api/annotations/<id>/versions/, and a Restore button on each older one, which posts
   …/versions/<n>/restore/ with the version the page holds (a newer one on the server answers 409 and nothing is
   overwritten) and then reloads the page, so the form shows the restored answer. Who may restore, and when, is the
   server's rule: the list says so (can_restore, restore_refusal). The pure part (versionRows, restoreOutcome) is
   tested by node (tests/js/versions.test.mjs). */
import { api, describeErrors } from "./api.js";
import { formatDateTime, formatTime, gettext, interpolate } from "./i18n.js";

/** @typedef {import("./api.js").ApiAnswer} ApiAnswer */
/**
 * A rewritten text's change as the server's diff: its field and its segments (each kept, deleted or inserted).
 * @typedef {{ field: string, segments: { op: string, text: string }[] }} Diff
 */
/**
 * One saved version as the server lists it (annotation.selectors.annotation_versions): a typing session's saves are
 * one version (``saves`` of them, versions ``first`` to ``number``, since ``since``).
 * @typedef {{ number: number, current?: boolean, by?: string | null, at?: string, status?: string, kind?: string,
 *   changes?: string[], diffs?: { field: string, segments?: { op: string, text: string }[] }[], restore_url?: string,
 *   saves?: number, first?: number, since?: string }} Version
 */
/**
 * The server's list: the versions, newest first, and whether this user may restore one now (and why not).
 * @typedef {{ versions?: Version[], can_restore?: boolean, restore_refusal?: string }} VersionList
 */
/**
 * A row of the panel: what it shows and whether it offers a restore.
 * @typedef {{ number: number, title: string, meta: string, changes: string[], diffs: Diff[], kind: string | undefined,
 *   current: boolean, restorable: boolean, restoreUrl: string | undefined }} VersionRow
 */
/** What a restore's answer means for the page. @typedef {{ done: boolean, stale?: boolean, message: string }} RestoreOutcome */
/**
 * What the page tells the panel: the version it holds, a promise settled once its own pending edits are saved, and
 * what to do once a version is restored.
 * @typedef {{ baseVersion?: () => number, beforeRestore?: () => Promise<unknown>,
 *   restored?: (answer: any) => void }} VersionHooks
 */

/* "Nov 28, 2026, 3:12 AM" (or "2026年11月28日 03:12") in the reader's time zone and the page's language. */
/** @param {string | null | undefined} iso @returns {string} */
export function whenWords(iso) {
  return formatDateTime(iso);
}

/* A typing session's saves, listed as one version by the server (annotation.selectors.annotation_versions): how
   many, the versions they made and since when; "" for a version of one save. */
/** @param {Version} v @returns {string} */
export function sessionWords(v) {
  if (!(v.saves > 1)) return "";
  const since = formatTime(v.since);
  const saves = interpolate(gettext("%(saves)s saves while typing (versions %(first)s–%(last)s)"), { saves: v.saves, first: v.first, last: v.number });
  return since ? `${saves} ${interpolate(gettext("from %(since)s"), { since })}` : saves;
}

/* The rows the panel shows, newest first as served: a title, who and when, what changed (a rewritten text as the
   server's diff: its field and segments, unchanged text cut to the words beside a change), and whether it offers a
   restore (not the current version; only when the server says this user may restore now). */
/** @param {VersionList | null | undefined} data @returns {VersionRow[]} */
export function versionRows(data) {
  const may = Boolean(data && data.can_restore);
  return ((data && data.versions) || []).map((v) => ({
    number: v.number,
    title: interpolate(v.current ? gettext("Version %(number)s (current)") : gettext("Version %(number)s"), { number: v.number }),
    meta: [v.by || gettext("(system)"), whenWords(v.at), v.status, sessionWords(v)].filter(Boolean).join(" · "),
    changes: v.changes || [],
    diffs: (v.diffs || []).map((d) => ({ field: d.field, segments: d.segments || [] })),
    kind: v.kind,
    current: Boolean(v.current),
    restorable: may && !v.current,
    restoreUrl: v.restore_url,
  }));
}

/* What a restore's answer means for the page: reload (done), or a sentence and whether the list is stale. */
/** @param {ApiAnswer} res @param {number} number @returns {RestoreOutcome} */
export function restoreOutcome(res, number) {
  if (res.status === 200) return { done: true, message: interpolate(gettext("Version %(number)s restored as version %(version)s."), { number, version: res.data.version }) };
  if (res.status === 409 && res.data.current_version !== undefined) {
    return { done: false, stale: true, message: interpolate(gettext("Not restored: %(problem)s"), { problem: describeErrors(res.data) }) };
  }
  if (res.status === 0) return { done: false, message: gettext("Not restored: the server cannot be reached; try again.") };
  return { done: false, message: interpolate(gettext("Not restored: %(problem)s"), { problem: describeErrors(res.data) || interpolate(gettext("the server answered %(status)s"), { status: res.status }) }) };
}

/** @param {string} tag @param {string} cls @param {unknown} [text] @returns {HTMLElement} */
function node(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = String(text);
  return n;
}

/* Mount the panel on ``root`` (the include's <details>). hooks: baseVersion() → the version the page holds (default:
   root.dataset.version), beforeRestore() → a promise settled once the page's own pending edits are saved,
   restored(answer) → what to do after (default: reload the page). */
/**
 * @param {HTMLDetailsElement | null} root
 * @param {VersionHooks} [hooks]
 * @returns {{ load: () => Promise<void> } | null}
 */
export function mountVersions(root, hooks = {}) {
  if (!root) return null;
  const list = /** @type {HTMLElement} */ (root.querySelector(".versions-list"));
  const note = /** @type {HTMLElement} */ (root.querySelector(".versions-note"));
  const url = root.dataset.versionsUrl;
  const say = (text, kind) => { note.textContent = text; note.dataset.kind = kind || ""; note.hidden = !text; };

  async function load() {
    say(gettext("Loading the versions…"));
    const res = await api("GET", url);
    if (res.status !== 200) { say(interpolate(gettext("The versions could not be read: %(problem)s"), { problem: describeErrors(res.data) || res.status }), "error"); return; }
    list.replaceChildren();
    for (const row of versionRows(res.data)) list.appendChild(item(row));
    say(res.data.can_restore ? "" : res.data.restore_refusal || "");
    root.dataset.loaded = "1";
  }

  function item(row) {
    const li = node("li", `versions-item kind-${row.kind}${row.current ? " current" : ""}`);
    li.dataset.number = row.number;
    const head = node("div", "versions-head");
    head.append(node("strong", "", row.title), node("span", "muted small versions-meta", row.meta));
    if (row.restorable) {
      const button = /** @type {HTMLButtonElement} */ (node("button", "versions-restore small", gettext("Restore")));
      button.type = "button";
      button.title = interpolate(gettext("Write version %(number)s's answer back as a new version (nothing is lost: this one stays listed)"), { number: row.number });
      button.addEventListener("click", () => restore(row, button));
      head.appendChild(button);
    }
    const changes = node("ul", "versions-changes small");
    for (const change of row.changes) changes.appendChild(node("li", "", change));
    li.append(head, changes);
    // What a rewritten text changed: the words taken out struck through, the words put in marked.
    for (const diff of row.diffs) {
      const p = node("p", "versions-diff small");
      p.dataset.field = diff.field;
      p.appendChild(node("span", "versions-diff-field", `${diff.field}: `));
      for (const segment of diff.segments) {
        p.appendChild(node(segment.op === "delete" ? "del" : segment.op === "insert" ? "ins" : "span", `diff-${segment.op}`, segment.text));
      }
      li.appendChild(p);
    }
    return li;
  }

  async function restore(row, button) {
    for (const b of list.querySelectorAll("button")) b.disabled = true;
    say(interpolate(gettext("Restoring version %(number)s…"), { number: row.number }));
    if (hooks.beforeRestore) await hooks.beforeRestore();
    const base = hooks.baseVersion ? hooks.baseVersion() : Number(root.dataset.version);
    const res = await api("POST", row.restoreUrl, { version: base });
    const outcome = restoreOutcome(res, row.number);
    say(outcome.message, outcome.done ? "done" : "error");
    if (outcome.done) {
      root.dataset.restored = String(row.number);
      if (hooks.restored) hooks.restored(res.data); else window.location.reload();
      return;
    }
    for (const b of list.querySelectorAll("button")) b.disabled = false;
    button.focus();
  }

  root.addEventListener("toggle", () => { if (root.open) load(); });
  if (root.open) load();
  return { load };
}

// Pages without a workspace (the lead's review page) mount their panel themselves.
if (typeof document !== "undefined") {
  const panels = /** @type {NodeListOf<HTMLDetailsElement>} */ (document.querySelectorAll("[data-versions-url][data-mount='self']"));
  for (const root of panels) mountVersions(root);
}
