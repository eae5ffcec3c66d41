"""The HTML report's style sheet and script, inlined into every file
(report/html_page.py): the report is opened from a CI artifact or an
attachment, where nothing beside it can be fetched. Kept as Python strings,
not package data, so an installed wheel always has them.

The script only sorts tables: a click on a column's button orders the rows
by that column's `data-value` (numbers; text where a cell has none), a
second click reverses. Without script the tables read in the routes' order.
"""

STYLE = """
:root { --fg: #212121; --muted: #616161; --line: #e0e0e0; --slower: #c62828; --faster: #2e7d32; --bg-note: #fff8e1; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); margin: 0 auto;
       max-width: 1100px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0; }
h1[data-direction="slower"][data-verdict="significant"] { color: var(--slower); }
h1[data-direction="faster"][data-verdict="significant"] { color: var(--faster); }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
p { margin: 6px 0; }
.meta, .legend, .muted, caption { color: var(--muted); font-size: 13px; }
aside { background: var(--bg-note); border-left: 4px solid #f9a825; padding: 8px 12px; margin: 10px 0; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
td:first-child { min-width: 16em; }
td.verdict { white-space: nowrap; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
caption { text-align: left; padding: 2px 0 6px; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { text-align: left; white-space: nowrap; background: #fafafa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th button { all: unset; cursor: pointer; }
th button::after { content: " \\2195"; color: #bdbdbd; }
th[aria-sort="ascending"] button::after { content: " \\2191"; color: var(--fg); }
th[aria-sort="descending"] button::after { content: " \\2193"; color: var(--fg); }
td.up { color: var(--slower); }
td.down { color: var(--faster); }
td.outcome-failed, td.outcome-cannot_evaluate { color: var(--slower); font-weight: 600; }
td.outcome-passed { color: var(--faster); }
svg { max-width: 100%; height: auto; font-size: 12px; }
svg .grid { stroke: #eeeeee; }
svg .tick, svg .value { fill: var(--muted); }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
"""

SCRIPT = """
(function () {
  function key(cell) {
    var v = cell.getAttribute("data-value");
    if (v !== null && v !== "") { var n = Number(v); if (!isNaN(n)) return n; }
    return cell.textContent.trim().toLowerCase();
  }
  function compare(a, b) {
    if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
    return typeof a === "number" ? -1 : 1;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      var button = th.querySelector("button");
      if (!button) return;
      button.addEventListener("click", function () {
        var descending = th.getAttribute("aria-sort") !== "descending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var c = compare(key(a.cells[col]), key(b.cells[col]));
          return descending ? -c : c;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
"""
