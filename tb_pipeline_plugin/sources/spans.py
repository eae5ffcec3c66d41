"""What the run picker names a span by: its order, its steps, its start.

`torch.profiler.tensorboard_trace_handler` names each trace file
`{worker}.{time}.pt.trace.json`, the time it wrote the file: nanoseconds
since the epoch (`time.time_ns()`, torch 1.11 on), milliseconds before that
(the 2021 Kineto samples). Any other number (a hand-made `w.3.pt.trace.json`)
names no time.

Steps and start come from the span's overview. A run's default trace is
loaded for its status anyway (`runs` prefetches it); the other spans of a
worker that has several are asked for as rank records (sources/rollup.py:
the span's label with its numbers, read from the parse cache once a trace
has been parsed, else parsed in the background), so that the picker can tell them apart before one is picked;
so is the default once evicted from the trace store. A worker's only span
other than the default (a rank of a distributed run) is named by what is
already loaded, never parsed for a label.
"""
from __future__ import annotations

from ..analysis.overview import plausible_unix_s, step_range
from .artifacts import Source
from .runs import RunInfo, resolve
from .store import LoadState, LoadStore

# Digits of the id -> its unit in seconds: ns, µs, ms, s.
_UNITS_S = {19: 1e-9, 16: 1e-6, 13: 1e-3, 10: 1.0}


def written_unix_s(span: str) -> float | None:
    """When the span's file was written (Unix seconds), or None when its id is not a time."""
    unit = _UNITS_S.get(len(span)) if span.isdigit() else None
    if unit is None:
        return None
    return plausible_unix_s(int(span) * unit)


def span_info(spans: list[str], label_of) -> list[dict]:
    """The `span_info` of one worker's spans (ascending ids: oldest first);
    `label_of(span)`: the span's label (`overview_label`, `record_label`),
    or None before it is loaded."""
    out = []
    for order, span in enumerate(spans, start=1):
        label = label_of(span) or {}
        out.append({
            "span": span, "order": order, "written_unix_s": written_unix_s(span),
            "start_unix_s": label.get("start_unix_s"), "steps": label.get("steps"),
        })
    return out


def overview_label(overview: dict) -> dict:
    """What the picker names a span by, from its loaded overview."""
    return {"start_unix_s": overview.get("start_unix_s"), "steps": step_range(overview)}


def record_label(record) -> dict:
    """The same from the span's rank record (sources/rollup.py:RankRecord)."""
    steps = (None if record.first_step is None else
             {"first": record.first_step, "last": record.last_step, "count": record.profiler_steps})
    return {"start_unix_s": record.start_unix_s, "steps": steps}


def span_labels(runs: dict[str, RunInfo], defaults: dict[str, LoadState],
                   summaries: LoadStore) -> tuple[dict[str, dict], bool]:
    """(label by trace path, whether some are still being read).
    `defaults`: the load state of each run's default trace (the trace store's);
    `summaries`: the rank-summary store (its records)."""
    out: dict[str, dict] = {}
    loading = False
    for name, info in runs.items():
        if not info.traces:
            continue
        default = resolve(runs, name)
        state = defaults.get(name)
        parsed = state is not None and state.status == "ready"
        if parsed and state.value is not None:
            out[default.path] = overview_label(state.value.overview())
        for spans in info.traces.values():
            several = len(spans) > 1
            for tf in spans.values():
                if tf.path in out:
                    continue
                # The default, parsed but evicted since, is read back from the parse cache.
                wanted = several or (tf.path == default.path and parsed)
                got = summaries.summary(Source("rank_summary", tf.path), tf.size, tf.mtime, prefetch=wanted)
                if got.status == "ready" and got.value is not None:
                    out[tf.path] = record_label(got.value)
                loading = loading or (wanted and got.status == "loading")
    return out, loading
