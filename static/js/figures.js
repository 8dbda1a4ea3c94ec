// @ts-check
// How the dashboards (dashboard.js, round_dashboard.js) write a figure: a share, a number, a change from the round
// before. Pure; "–" for a figure the server has none of (null).

export function pct(v) { return v === null || v === undefined ? "–" : (v * 100).toFixed(1) + " %"; }

export function num(v, digits) { return v === null || v === undefined ? "–" : Number(v).toFixed(digits); }

/* A change from the round before, after its figure: " (+1.5 pp)", " (−12 s)", " (±0.000)"; "" for none. ``kind``:
   pp (a share, in percentage points), s (seconds), ratio (3 decimals), else one decimal. */
export function change(v, kind) {
  if (v === null || v === undefined) return "";
  const sign = v > 0 ? "+" : v < 0 ? "−" : "±";
  const size = Math.abs(v);
  const text = kind === "pp" ? (size * 100).toFixed(1) + " pp" : kind === "s" ? size.toFixed(0) + " s" : size.toFixed(kind === "ratio" ? 3 : 1);
  return " (" + sign + text + ")";
}
