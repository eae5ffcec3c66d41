"""`--format text` (the default): fixed-width text for a terminal or a CI log.

Tables keep the numbers as the routes give them (µs, bytes, % with their
decimals; `-` for null), so a reader can diff two logs or grep a value;
column names carry their units. Gate lines start with the outcome's word
(`REGRESSION:`, `PASSED:` ...) for log searches.
"""
from __future__ import annotations

import math

from ..diff.delta import pct_name
from .gates import OUTCOME_WORDS
from .model import MetricRow, Report
from .words import difference_lines, headline


def render(r: Report) -> str:
    out: list[str] = [f"baseline:     {r.baseline.source}", f"experimental: {r.experimental.source}", ""]
    if r.comparability:
        out += ["How the runs differ besides the change:"] + [f"  {line}" for line in difference_lines(r)] + [""]
    out += [headline(r), r.sentence]
    if r.step.basis:
        out.append(f"(Step time: {r.step.basis}.)")
    if r.noise.source == "measured":
        out.append(f"({r.noise.note}.)")
    else:
        out.append(f"(Noise bands assume recordings of one configuration land within ±{r.noise.between_run_pct:g} % "
                   "of each other: --between-run-pct; `tb-pipeline record --repeat 3` records groups whose noise is "
                   "measured.)")
    if r.conclusive is not None:
        out.append(f"What would make it conclusive: {r.conclusive.text}")
    if r.note:
        out.append(f"({r.note})")
    if r.pipeline is not None:
        out += ["", "Pipeline statistics (recorded steps)", _metric_table(r.pipeline.rows, steps=True)]
        out += r.pipeline.notes
    if r.memory.sentence:
        out += ["", f"Memory: {r.memory.sentence}"]
        if r.memory.rows:
            out += [f"Bytes alive at each run's peak by module ({r.memory.device})",
                    table([{"part": m.label, "baseline_bytes": m.baseline, "experimental_bytes": m.experimental,
                             "delta_bytes": m.delta, "delta_pct": m.delta_pct} for m in r.memory.rows],
                           ["part", "baseline_bytes", "experimental_bytes", "delta_bytes", "delta_pct"])]
    if r.memory.snapshot_rows:
        out += ["", "CUDA memory snapshots (bytes)",
                table([{"metric": m.label, "baseline_bytes": m.baseline, "experimental_bytes": m.experimental,
                         "delta_bytes": m.delta, "delta_pct": m.delta_pct} for m in r.memory.snapshot_rows],
                      ["metric", "baseline_bytes", "experimental_bytes", "delta_bytes", "delta_pct"])]
    if r.contributors:
        out += ["", f"Top {r.top} contributors to the step-time delta (µs)",
                table([{"name": c.name, "baseline_us": c.baseline_us, "experimental_us": c.experimental_us,
                         "delta_us": c.delta_us, "delta_pct": c.delta_pct, "share_pct": c.share_pct,
                         "verdict": c.significance.verdict, "ci_low_us": c.significance.ci_low,
                         "ci_high_us": c.significance.ci_high}
                        for c in r.contributors],
                       ["name", "baseline_us", "experimental_us", "delta_us", "delta_pct", "share_pct", "verdict",
                        "ci_low_us", "ci_high_us"]),
                "(delta_pct: each part's own change, + slower; share_pct: its part of the step's delta, negative "
                "when it went the other way)"]
    out += ["", "Overview (delta = experimental - baseline)", _metric_table(r.overview, names=True)]
    if r.overview_note:
        out.append(f"({r.overview_note})")
    for title, rows_of, shape in (("operators", r.operators, any(row.input_shape for row in r.operators.rows)),
                                  ("kernels", r.kernels, False)):
        m = rows_of.measure
        per = f" per {rows_of.per_unit}" if rows_of.per_unit else ""
        out += ["", f"Top {r.top} {title} by |delta {m}| (µs{per})"]
        if not rows_of.rows:
            out.append(f"(no {title} in either trace)")
            continue
        columns = ["name"] + (["input_shape"] if shape else []) + [
            "baseline_calls", "experimental_calls", f"baseline_{m}", f"experimental_{m}", f"delta_{m}", pct_name(m),
            "verdict"]
        out.append(table([{"name": t.short_name or t.name, "input_shape": t.input_shape,
                            "baseline_calls": t.baseline_calls,
                            "experimental_calls": t.experimental_calls, f"baseline_{m}": t.baseline_us,
                            f"experimental_{m}": t.experimental_us, f"delta_{m}": t.delta_us, pct_name(m): t.delta_pct,
                            "verdict": t.significance.verdict if t.significance else None} for t in rows_of.rows],
                          columns))
        out += _full_names(rows_of.rows)
    out += ["", "Step times of the profiled steps, in order (µs)",
            "baseline:     " + " ".join(_cell(v) for v in r.step_times.baseline_us),
            "experimental: " + " ".join(_cell(v) for v in r.step_times.experimental_us)]
    for g in r.gates:
        out.append(f"{OUTCOME_WORDS[g.outcome]}: {g.message}")
    return "\n".join(out) + "\n"


def _full_names(rows) -> list[str]:
    """The full names of the rows shown by a shorter display name (kernels), one a line."""
    folded = [t for t in rows if t.short_name and t.short_name != t.name]
    return ["Full names:"] + [f"  {t.short_name} = {t.name}" for t in folded] if folded else []


def _metric_table(rows: list[MetricRow], names: bool = False, steps: bool = False) -> str:
    """Rows by metric name (`names`, what `--fail-if` gates) or label, each with its unit: the numbers are
    as the routes give them, so a row without its unit ("us", "pct", "items_per_s") would read as any."""
    columns = ["metric", "unit", "baseline", "experimental", "delta", "delta_pct", "verdict"]
    data = []
    for m in rows:
        sig = m.significance
        data.append({"metric": m.name if names else m.label, "unit": m.unit, "baseline": m.baseline,
                     "experimental": m.experimental, "delta": m.delta, "delta_pct": m.delta_pct,
                     "verdict": sig.verdict if sig else None,
                     "steps": f"{sig.baseline_steps} vs {sig.experimental_steps}" if sig else None})
    return table(data, columns + (["steps"] if steps else []))


def table(rows: list[dict], columns: list[str]) -> str:
    """Plain aligned text: numbers right-aligned, text left, '-' for null."""
    header = [_short(c) for c in columns]
    body = [[_cell(row.get(c)) for row in rows] for c in columns]
    widths = [max([len(h)] + [len(v) for v in col]) for h, col in zip(header, body)]
    numeric = [all(_is_num(row.get(c)) for row in rows) for c in columns]
    lines = ["  ".join(h.rjust(w) if n else h.ljust(w) for h, w, n in zip(header, widths, numeric))]
    for i in range(len(rows)):
        lines.append("  ".join(col[i].rjust(w) if n else col[i].ljust(w) for col, w, n in zip(body, widths, numeric)))
    return "\n".join(line.rstrip() for line in lines)


def _short(column: str) -> str:
    return column.replace("baseline_", "b_").replace("experimental_", "e_")


def _is_num(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e15 else f"{v:.3e}"
    if isinstance(v, str) and len(v) > 60:
        return v[:57] + "..."
    return str(v)
