"""Every one-run route's implementation: a loaded run (or its statistics,
or its diagnostic results) and typed values in, the route's answer out, all
but the run's reference (`run`, `worker`, `span`), which the route adds.

No HTTP and no loading here: `plugin.py` parses the parameters and asks the
provider for the loaded values; each `*_impl` returns the shape its
`contract` Struct declares (the route tests decode every body with it). The
pair routes' impls are `diff.pair_impls`.
"""
from __future__ import annotations

from ..analysis.diagnostic.report import report as diagnostic_report
from ..analysis.distributed import ranks_summary
from ..analysis.statistics.report import report as pipeline_report
from ..analysis.run import Run
from ..diff.distributed import diff_ranks
from ..sources.logdir import RunInfo
from ..sources.spans import span_info
from ..sources.tb_profiler import ProfilerNames
from ..sources.store import LoadState


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

def distributed_impl(baseline: list, experimental: list | None = None) -> dict:
    """`baseline`, `experimental`: [(worker, RankSummary)] with every worker of the run."""

    def side(workers: list) -> dict:
        return ranks_summary([(w, s.overview, s.has_device) for w, s in workers])

    b = side(baseline)
    if experimental is None:
        return {"baseline_ranks": b, "experimental_ranks": None, "rows": [], "unmatched_ranks": []}
    e = side(experimental)
    return {"baseline_ranks": b, "experimental_ranks": e, **diff_ranks(b, e)}
