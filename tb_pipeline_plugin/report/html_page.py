"""`--format html`: one self-contained file a reviewer opens from a CI
artifact: the verdict and the sentence, the waterfall, the step-time trend
of both runs, and sortable delta tables.

Everything is inline (style, script, charts as SVG, the report's JSON in a
`<script type="application/json">` for anyone who wants the numbers), and a
Content-Security-Policy forbids every request, so the file works offline and
a trace name can never make the browser fetch anything. Each numeric cell
carries its exact value in `data-value` (what the sort uses; the text is
rounded for reading).
"""
from __future__ import annotations

from html import escape

import msgspec

from .gates import OUTCOME_WORDS
from .html_assets import SCRIPT, STYLE
from .model import MetricRow, Report, Table
from .svg import trend, waterfall
from .words import NONE, SHARE_NOTE, difference_lines, headline, legend, share, signed, signed_pct, value, verdict_cell

# Nothing may be fetched: no connection, no image but data:, only the inline style and script.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def render(r: Report) -> str:
    sig = r.step.significance
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>tb-pipeline diff: {escape(headline(r))}</title><style>{STYLE}</style></head><body>",
        "<header>",
        f'<h1 id="verdict" data-direction="{r.step.direction}" data-verdict="{sig.verdict}">{escape(headline(r))}</h1>',
        f'<p id="sentence">{escape(r.sentence)}</p>',
        f'<p class="meta">baseline <code>{escape(r.baseline.source)}</code> · experimental '
        f"<code>{escape(r.experimental.source)}</code> · "
        + (f'<span id="step-basis">step time: {escape(r.step.basis)}</span> · ' if r.step.basis else "")
        + f"{escape(r.noise.note)}</p>",
        f'<p class="legend">Marks: {escape(legend())}. Δ = experimental − baseline: + slower or larger, '
        "− faster or smaller.</p>",
    ]
    if r.conclusive is not None:
        parts.append(f'<aside id="conclusive"><strong>What would make it conclusive:</strong> '
                     f"{escape(r.conclusive.text)}</aside>")
    if r.comparability:
        items = "".join(f"<li>{escape(line)}</li>" for line in difference_lines(r))
        parts.append(f'<aside id="comparability"><strong>How the runs differ besides the change:</strong>'
                     f"<ul>{items}</ul></aside>")
    if r.note:
        parts.append(f'<p class="muted">{escape(r.note)}</p>')
    parts.append("</header>")
    if r.gates:
        parts.append(_section("gates", "Gates", _gates(r)))
    parts.append(_section("waterfall", "Waterfall", waterfall(r)))
    parts.append(_section("trend", "Step time of both runs", trend(r)))
    parts.append(_section("contributors", "Contributors to the step-time change", _contributors(r)))
    parts.append(_section("overview", "Overview", _metrics("overview-table", r.overview, r.overview_note)))
    if r.pipeline is not None:
        notes = " ".join([r.pipeline.clause + "."] + [n + "." for n in r.pipeline.notes])
        parts.append(_section("pipeline", "Pipeline statistics (recorded steps)",
                              _metrics("pipeline-table", r.pipeline.rows, notes)))
    parts.append(_section("operators", "Operators", _delta_table("operators-table", "operators", r.operators)))
    parts.append(_section("kernels", "Kernels", _delta_table("kernels-table", "kernels", r.kernels)))
    memory = f'<p>{escape(r.memory.sentence or r.memory.message or "No memory events in either run.")}</p>'
    if r.memory.rows:
        memory += _metrics("memory-table", r.memory.rows, None, "Bytes alive at the peak by module")
    if r.memory.snapshot_rows:
        memory += _metrics("snapshot-table", r.memory.snapshot_rows, None, "CUDA memory snapshots")
    parts.append(_section("memory", f"Memory ({r.memory.device or 'no device'})", memory))
    data = msgspec.json.encode(r).decode("utf-8").replace("<", "\\u003c")
    parts += [f'<footer>Written by <code>tb-pipeline diff --format html</code> (report_version {r.report_version}). '
              'The numbers behind this page are in the element <code>#report-data</code> '
              "(the shape of docs/report.schema.json).</footer>",
              f'<script type="application/json" id="report-data">{data}</script>',
              f"<script>{SCRIPT}</script></body></html>"]
    return "\n".join(parts) + "\n"


def _section(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}"><h2>{escape(title)}</h2>{body}</section>'


def _gates(r: Report) -> str:
    rows = [[_text(g.gate), (f'<td class="outcome-{g.outcome}">{escape(OUTCOME_WORDS[g.outcome])}</td>'),
             _num(g.baseline, g.unit), _num(g.experimental, g.unit), _num(g.delta, g.unit, delta=True),
             _pct(g.delta_pct), _text(g.message)] for g in r.gates]
    return _table("gates-table", None, [("Gate", "text"), ("Outcome", "text"), ("Baseline", "num"),
                                        ("Experimental", "num"), ("Δ", "num"), ("Δ %", "num"), ("Why", "text")], rows)


def _contributors(r: Report) -> str:
    step = r.step
    rows = [[_text("Step time"), _num(step.baseline_us, "us"), _num(step.experimental_us, "us"),
             _num(step.delta_us, "us", delta=True), _pct(step.delta_pct, "Δ % of the step"),
             f'<td class="num">{NONE}</td>', _verdict(step.significance)]]
    rows += [[_text(c.name), _num(c.baseline_us, "us"), _num(c.experimental_us, "us"),
              _num(c.delta_us, "us", delta=True), _pct(c.delta_pct, "the part's own change"),
              _share(c.share_pct), _verdict(c.significance)] for c in r.contributors]
    caption = (f"The step time, then {len(r.contributors)} of {r.contributors_total} contributors "
               f"(significant first, then by |Δ|). {SHARE_NOTE}")
    return _table("contributors-table", caption, [("Part", "text"), ("Baseline", "num"), ("Experimental", "num"),
                                                  ("Δ", "num"), ("Δ %", "num"), ("Share of Δ", "num"),
                                                  ("Verdict", "text")], rows)


def _metrics(tid: str, rows: list[MetricRow], note: str | None, first: str = "Metric") -> str:
    body = [[_text(m.label), _num(m.baseline, m.unit), _num(m.experimental, m.unit),
             _num(m.delta, m.unit, delta=True), _pct(m.delta_pct), _verdict(m.significance)]
            for m in rows]
    return _table(tid, note, [(first, "text"), ("Baseline", "num"), ("Experimental", "num"), ("Δ", "num"),
                              ("Δ %", "num"), ("Verdict", "text")], body)


def _delta_table(tid: str, noun: str, t: Table) -> str:
    if not t.rows:
        return f'<p class="muted">No {noun} in either run.</p>'
    shapes = any(row.input_shape for row in t.rows)
    body = [[_name(row.name, row.short_name)] + ([_text(row.input_shape or "", code=True)] if shapes else []) + [
             _num(row.baseline_calls, "count"), _num(row.experimental_calls, "count"), _num(row.baseline_us, "us"),
             _num(row.experimental_us, "us"), _num(row.delta_us, "us", delta=True), _pct(row.delta_pct),
             _verdict(row.significance)] for row in t.rows]
    caption = (f"The {len(t.rows)} of {t.total} {noun} whose {t.measure} changed most (largest |Δ| first); "
               "calls and times of the baseline (B) and the experimental run (E)"
               + (f", times in µs per {t.per_unit}." if t.per_unit else "."))
    columns = [("Name", "text")] + ([("Input shape", "text")] if shapes else []) + [
        ("B calls", "num"), ("E calls", "num"), ("Baseline", "num"), ("Experimental", "num"), ("Δ", "num"),
        ("Δ %", "num"), ("Verdict", "text")]
    return _table(tid, caption, columns, body)


def _table(tid: str, caption: str | None, columns: list[tuple[str, str]], rows: list[list[str]]) -> str:
    head = "".join(f'<th scope="col" class="{kind}"><button type="button">{escape(title)}</button></th>'
                   for title, kind in columns)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    body = "".join("<tr>" + "".join(cells) + "</tr>" for cells in rows)
    return f'<table class="sortable" id="{tid}">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _name(name: str, short: str | None) -> str:
    """A row's name cell: a kernel's display name, its full name in the tooltip."""
    if not short or short == name:
        return _text(name, code=True)
    return f'<td title="{escape(name, quote=True)}"><code>{escape(short)}</code></td>'


def _text(text: str, code: bool = False) -> str:
    inner = f"<code>{escape(text)}</code>" if code else escape(text)
    return f"<td>{inner}</td>"


def _verdict(sig) -> str:
    return f'<td class="verdict">{escape(verdict_cell(sig))}</td>'


def _num(v, unit: str | None, delta: bool = False) -> str:
    if v is None or isinstance(v, str):
        return f'<td class="num">{escape(v if isinstance(v, str) else NONE)}</td>'
    shown = signed(v, unit) if delta else value(v, unit)
    direction = (' up' if v > 0 else ' down' if v < 0 else '') if delta else ''
    return f'<td class="num{direction}" data-value="{v!r}">{escape(shown)}</td>'


def _share(pct) -> str:
    if pct is None:
        return f'<td class="num">{NONE}</td>'
    return f'<td class="num" data-value="{pct!r}" title="share of the step\'s Δ">{escape(share(pct))}</td>'


def _pct(pct, title: str | None = None) -> str:
    if pct is None:
        return f'<td class="num">{NONE}</td>'
    tip = f' title="{escape(title)}"' if title else ""
    return f'<td class="num" data-value="{pct!r}"{tip}>{escape(signed_pct(pct))}</td>'
