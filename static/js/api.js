// @ts-check
/* Talking to the studio's API from a page: the session cookie, Django's CSRF token, JSON both ways, and how an
   answer is read (studio/errors.py: every refusal is {detail, kind, ...}). A network failure answers status 0. */

/**
 * An answer of the API as a page reads it: its HTTP status (0 when the server could not be reached) and its JSON
 * ({} when it had none): a refusal's is {detail, kind, ...} (studio/errors.py).
 * @typedef {{ status: number, data: any }} ApiAnswer
 */

/* The CSRF token of ``cookie`` (the page's own cookie when none is given), or "" without one. */
/** @param {string} [cookie] @returns {string} */
export function csrfToken(cookie) {
  const m = String(cookie === undefined ? document.cookie : cookie).match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

/* {status, data}: data is the answer's JSON ({} when it has none); never throws (status 0 when unreachable).
   options.keepalive: the request outlives the page (a save sent as the page goes away). */
/**
 * @param {string} method
 * @param {string} url
 * @param {unknown} [body] sent as JSON; none when undefined
 * @param {{ keepalive?: boolean }} [options]
 * @returns {Promise<ApiAnswer>}
 */
export async function api(method, url, body, options) {
  let response;
  try {
    response = await fetch(url, {
      method, credentials: "same-origin", keepalive: !!(options && options.keepalive),
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    return { status: 0, data: {} };
  }
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  return { status: response.status, data: data || {} };
}

/* The kind the server gives an answer whose login is gone (studio.errors.ErrorKind.SIGNED_OUT). */
export const SIGNED_OUT = "signed_out";

/* The session is gone (logged out, expired, or the CSRF cookie with it): the answer's kind says so (a 401 or, for a
   failed CSRF check, a 403), or a 401 that came without a body of the studio's. A 403 that refuses the action itself
   (a blind project, a role) is not one, whatever its words. */
/** @type {(res: ApiAnswer) => boolean} */
export const isAuthProblem = (res) => (res.data && res.data.kind === SIGNED_OUT) || (res.status === 401 &&
  !(res.data && res.data.kind));

/* A refusal's words: its detail, else its field errors ("field: message; …"). */
/** @param {Record<string, any> | null | undefined} data @returns {string} */
export function describeErrors(data) {
  if (data && data.detail) return String(data.detail);
  return Object.entries(data || {}).filter(([k]) => k !== "kind")
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(" ") : typeof v === "object" ? JSON.stringify(v) : v}`).join("; ");
}
