/* Talking to the studio's API from a page: the session cookie, Django's CSRF token, JSON both ways, and how an
   answer is read (studio/errors.py: every refusal is {detail, kind, ...}). A network failure answers status 0. */

export function csrfToken(cookie) {
  const m = String(cookie === undefined ? document.cookie : cookie).match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

/* {status, data}: data is the answer's JSON ({} when it has none); never throws (status 0 when unreachable).
   options.keepalive: the request outlives the page (a save sent as the page goes away). */
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

/* The session is gone (logged out, expired, or the CSRF cookie with it): a 401, or a 403 that says so. A 403 that
   refuses the action itself (a blind project, a role) is not one. */
export const isAuthProblem = (res) => res.status === 401 || (res.status === 403 &&
  /credentials|authenticat|csrf|log in/i.test(String(res.data.detail || "")));

/* A refusal's words: its detail, else its field errors ("field: message; …"). */
export function describeErrors(data) {
  if (data && data.detail) return String(data.detail);
  return Object.entries(data || {}).filter(([k]) => k !== "kind")
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(" ") : typeof v === "object" ? JSON.stringify(v) : v}`).join("; ");
}
