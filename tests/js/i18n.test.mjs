// The scripts' translations (static/js/i18n.js): with Django's catalog (/jsi18n/) loaded, a text comes back in the
// page's language; without it (these tests, a page whose catalog failed) as written. interpolate fills named
// placeholders, so a translation may put them in its own order.
import { test } from "node:test";
import assert from "node:assert/strict";
import { formatDate, formatDateTime, formatNumber, gettext, interpolate, jobStatusWord, ngettext } from "../../static/js/i18n.js";

test("without a catalog a text stays as written, and a count picks the English plural", () => {
  assert.equal(gettext("Saved"), "Saved");
  assert.equal(ngettext("%(n)s step", "%(n)s steps", 1), "%(n)s step");
  assert.equal(ngettext("%(n)s step", "%(n)s steps", 2), "%(n)s steps");
  assert.equal(jobStatusWord("running"), "running");
  assert.equal(jobStatusWord("unheard-of"), "unheard-of");
});

test("with the catalog the page's language answers", () => {
  const catalog = { Saved: "已保存", running: "运行中" };
  globalThis.gettext = (text) => catalog[text] || text;
  try {
    assert.equal(gettext("Saved"), "已保存");
    assert.equal(jobStatusWord("running"), "运行中");
  } finally {
    delete globalThis.gettext;
  }
});

test("placeholders are filled by name, in the translation's order; an unknown one stays", () => {
  assert.equal(interpolate("Step %(step)s of %(count)s", { step: 2, count: 9 }), "Step 2 of 9");
  assert.equal(interpolate("第 %(step)s 步，共 %(count)s 步", { count: 9, step: 2 }), "第 2 步，共 9 步");
  assert.equal(interpolate("%(missing)s left", {}), "%(missing)s left");
});

test("numbers follow the page's language (English without a document)", () => {
  assert.equal(formatNumber(12345.5), "12,345.5");
});

test("dates follow the page's language: English without a document, Chinese on a zh-hans page", () => {
  const noon = "2026-12-07T12:00:00Z";  // the 7th in every time zone within ±11 hours
  assert.match(formatDate(noon), /^Dec 7, 2026$/);
  assert.equal(formatDateTime("not a date"), "");
  assert.equal(formatDate(null), "");
  globalThis.document = { documentElement: { lang: "zh-hans" } };
  try {
    assert.equal(formatDate(noon), "2026年12月7日");
    assert.match(formatDateTime(noon), /^2026年12月7日 \d\d:00$/);
  } finally {
    delete globalThis.document;
  }
});
