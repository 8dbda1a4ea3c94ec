// @ts-check
/* Building page elements. Text always goes in as textContent: nothing imported or typed is parsed as HTML. */

const SVGNS = "http://www.w3.org/2000/svg";

/** @type {(id: string) => HTMLElement | null} */
export const $ = (id) => document.getElementById(id);

/* An element ``tag`` with ``attrs`` ("class" its class names, data-* its data attributes, any other a property of it)
   and ``text`` as its text (none when undefined or null). */
/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag @param {Record<string, any> | null} [attrs] @param {unknown} [text] @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k.startsWith("data-")) node.setAttribute(k, v); else node[k] = v;
  }
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/* An SVG element ``tag`` with ``attrs`` as its attributes and ``text`` as its text (none when undefined). */
/** @param {string} tag @param {Record<string, unknown> | null} [attrs] @param {unknown} [text] @returns {SVGElement} */
export function svg(tag, attrs, text) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

/* A page's JSON data block (rendered by Django's json_script), or ``fallback`` when absent or unreadable. */
/** @param {string} id @param {any} [fallback] @returns {any} */
export function readJSON(id, fallback) {
  const node = document.getElementById(id);
  if (!node) return fallback;
  try { return JSON.parse(node.textContent); } catch (e) { return fallback; }
}
