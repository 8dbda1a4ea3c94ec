// @ts-check
/* Plain JSON values (a form, an action, a history's step): a deep copy and equality, both by their JSON text, so a
   copy shares nothing with what it was made from and two values are the same when the server would read them the
   same (keys in the same order). Pure (tests/js/values.test.mjs). */

/**
 * A deep copy of the JSON value ``value`` (undefined stays undefined).
 * @template T
 * @param {T} value
 * @returns {T}
 */
export const copy = (value) => (value === undefined ? value : JSON.parse(JSON.stringify(value)));

/**
 * Whether two JSON values are the same.
 * @param {unknown} a
 * @param {unknown} b
 * @returns {boolean}
 */
export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
