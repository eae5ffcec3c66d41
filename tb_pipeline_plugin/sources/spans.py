"""What the picker can say about a span before its trace is read.

`torch.profiler.tensorboard_trace_handler` names each trace file
`{worker}.{time}.pt.trace.json`, the time it wrote the file: nanoseconds
since the epoch (`time.time_ns()`, torch 1.11 on), milliseconds before that
(the 2021 Kineto samples). Any other number (a hand-made `w.3.pt.trace.json`)
names no time.
"""
from __future__ import annotations

from ..analysis.overview import plausible_unix_s

# Digits of the id -> its unit in seconds: ns, µs, ms, s.
_UNITS_S = {19: 1e-9, 16: 1e-6, 13: 1e-3, 10: 1.0}


def written_unix_s(span: str) -> float | None:
    """When the span's file was written (Unix seconds), or None when its id is not a time."""
    unit = _UNITS_S.get(len(span)) if span.isdigit() else None
    if unit is None:
        return None
    return plausible_unix_s(int(span) * unit)


def step_range(overview: dict | None) -> dict | None:
    """First and last ProfilerStep number of a loaded overview and how many
    steps it holds; None before it is loaded, or when the trace has no step
    annotations (its one synthetic step "all")."""
    if not overview:
        return None
    numbers = [s["step"] for s in overview.get("steps") or [] if s.get("name") != "all"]
    if not numbers:
        return None
    return {"first": min(numbers), "last": max(numbers), "count": len(numbers)}


def span_info(spans: list[str], overview_of) -> list[dict]:
    """The `span_info` of one worker's spans (ascending ids: oldest first);
    `overview_of(span)`: the span's loaded overview, or None."""
    out = []
    for order, span in enumerate(spans, start=1):
        overview = overview_of(span)
        out.append({
            "span": span, "order": order, "written_unix_s": written_unix_s(span),
            "start_unix_s": overview.get("start_unix_s") if overview else None,
            "steps": step_range(overview),
        })
    return out
