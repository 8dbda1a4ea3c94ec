// @ts-check
// The clusters page's merge field: as a lead types part of another cluster's name, the clusters of the same run and
// kind whose name holds those words are offered (GET api-cluster-merge?q=…, the server's match and order); the
// choice names the cluster by id (#<id> <name>), which the form's view reads. No page lists every cluster.
// An ES module: what it offers as pure functions above, the page's wiring at the end (tests/js/cluster_merge.test.mjs).
import { api } from "./api.js";

/* The datalist's options for the server's candidates ([{id, display_name, size, choice}]): the value is the
   server's own ``choice`` text, the label says how large the cluster is. */
export function mergeOptions(candidates) {
  return (Array.isArray(candidates) ? candidates : []).map((c) => ({
    value: c.choice,
    label: `${c.size} correction${c.size === 1 ? "" : "s"}`,
  }));
}

/* Whether the field's text is one of the choices offered (picked from the list: not searched again). */
export const isOffered = (offered, text) => offered.includes(text);

export const SEARCH_DELAY_MS = 200;

function wire(input) {
  const list = document.getElementById(input.getAttribute("list"));
  let timer = null;
  let asked = 0;
  async function search() {
    const number = ++asked;
    const res = await api("GET", `${input.dataset.mergeSearch}?q=${encodeURIComponent(input.value.trim())}`);
    if (number !== asked || res.status !== 200) return; // a later search answers, or this one failed: keep the list
    list.replaceChildren(...mergeOptions(res.data).map(({ value, label }) => {
      const option = document.createElement("option");
      option.value = value;
      option.label = label;
      return option;
    }));
  }
  const later = () => { clearTimeout(timer); timer = setTimeout(search, SEARCH_DELAY_MS); };
  input.addEventListener("focus", () => { if (!list.children.length) search(); });
  const offered = () => Array.from(/** @type {HTMLDataListElement} */ (list).options, (option) => option.value);
  input.addEventListener("input", () => { if (!isOffered(offered(), input.value)) later(); });
}

if (typeof document !== "undefined") document.querySelectorAll("input[data-merge-search]").forEach(wire);
