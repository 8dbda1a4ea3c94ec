// The one CSV writer of the dashboards (dashboard.js, round_dashboard.js): a table {header: [...], rows: [[...]]}
// becomes a .csv download. Quoting alone does not stop a spreadsheet from evaluating a text cell that starts
// with = + - @ (or a tab / carriage return before one), so such cells get OWASP's leading apostrophe.
// Numbers are ours, not typed by anyone, and a negative α stays a number.
(function () {
  function cell(v) {
    if (typeof v === "number") return String(v);
    let s = v === null || v === undefined ? "" : String(v);
    if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
    return /[",\n\r']/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  function text(table) {
    return [table.header, ...table.rows].map((r) => r.map(cell).join(",")).join("\r\n") + "\r\n";
  }

  function download(name, table) {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text(table)], { type: "text/csv" }));
    link.download = name + ".csv";
    document.body.append(link);
    link.click();
    link.remove();
  }

  // Every [data-csv] button inside root downloads tables[its name], when that table is there.
  function wire(root, tables) {
    root.querySelectorAll("[data-csv]").forEach((button) => button.addEventListener("click", () => {
      const table = tables[button.dataset.csv];
      if (table) download(button.dataset.csv, table);
    }));
  }

  window.studioCsv = { cell: cell, text: text, download: download, wire: wire };
})();
