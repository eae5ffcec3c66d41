"""Every one-run route's implementation: a loaded run (or its statistics,
or its diagnostic results) and typed values in, the route's answer out, all
but the run's reference (`run`, `worker`, `span`), which the route adds.

No HTTP and no loading here: `plugin.py` parses the parameters and asks the
provider for the loaded values; each `*_impl` returns the shape its
`contract` Struct declares (the route tests decode every body with it). The
pair routes' impls are `diff/impls/` (each on a `Pair`, diff/pair.py).
"""
from __future__ import annotations

from typing import Callable

from ..analysis.diagnostic.report import report as diagnostic_report
from ..analysis.distributed import ranks_summary
from ..analysis.rank_distribution import histogram, histogram_edges
from ..analysis.statistics.report import report as pipeline_report
from ..analysis.run import Run
from ..diff.distributed import diff_percentiles, diff_ranks
from ..sources.runs import RunInfo
from ..sources.spans import span_info
from ..sources.rank_index import MAX_RANKS_VARIABLE, RunRanks
from ..sources.tb_profiler import ProfilerNames
from ..sources.store import LoadState


def runs_impl(runs: dict[str, RunInfo], states: dict[str, LoadState], labels: dict[str, dict] | None = None,
              spans_loading: bool = False) -> dict:
    """`states`: load state of each run's default trace (runs without traces
    absent); `labels`: what names each trace file's span (by path: its steps and
    start, sources/spans.py) as far as loaded; `spans_loading`: some are
    still being read."""
    labels = labels or {}
    out = []
    for name, info in runs.items():
        state = states.get(name)
        status = state.status if state else "ready"
        out.append({
            "name": name,
            "workers": [{**w, "span_info": span_info(w["spans"], lambda span, w=w: labels.get(
                info.traces[w["name"]][span].path))} for w in info.workers()],
            "kinds": list(info.kinds),
            "status": status,
            "error": state.error if state and status == "failed" else None,
            # What discovery left out (a name clash), then what the load lost.
            "warnings": list(info.notes) + (list(state.warnings) if state else []),
            "recordings": list(info.recordings),
        })
    return {"runs": out, "loading": spans_loading or any(r["status"] == "loading" for r in out)}


def overview_impl(tp: Run) -> dict:
    return {**tp.overview(), "device_present": tp.has_device}


def operators_impl(tp: Run, group_by: str) -> dict:
    frame = tp.operators(group_by)
    return {"group_by": group_by, "device_present": tp.has_device, "total": len(frame),
            "rows": frame.to_dict("records")}


def kernels_impl(tp: Run) -> dict:
    frame = tp.kernels()
    return {"device_present": tp.has_device, "total": len(frame), "rows": frame.to_dict("records")}


def modules_impl(tp: Run) -> dict:
    return {"device_present": tp.has_device, "roots": tp.modules()}


def pipeline_impl(statistics) -> dict:
    """A run's pipeline statistics (PipelineTables) as the Pipeline view reads them."""
    return pipeline_report(statistics)


def diagnostic_impl(results) -> dict:
    """A run's diagnostic results (DiagnosticRun) as the Diagnostic view reads them."""
    return diagnostic_report(results)


# ---- timeline links (torch-tb-profiler) ------------------------------------------

def profiler_link_impl(names: ProfilerNames) -> dict:
    return {"profiler": {"run": names.run, "worker": names.worker, "span": names.span}}


# ---- distributed ----------------------------------------------------------------

# Ranks named with why they failed or what their trace lost, at most (the counts are whole).
NOTED_RANKS = 20


def distributed_impl(baseline: RunRanks, experimental: RunRanks | None = None,
                     summarise: Callable[[RunRanks], dict] = lambda s: ranks_summary(s.ready)) -> dict:
    """Each run's ranks ready so far (`provider.ranks`), their distribution
    and, with `experimental`, the two rank by rank and percentile by
    percentile. `complete` is false while a rank of either is loading.
    `summarise`: `ranks_summary` of a run's ranks, maybe remembered (left
    unchanged here: its rows are shared, its top level copied)."""
    sides = [s for s in (baseline, experimental) if s is not None]
    shaped = [dict(summarise(s)) for s in sides]
    edges = histogram_edges([[r["step_time_us"] for r in x["ranks"]] for x in shaped])
    for s, x in zip(sides, shaped):
        x["histogram"] = histogram([r["step_time_us"] for r in x["ranks"]], edges)
        x["coverage"] = _coverage(s)
    b, e = shaped[0], shaped[1] if experimental is not None else None
    complete = all(s.loading == 0 for s in sides)
    if e is None:
        return {"baseline_ranks": b, "experimental_ranks": None, "rows": [], "unmatched_ranks": [],
                "by_percentile": [], "complete": complete}
    return {"baseline_ranks": b, "experimental_ranks": e, **diff_ranks(b, e), "by_percentile": diff_percentiles(b, e),
            "complete": complete}


def _coverage(s: RunRanks) -> dict:
    warned = [(w, rec.warnings[0]) for w, rec in s.ready if rec.warnings]
    return {
        "total": s.total, "ready": len(s.ready), "loading": s.loading,
        "failed": len(s.failures),
        "failures": [{"worker": w, "text": why} for w, why in s.failures[:NOTED_RANKS]],
        "warned": len(warned),
        "warnings": [{"worker": w, "text": text} for w, text in warned[:NOTED_RANKS]],
        "left_out": s.left_out, "limit": s.limit, "limit_variable": MAX_RANKS_VARIABLE,
    }
