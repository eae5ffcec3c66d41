"""`--format markdown`: GitHub-flavoured, for a pull-request comment or
`$GITHUB_STEP_SUMMARY`.

The verdict comes first (a reviewer reads one line), then the gates and one
short table (the contributors to the step-time change); everything else
is folded in `<details>`, so the comment stays short. The marks (● ≈ ?)
are explained once, under the verdict; a table's cells carry the mark
alone. Names from traces are escaped: a kernel called `a|b` or `<img>`
stays text in its cell.
"""
from __future__ import annotations

import html
import re

from .gates import FAILED, OUTCOME_WORDS
from .model import MetricRow, Report, Table
from .words import (MARKS, NONE, SHARE_NOTE, difference_lines, headline, legend, mark, share, signed, signed_pct,
                    value)

# Characters GitHub's markdown would read as syntax inside a table cell.
_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]|~#"})
# The same but the backtick: our own sentences quote commands as `code`.
_PROSE = str.maketrans({c: "\\" + c for c in "\\*_[]|~#"})


def render(r: Report) -> str:
    out = [f"### {_text(headline(r))}", "", _text(r.sentence), ""]
    meta = [f"baseline {_code(r.baseline.source)}", f"experimental {_code(r.experimental.source)}",
            *([f"step time: {_prose(r.step.basis)}"] if r.step.basis else []), _prose(r.noise.note), legend()]
    out += ["<sub>" + " · ".join(meta) + "</sub>", ""]
    if r.conclusive is not None:
        out += [f"> **What would make it conclusive:** {_prose(r.conclusive.text)}", ""]
    if r.comparability:
        out += ["**How the runs differ besides the change**", ""]
        out += [f"- {_prose(line)}" for line in difference_lines(r)] + [""]
    if r.note:
        out += [f"> {_prose(r.note)}", ""]
    if r.gates:
        out += ["| Gate | Outcome | Baseline | Experimental | Δ | Δ % |", "|---|---|--:|--:|--:|--:|"]
        for g in r.gates:
            word = OUTCOME_WORDS[g.outcome]
            out.append(_row([_code(g.gate), f"**{word}**" if g.outcome == FAILED else word,
                             value(g.baseline, g.unit), value(g.experimental, g.unit), signed(g.delta, g.unit),
                             signed_pct(g.delta_pct)]))
        out += ["", "<details><summary>Gate details</summary>", ""]
        out += [f"- {_code(g.gate)}: {OUTCOME_WORDS[g.outcome]}: {_prose(g.message)}" for g in r.gates]
        out += ["", "</details>", ""]
    out += _contributors(r)
    out += _fold(f"Overview ({len(r.overview)} metrics, Δ = experimental − baseline)", _metrics(r.overview),
                 r.overview_note)
    if r.pipeline is not None:
        out += _fold("Pipeline statistics (recorded steps)", _metrics(r.pipeline.rows),
                     " ".join([_text(r.pipeline.clause) + "."] + [_text(n) + "." for n in r.pipeline.notes]))
    out += _fold(_table_title("operators", r.operators), _delta_table(r.operators))
    out += _fold(_table_title("kernels", r.kernels), _delta_table(r.kernels))
    memory_rows = _metrics(r.memory.rows, "Bytes alive at the peak") if r.memory.rows else []
    out += _fold(f"Memory ({_html(r.memory.device or 'no device')})", memory_rows,
                 _text(r.memory.sentence or r.memory.message or "No memory events in either run."))
    if r.memory.snapshot_rows:
        out += _fold("CUDA memory snapshots", _metrics(r.memory.snapshot_rows, "Snapshot"))
    out += _fold("Waterfall: from the baseline's step to the experimental's", _waterfall(r))
    out += _fold("Step times of the profiled steps", _step_times(r))
    return "\n".join(out).rstrip() + "\n"


def _contributors(r: Report) -> list[str]:
    step = r.step
    out = ["| | Baseline | Experimental | Δ | Δ % | Share of Δ | |", "|---|--:|--:|--:|--:|--:|---|",
           _row(["**Step time**", value(step.baseline_us, "us"), value(step.experimental_us, "us"),
                 f"**{signed(step.delta_us, 'us')}**", signed_pct(step.delta_pct), NONE, mark(step.significance)])]
    for c in r.contributors:
        out.append(_row([_text(c.name), value(c.baseline_us, "us"), value(c.experimental_us, "us"),
                         signed(c.delta_us, "us"), signed_pct(c.delta_pct), share(c.share_pct),
                         mark(c.significance)]))
    notes = [SHARE_NOTE]
    if r.contributors_total > len(r.contributors):
        notes.append(f"{r.contributors_total - len(r.contributors)} smaller contributors not shown (`--top N`).")
    return out + ["", f"<sub>{' '.join(_prose(n) for n in notes)}</sub>", ""]


def _metrics(rows: list[MetricRow], first: str = "Metric") -> list[str]:
    out = [f"| {first} | Baseline | Experimental | Δ | Δ % | |", "|---|--:|--:|--:|--:|---|"]
    for m in rows:
        out.append(_row([_text(m.label), value(m.baseline, m.unit), value(m.experimental, m.unit),
                         signed(m.delta, m.unit), signed_pct(m.delta_pct), mark(m.significance)]))
    return out


def _table_title(noun: str, t: Table) -> str:
    if not t.total:
        return f"{noun.capitalize()}: none in either run"
    per = f" (µs per {t.per_unit})" if t.per_unit else ""
    return f"Top {len(t.rows)} of {t.total} {noun} by Δ {t.measure}{per}"


def _delta_table(t: Table) -> list[str]:
    if not t.rows:
        return ["No rows: neither run has any."]
    shapes = any(row.input_shape for row in t.rows)
    out = ["| Name |" + (" Input shape |" if shapes else "") + " Calls | Baseline | Experimental | Δ | Δ % | |",
           "|---|" + ("---|" if shapes else "") + "--:|--:|--:|--:|--:|---|"]
    for row in t.rows:
        calls = (value(row.baseline_calls, "count") if row.baseline_calls == row.experimental_calls else
                 f"{value(row.baseline_calls, 'count')} → {value(row.experimental_calls, 'count')}")
        out.append(_row([_code(row.short_name or row.name)] + ([_text(row.input_shape or "")] if shapes else []) + [
            calls, value(row.baseline_us, "us"), value(row.experimental_us, "us"), signed(row.delta_us, "us"),
            signed_pct(row.delta_pct), mark(row.significance)]))
    folded = [row for row in t.rows if row.short_name and row.short_name != row.name]
    if folded:
        out += ["", "Full names:", ""] + [f"- {_code(row.short_name)}: {_code(row.name)}" for row in folded]
    return out


def _waterfall(r: Report) -> list[str]:
    out = ["| Bar | From | To | Change | |", "|---|--:|--:|--:|---|"]
    for b in r.waterfall:
        change = NONE if b.kind == "total" else signed(b.end_us - b.start_us, "us")
        out.append(_row([_text(b.label), value(b.start_us, "us"), value(b.end_us, "us"), change,
                         MARKS[b.verdict] if b.verdict else ""]))
    return out


def _step_times(r: Report) -> list[str]:
    t = r.step_times
    out = ["| Step | Baseline | Experimental |", "|--:|--:|--:|"]
    for i in range(max(len(t.baseline_us), len(t.experimental_us))):
        cells = [value(s[i], "us") if i < len(s) else "" for s in (t.baseline_us, t.experimental_us)]
        out.append(_row([str(i + 1)] + cells))
    return out


def _fold(summary: str, body: list[str], note: str | None = None) -> list[str]:
    # Blank lines around the body: GitHub renders markdown inside <details> only then.
    return (["<details>", f"<summary>{_html(summary)}</summary>", ""] + body + ([""] + [note] if note else [])
            + ["", "</details>", ""])


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _html(text: str) -> str:
    return html.escape(text, quote=False)


def _text(text: str) -> str:
    """Trace names and sentences as text: no HTML, no markdown syntax, one line."""
    return _html(text).translate(_SPECIAL).replace("\n", " ")


def _prose(text: str) -> str:
    """Our own sentences (noise notes, advice, gate messages): `code` stays code, no HTML."""
    return _html(text).translate(_PROSE).replace("\n", " ")


def _code(text: str) -> str:
    """`text` as a code span: fenced by one backtick more than its longest
    run of them (padded, so a name starting with one survives); the pipe,
    a cell border even inside code, escaped as GitHub's tables ask."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    inner = text.replace("|", "\\|").replace("\n", " ")
    return f"{fence}{pad}{inner}{pad}{fence}"

