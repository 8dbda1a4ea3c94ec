// @ts-check
/* The trace's steps, loaded in windows: the page carries the steps around the one it opens on
   (annotation.selectors.workspace_payload) and asks GET /api/annotations/<id>/steps/?first=&last= for the others, a
   window (the served ``steps_window``) at a time, always keeping half a window loaded on either side of the step
   shown, so stepping with the keyboard never waits. Fetched steps are kept for the page's life (a step's data is a
   few hundred bytes). ``windowsToLoad`` is pure (tests/js/steps.test.mjs). */
import { api } from "../api.js";
import { gettext, interpolate } from "../i18n.js";

/* The windows (``[first, last]``, aligned to multiples of ``size``, within 1..``count``) holding the steps within
   half a window of ``index`` that ``has`` (index → whether loaded) says are missing; nearest first. */
/**
 * @param {(index: number) => boolean} has @param {number} index @param {number} count @param {number} size
 * @returns {number[][]} each window's first and last step
 */
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

/* The steps the page holds: screen i's data is ``step(i)`` once here. ``initial``: the steps the page came with;
   ``count``: the trace's steps; ``finalShot``: o_{n+1}, the final screen, when the runner kept it (else null);
   ``size`` and ``url``: the served window and where to ask for one; ``fetchWindow(first, last)``: asks the server
   ({status, data}); ``loaded(first, last)``: told when a window arrived; ``failed(message)``: when one could not
   be loaded. */
/**
 * A screenshot as a step carries it (annotation.selectors._shot): its image and thumbnail, and the Shot's size and
 * extent.
 * @typedef {import("../geometry.js").Shot & { url: string, thumb: string }} StepShot
 */
/**
 * A step as the server gives it (annotation.selectors.workspace_payload's ``steps``, the step window API): its index,
 * its recorded thought and action (its text, and the actions drawn on its screen), its screenshot, the elements
 * recorded on it (boxes in the convention), the screen a post-reflection for a first error here is written on and the
 * reason the server records when there is none; the other fields are read by the panels.
 * @typedef {{ index: number, thought: string, action_text: string, actions?: import("../action_editor.js").Action[],
 *   shot: StepShot | null,
 *   elements?: { box: number[], [field: string]: any }[], reflection_screen?: number | null,
 *   server_no_reflection_reason?: string, [field: string]: any }} Step
 */
/**
 * The steps the page holds: the trace's ``count`` and the last screen to step to (``lastView``: the final screen
 * when kept); ``step(i)`` once here, ``hasStep(i)``, ``shotOf(i)`` (o_i), ``elementsOf(i)``, ``loadAround(i)``
 * (resolves to whether step i is then here) and ``list()`` (index i - 1: step i; read only).
 * @typedef {{ count: number, lastView: number, step: (index: number) => Step | undefined,
 *   hasStep: (index: number) => boolean, shotOf: (index: number) => StepShot | null,
 *   elementsOf: (index: number) => { box: number[], [field: string]: any }[],
 *   loadAround: (index: number) => Promise<boolean>, list: () => Step[] }} Steps
 */
/**
 * @param {{ initial: Step[], count: number, finalShot: StepShot | null, size: number, url: string,
 *   fetchWindow?: (first: number, last: number) => Promise<{ status: number, data: any }>,
 *   loaded: (first: number, last: number) => void, failed: (message: string) => void }} parts
 * @returns {Steps}
 */
export function createSteps({ initial, count, finalShot, size, url, fetchWindow, loaded, failed }) {
  const steps = new Array(count);
  for (const step of initial) steps[step.index - 1] = step;
  const windowSize = size || 50;
  const ask = fetchWindow || ((first, last) => api("GET", `${url}?first=${first}&last=${last}`));
  const pending = new Map();  // window start → its request

  const step = (index) => steps[index - 1];
  // Whether screen ``index`` can be shown now: its step's data is here (the final screen always is).
  const hasStep = (index) => index < 1 || index > count || !!steps[index - 1];
  // The screenshot o_index: a step's, or the final screen after the last step.
  const shotOf = (index) => (index === count + 1 ? finalShot : (steps[index - 1] || {}).shot || null);
  // The elements the source recorded on screen ``index`` (none on the final screen).
  const elementsOf = (index) => (index <= count ? (steps[index - 1] || {}).elements || [] : []);

  /** @param {number[]} range a window's first and last step @returns {Promise<boolean>} */
  function load([first, last]) {
    if (pending.has(first)) return pending.get(first);
    const request = ask(first, last).then((res) => {
      pending.delete(first);
      if (res.status !== 200) {
        failed(interpolate(gettext("Steps %(first)s–%(last)s could not be loaded (%(problem)s): go to one of them again to retry."), { first, last, problem: res.data.detail || interpolate(gettext("status %(status)s"), { status: res.status || gettext("offline") }) }));
        return false;
      }
      for (const one of res.data.steps) steps[one.index - 1] = one;
      loaded(first, last);
      return true;
    });
    pending.set(first, request);
    return request;
  }

  /* Loads what is missing within half a window of ``index``; resolves once the step ``index`` itself is here (true)
     or could not be loaded (false). */
  function loadAround(index) {
    const requests = windowsToLoad(hasStep, index, count, windowSize).map(load);
    if (hasStep(index)) return Promise.resolve(true);
    return (requests[0] || Promise.resolve(false)).then(() => hasStep(index));
  }

  return {
    count,
    // o_{n+1}, the final screen, when the runner kept it: the last screen to step to.
    lastView: finalShot ? count + 1 : count,
    step, hasStep, shotOf, elementsOf, loadAround,
    // The steps as an array (index i - 1: step i; a hole where one is not here yet), for the pure rules of editor.js.
    // Read only: steps arrive through ``loadAround``.
    list: () => steps,
  };
}
