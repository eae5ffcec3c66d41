"""Pure implementations of the routes: typed values in, response dicts out.

No HTTP and no loading here: `plugin.py` resolves the selections to loaded
runs and parses the parameters; each `*_impl` returns exactly the shape its
`contract` Struct declares (the route tests decode every body with it).
"""
from __future__ import annotations

from ..analysis.processor import TraceProcessor
from ..diff import views as diff
from ..diff.distributed import diff_ranks
from ..analysis.distributed import ranks_summary
from ..sources.logdir import RunInfo, TraceFile
from .params import DiffKernelsParams, DiffModulesParams, DiffOperatorsParams
from .store import LoadState


def runs_impl(runs: dict[str, RunInfo], states: dict[str, LoadState]) -> dict:
    """`states`: load state of each run's default trace (runs without traces absent)."""
    out = []
    for name, info in runs.items():
        state = states.get(name)
        status = state.status if state else "ready"
        out.append({
            "name": name,
            "workers": info.workers(),
            "kinds": list(info.kinds),
            "status": status,
            "error": state.error if state and status == "failed" else None,
            "warnings": list(state.warnings) if state else [],
        })
    return {"runs": out, "loading": any(r["status"] == "loading" for r in out)}


def selection(tf: TraceFile) -> dict:
    return {"run": tf.run, "worker": tf.worker, "span": tf.span}


def overview_impl(tp: TraceProcessor, tf: TraceFile) -> dict:
    return {**selection(tf), **tp.overview(), "device_present": tp.has_device}


def operators_impl(tp: TraceProcessor, group_by: str) -> dict:
    frame = tp.operators(group_by)
    return {"group_by": group_by, "device_present": tp.has_device, "total": len(frame),
            "rows": frame.to_dict("records")}


def kernels_impl(tp: TraceProcessor) -> dict:
    frame = tp.kernels()
    return {"device_present": tp.has_device, "total": len(frame), "rows": frame.to_dict("records")}


def modules_impl(tp: TraceProcessor) -> dict:
    return {"device_present": tp.has_device, "roots": tp.modules()}


def _pair(b_tf: TraceFile, e_tf: TraceFile) -> dict:
    return {"baseline": selection(b_tf), "experimental": selection(e_tf)}


def diff_overview_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile) -> dict:
    return {**_pair(b_tf, e_tf), "device_present": diff.device_present(b, e), **diff.diff_overview(b, e)}


def diff_modules_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile,
                      p: DiffModulesParams) -> dict:
    return {**_pair(b_tf, e_tf), **diff.diff_modules(b, e, p.path, p.offset, p.limit)}


def diff_operators_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile,
                        p: DiffOperatorsParams) -> dict:
    return {**_pair(b_tf, e_tf), **diff.diff_operators(b, e, p.table_query(), p.group_by, p.path)}


def diff_kernels_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile,
                      p: DiffKernelsParams) -> dict:
    return {**_pair(b_tf, e_tf), **diff.diff_kernels(b, e, p.table_query(), p.path)}


def distributed_impl(baseline: tuple[str, list], experimental: tuple[str, list] | None = None) -> dict:
    """`baseline`, `experimental`: (run, [(worker, RankSummary)]) with every worker of the run."""

    def side(run: str, workers: list) -> dict:
        return {"run": run, **ranks_summary([(w, s.overview, s.has_device) for w, s in workers])}

    b = side(*baseline)
    if experimental is None:
        return {"baseline": b, "experimental": None, "rows": [], "unmatched_ranks": []}
    e = side(*experimental)
    return {"baseline": b, "experimental": e, **diff_ranks(b, e)}
