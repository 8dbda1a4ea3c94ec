// @ts-check
// The one CSV writer of the dashboards (dashboard.js, round_dashboard.js): a table {header: [...], rows: [[...]]}
// becomes a .csv download. Quoting alone does not stop a spreadsheet from evaluating a text cell that starts
// with = + - @ (or a tab / carriage return before one), so such cells get OWASP's leading apostrophe.
// Numbers are ours, not typed by anyone, and a negative α stays a number. An ES module; cell and text are pure.

export function csvCell(v) {
  if (typeof v === "number") return String(v);
  let s = v === null || v === undefined ? "" : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
  return /[",\n\r']/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

export function csvText(table) {
  return [table.header, ...table.rows].map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
}

export function csvDownload(name, table) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([csvText(table)], { type: "text/csv" }));
  link.download = name + ".csv";
  document.body.append(link);
  link.click();
  link.remove();
}

/* Every [data-csv] button inside root downloads tables[its name], when that table is there (read at the click:
   the page fills tables as its figures arrive). */
export function csvWire(root, tables) {
  root.querySelectorAll("[data-csv]").forEach((button) => button.addEventListener("click", () => {
    const table = tables[button.dataset.csv];
    if (table) csvDownload(button.dataset.csv, table);
  }));
}
