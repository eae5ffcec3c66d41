"""Implementations of the one-run routes: typed values in, response dicts out.

No HTTP and no loading here: `plugin.py` resolves the selections to loaded
runs and parses the parameters; each `*_impl` returns exactly the shape its
`contract` Struct declares (the route tests decode every body with it). The
pair routes' impls are `diff.pair_impls`.
"""
from __future__ import annotations

from ..analysis.distributed import ranks_summary
from ..analysis.processor import TraceProcessor
from ..diff.distributed import diff_ranks
from ..sources.logdir import RunInfo, TraceFile
from ..sources.spans import span_info
from ..sources.tb_profiler import ProfilerNames
from .store import LoadState


def runs_impl(runs: dict[str, RunInfo], states: dict[str, LoadState], overviews: dict[str, dict] | None = None,
              spans_loading: bool = False) -> dict:
    """`states`: load state of each run's default trace (runs without traces
    absent); `overviews`: the overview of each trace file (by path) loaded so
    far, which names its span's steps and start; `spans_loading`: some are
    still being read."""
    overviews = overviews or {}
    out = []
    for name, info in runs.items():
        state = states.get(name)
        status = state.status if state else "ready"
        out.append({
            "name": name,
            "workers": [{**w, "span_info": span_info(w["spans"], lambda span, w=w: overviews.get(
                info.traces[w["name"]][span].path))} for w in info.workers()],
            "kinds": list(info.kinds),
            "status": status,
            "error": state.error if state and status == "failed" else None,
            # What discovery left out (a name clash), then what the load lost.
            "warnings": list(info.notes) + (list(state.warnings) if state else []),
            "recordings": list(info.recordings),
        })
    return {"runs": out, "loading": spans_loading or any(r["status"] == "loading" for r in out)}


def overview_impl(tp: TraceProcessor, selection: dict) -> dict:
    """`selection`: the run, worker and span the overview is of."""
    return {**selection, **tp.overview(), "device_present": tp.has_device}


def operators_impl(tp: TraceProcessor, group_by: str) -> dict:
    frame = tp.operators(group_by)
    return {"group_by": group_by, "device_present": tp.has_device, "total": len(frame),
            "rows": frame.to_dict("records")}


def kernels_impl(tp: TraceProcessor) -> dict:
    frame = tp.kernels()
    return {"device_present": tp.has_device, "total": len(frame), "rows": frame.to_dict("records")}


def modules_impl(tp: TraceProcessor) -> dict:
    return {"device_present": tp.has_device, "roots": tp.modules()}


# ---- timeline links (torch-tb-profiler) ------------------------------------------

def timeline_impl(tf: TraceFile, names: ProfilerNames) -> dict:
    return {"trace": tf.selection(), "profiler": {"run": names.run, "worker": names.worker, "span": names.span}}


# ---- distributed ----------------------------------------------------------------

def distributed_impl(baseline: tuple[str, list], experimental: tuple[str, list] | None = None) -> dict:
    """`baseline`, `experimental`: (run, [(worker, RankSummary)]) with every worker of the run."""

    def side(run: str, workers: list) -> dict:
        return {"run": run, **ranks_summary([(w, s.overview, s.has_device) for w, s in workers])}

    b = side(*baseline)
    if experimental is None:
        return {"baseline": b, "experimental": None, "rows": [], "unmatched_ranks": []}
    e = side(*experimental)
    return {"baseline": b, "experimental": e, **diff_ranks(b, e)}
