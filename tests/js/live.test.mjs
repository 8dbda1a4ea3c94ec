// The live socket's pure parts (static/js/live.js): where it connects and how long it waits to connect again.
// Who has which trace open is presence.js's (tests/js/presence.test.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { FIRST_RECONNECT_MS, LAST_RECONNECT_MS, liveSocketUrl, nextReconnectDelay } from "../../static/js/live.js";

test("the socket follows the page's scheme and host, narrowed to a project when the page names one", () => {
  assert.equal(liveSocketUrl({ protocol: "https:", host: "studio.example:8443" }, "12"), "wss://studio.example:8443/ws/live/?project=12");
  assert.equal(liveSocketUrl({ protocol: "http:", host: "localhost:8000" }, ""), "ws://localhost:8000/ws/live/");
  assert.equal(liveSocketUrl({ protocol: "http:", host: "h" }, undefined), "ws://h/ws/live/");
  assert.equal(liveSocketUrl({ protocol: "http:", host: "h" }, "a b&c"), "ws://h/ws/live/?project=a%20b%26c");
});

test("a lost socket waits twice as long each time before connecting again, never more than 15 s", () => {
  const waits = [FIRST_RECONNECT_MS];
  for (let i = 0; i < 6; i++) waits.push(nextReconnectDelay(waits[waits.length - 1]));
  assert.deepEqual(waits, [1000, 2000, 4000, 8000, 15000, 15000, 15000]);
  assert.equal(LAST_RECONNECT_MS, 15000);
});
