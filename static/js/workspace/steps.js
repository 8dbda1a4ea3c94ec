/* The trace's steps, loaded in windows: the page carries the steps around the one it opens on
   (annotation.selectors.workspace_payload) and asks GET /api/annotations/<id>/steps/?first=&last= for the others, a
   window (the served ``steps_window``) at a time, always keeping half a window loaded on either side of the step
   shown, so stepping with the keyboard never waits. Fetched steps are kept for the page's life (a step's data is a
   few hundred bytes). ``windowsToLoad`` is pure (tests/js/steps.test.mjs). */
import { api } from "../api.js";

/* The windows (``[first, last]``, aligned to multiples of ``size``, within 1..``count``) holding the steps within
   half a window of ``index`` that ``has`` (index → whether loaded) says are missing; nearest first. */
export function windowsToLoad(has, index, count, size) {
  const half = Math.floor(size / 2);
  const low = Math.max(1, index - half), high = Math.min(count, index + half);
  const starts = new Set();
  const order = [];
  for (const i of [index, ...range(low, high)]) {
    if (i < low || i > high || has(i)) continue;
    const start = Math.floor((i - 1) / size) * size + 1;
    if (!starts.has(start)) { starts.add(start); order.push([start, Math.min(count, start + size - 1)]); }
  }
  return order;
}

function range(low, high) {
  const out = [];
  for (let i = low; i <= high; i++) out.push(i);
  return out;
}

export function install(ws) {
  const { STEPS, N, DATA } = ws;
  const size = DATA.steps_window || 50;
  const pending = new Map();  // window start → its request

  // Whether screen ``index`` can be shown now: its step's data is here (the final screen always is).
  ws.hasStep = (index) => index < 1 || index > N || !!STEPS[index - 1];

  function fetchWindow([first, last]) {
    if (pending.has(first)) return pending.get(first);
    const request = api("GET", `${DATA.steps_url}?first=${first}&last=${last}`).then((res) => {
      pending.delete(first);
      if (res.status !== 200) {
        ws.banner("error", `Steps ${first}–${last} could not be loaded (${res.data.detail || `status ${res.status || "offline"}`}): go to one of them again to retry.`);
        return false;
      }
      for (const step of res.data.steps) STEPS[step.index - 1] = step;
      ws.stepsLoaded(first, last);
      return true;
    });
    pending.set(first, request);
    return request;
  }

  /* Loads what is missing within half a window of ``index``; resolves once the step ``index`` itself is here (true)
     or could not be loaded (false). */
  ws.loadAround = (index) => {
    const windows = windowsToLoad(ws.hasStep, index, N, size);
    const requests = windows.map(fetchWindow);
    if (ws.hasStep(index)) return Promise.resolve(true);
    return (requests[0] || Promise.resolve(false)).then(() => ws.hasStep(index));
  };
}
