// @ts-check
// The pages' words in the reader's language: Django's JavaScript catalog (/jsi18n/, loaded by base.html before
// any module) defines the global gettext functions; without it (the unit tests under node) a text stays as written.
// Mark every text a script shows with these, by these names, so `makemessages -d djangojs` finds them.
const catalog = globalThis;

/** @param {string} text @returns {string} */
export function gettext(text) {
  return typeof catalog.gettext === "function" ? catalog.gettext(text) : text;
}

/** @param {string} singular @param {string} plural @param {number} count @returns {string} */
export function ngettext(singular, plural, count) {
  if (typeof catalog.ngettext === "function") return catalog.ngettext(singular, plural, count);
  return count === 1 ? singular : plural;
}

// interpolate("%(n)s of %(total)s", {n: 1, total: 2}): a translation's placeholders, named so a language may
// order them its own way.
/** @param {string} text @param {Record<string, unknown>} values @returns {string} */
export function interpolate(text, values) {
  return text.replace(/%\((\w+)\)s/g, (whole, name) => (name in values ? String(values[name]) : whole));
}

// The page's language for Intl's dates and numbers (base.html writes it on <html lang>).
/** @returns {string} */
export function pageLanguage() {
  return (globalThis.document && document.documentElement.lang) || "en";
}

/** @param {number} value @param {Intl.NumberFormatOptions} [options] @returns {string} */
export function formatNumber(value, options) {
  return new Intl.NumberFormat(pageLanguage(), options).format(value);
}

// A date and time the way the page's language writes them ("Dec 7, 2026, 3:04 PM", "2026年12月7日 15:04"), as
// the server's templates do (studio/formats); "" for no date or one that cannot be read.
/** @typedef {string | number | Date | null | undefined} When a date as the server gives it (ISO 8601), or none */
/** @param {When} value @param {Intl.DateTimeFormatOptions} [options] @returns {string} */
export function formatDateTime(value, options) {
  const date = value ? new Date(value) : null;
  if (!date || Number.isNaN(date.getTime())) return "";
  return new Intl.DateTimeFormat(pageLanguage(), options || { dateStyle: "medium", timeStyle: "short" }).format(date);
}

/** @param {When} value @returns {string} */
export function formatDate(value) {
  return formatDateTime(value, { dateStyle: "medium" });
}

/** @param {When} value @returns {string} */
export function formatTime(value) {
  return formatDateTime(value, { timeStyle: "short" });
}

// A background job's status in words (studio.models.JobStatus), as the pages show it.
/** @param {string} status @returns {string} */
export function jobStatusWord(status) {
  const words = {
    queued: gettext("queued"),
    running: gettext("running"),
    succeeded: gettext("succeeded"),
    failed: gettext("failed"),
    cancelled: gettext("cancelled"),
  };
  return words[status] || status;
}
