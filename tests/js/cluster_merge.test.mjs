// The clusters page's merge field (static/js/cluster_merge.js): the options it makes of the server's candidates.
import assert from "node:assert/strict";
import { test } from "node:test";

import { isOffered, mergeOptions } from "../../static/js/cluster_merge.js";

test("the server's choice text is the option's value, its size the label", () => {
  const options = mergeOptions([
    { id: 7, display_name: "click → type · far", size: 1, choice: "#7 click → type · far" },
    { id: 12, display_name: "focus, search", size: 40, choice: "#12 focus, search" },
  ]);
  assert.deepEqual(options, [
    { value: "#7 click → type · far", label: "1 correction" },
    { value: "#12 focus, search", label: "40 corrections" },
  ]);
  assert.deepEqual(mergeOptions(null), []);
  assert.deepEqual(mergeOptions({ detail: "refused" }), []);
});

test("a picked choice is not searched again; typed words are", () => {
  const offered = mergeOptions([{ id: 12, display_name: "focus, search", size: 40, choice: "#12 focus, search" }]).map(
    (option) => option.value,
  );
  assert.ok(isOffered(offered, "#12 focus, search"));
  assert.ok(!isOffered(offered, "focus"));
  assert.ok(!isOffered([], "#12 focus, search"));
});
