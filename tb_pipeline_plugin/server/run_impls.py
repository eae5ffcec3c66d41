"""Every one-run route's implementation: a loaded run (or its statistics,
or its diagnostic results), typed values and the run's reference (`ref`:
`run`, `worker`, `span`, as the provider names what it read) in, the
route's answer out.

No HTTP and no loading here: `plugin.py` parses the parameters and asks the
provider for the loaded values. Each `*_impl` returns its route's
`contract` Struct, built here from the analyses' rows (or by the subject's
`answer` module from its report), which msgspec encodes (server/http.py).
The pair routes' impls are `diff/impls/` (each on a `Pair`, diff/pair.py).
"""
from __future__ import annotations

from typing import Callable

from .. import contract as C

from ..analysis.diagnostic.answer import report_fields as diagnostic_fields
from ..analysis.diagnostic.report import report as diagnostic_report
from ..analysis.distributed import ranks_summary
from ..analysis.rank_distribution import histogram, histogram_edges
from ..analysis.statistics.answer import report_fields
from ..analysis.statistics.report import report as pipeline_report
from ..analysis.run import Run
from ..diff.distributed import diff_percentiles, diff_ranks
from ..sources.runs import RunInfo
from ..sources.spans import span_info
from ..sources.rank_index import MAX_RANKS_VARIABLE, RunRanks
from ..sources.tb_profiler import ProfilerNames
from ..sources.store import LoadState


def runs_impl(runs: dict[str, RunInfo], states: dict[str, LoadState], labels: dict[str, dict] | None = None,
              spans_loading: bool = False) -> C.RunsResponse:
    """`states`: load state of each run's default trace (runs without traces
    absent); `labels`: what names each trace file's span (by path: its steps and
    start, sources/spans.py) as far as loaded; `spans_loading`: some are
    still being read."""
    labels = labels or {}
    out = []
    for name, info in runs.items():
        state = states.get(name)
        status = state.status if state else "ready"
        out.append(C.RunInfo(
            name=name,
            workers=[C.WorkerInfo(name=w["name"], spans=w["spans"], span_info=[_span(s) for s in span_info(
                w["spans"], lambda span, w=w: labels.get(info.traces[w["name"]][span].path))])
                for w in info.workers()],
            kinds=list(info.kinds),
            status=status,
            error=state.error if state and status == "failed" else None,
            # What discovery left out (a name clash), then what the load lost.
            warnings=list(info.notes) + (list(state.warnings) if state else []),
            recordings=list(info.recordings),
        ))
    return C.RunsResponse(runs=out, loading=spans_loading or any(r.status == "loading" for r in out))


def _span(s: dict) -> C.SpanInfo:
    steps = s["steps"]
    return C.SpanInfo(span=s["span"], order=s["order"], written_unix_s=s["written_unix_s"],
                      start_unix_s=s["start_unix_s"], steps=None if steps is None else C.StepRange(**steps))


def overview_impl(tp: Run, ref: dict) -> C.OverviewResponse:
    o = tp.overview()
    return C.OverviewResponse(
        **ref,
        device=C.DeviceInfo(**o["device"]),
        device_present=tp.has_device,
        distributed=_maybe(C.DistributedInfo, o["distributed"]),
        trace_duration_us=o["trace_duration_us"],
        start_unix_s=o["start_unix_s"],
        steps=[C.StepInfo(name=s["name"], step=s["step"], start_us=s["start_us"], duration_us=s["duration_us"],
                          breakdown_us=C.Breakdown(**s["breakdown_us"]),
                          device_idle_us=_maybe(C.DeviceIdle, s["device_idle_us"])) for s in o["steps"]],
        avg_step_time_us=o["avg_step_time_us"],
        breakdown_us=C.Breakdown(**o["breakdown_us"]),
        gpu_utilization_pct=o["gpu_utilization_pct"],
        device_idle_us=_maybe(C.DeviceIdle, o["device_idle_us"]),
        bound=None if o["bound"] is None else C.Bound(**{**o["bound"], "cause_pct": C.DeviceIdle(**o["bound"]["cause_pct"])}),
        memory=_memory(o["memory"]),
        warnings=o["warnings"],
    )


def _maybe(struct: type, fields: dict | None):
    return None if fields is None else struct(**fields)


def _memory(m: dict) -> C.MemorySummary:
    return C.MemorySummary(avg_bytes=m["avg_bytes"], peak_bytes=m["peak_bytes"], device=m["device"],
                           devices=[C.MemoryDevice(**d) for d in m["devices"]])


def operators_impl(tp: Run, group_by: str, ref: dict) -> C.OperatorsResponse:
    frame = tp.operators(group_by)
    return C.OperatorsResponse(**ref, group_by=group_by, device_present=tp.has_device, total=len(frame),
                               rows=[C.OperatorRow(**r) for r in frame.to_dict("records")])


def kernels_impl(tp: Run, ref: dict) -> C.KernelsResponse:
    frame = tp.kernels()
    return C.KernelsResponse(**ref, device_present=tp.has_device, total=len(frame),
                             rows=[C.KernelRow(**r) for r in frame.to_dict("records")])


def modules_impl(tp: Run, ref: dict) -> C.ModulesResponse:
    return C.ModulesResponse(**ref, device_present=tp.has_device, roots=module_nodes(tp.modules()))


def module_nodes(roots: list[dict]) -> list[C.ModuleNode]:
    """The module tree (analysis/modules.py's dicts) as `ModuleNode`s, built
    without recursion: a tree may nest thousands of levels deep."""
    order, stack = [], list(roots)
    while stack:  # depth first, each node before its descendants
        node = stack.pop()
        order.append(node)
        stack.extend(node["children"])
    made: dict[int, C.ModuleNode] = {}
    for node in reversed(order):  # each node after its descendants
        made[id(node)] = C.ModuleNode(**{**node, "children": [made[id(k)] for k in node["children"]]})
    return [made[id(r)] for r in roots]


def pipeline_impl(statistics, ref: dict) -> C.PipelineResponse:
    """A run's pipeline statistics (PipelineTables) as the Pipeline view reads them."""
    return C.PipelineResponse(**report_fields(pipeline_report(statistics)), **ref)


def diagnostic_impl(results, ref: dict) -> C.DiagnosticResponse:
    """A run's diagnostic results (DiagnosticRun) as the Diagnostic view reads them."""
    return C.DiagnosticResponse(**diagnostic_fields(diagnostic_report(results)), **ref)


# ---- timeline links (torch-tb-profiler) ------------------------------------------

def profiler_link_impl(names: ProfilerNames, ref: dict) -> C.ProfilerLinkResponse:
    return C.ProfilerLinkResponse(**ref, profiler=C.RunRef(run=names.run, worker=names.worker, span=names.span))


# ---- distributed ----------------------------------------------------------------

# Ranks named with why they failed or what their trace lost, at most (the counts are whole).
NOTED_RANKS = 20


def distributed_impl(baseline: RunRanks, experimental: RunRanks | None = None,
                     summarise: Callable[[RunRanks], dict] = lambda s: ranks_summary(s.ready),
                     refs: dict | None = None) -> C.DistributedResponse:
    """Each run's ranks ready so far (`provider.ranks`), their distribution
    and, with `experimental`, the two rank by rank and percentile by
    percentile. `complete` is false while a rank of either is loading.
    `summarise`: `ranks_summary` of a run's ranks, maybe remembered (left
    unchanged here: its rows are shared, its top level copied). `refs`:
    {"baseline": ref, "experimental": ref or None} (unnamed without)."""
    sides = [s for s in (baseline, experimental) if s is not None]
    shaped = [dict(summarise(s)) for s in sides]
    edges = histogram_edges([[r["step_time_us"] for r in x["ranks"]] for x in shaped])
    for s, x in zip(sides, shaped):
        x["histogram"] = histogram([r["step_time_us"] for r in x["ranks"]], edges)
        x["coverage"] = _coverage(s)
    b, e = shaped[0], shaped[1] if experimental is not None else None
    complete = all(s.loading == 0 for s in sides)
    refs = refs or {"baseline": _UNNAMED, "experimental": _UNNAMED if e is not None else None}
    named = {k: None if v is None else C.RunRef(**v) for k, v in refs.items()}
    if e is None:
        return C.DistributedResponse(**named, baseline_ranks=_run_ranks(b), experimental_ranks=None, rows=[],
                                     unmatched_ranks=[], by_percentile=[], complete=complete)
    joined = diff_ranks(b, e)
    return C.DistributedResponse(
        **named, baseline_ranks=_run_ranks(b), experimental_ranks=_run_ranks(e),
        rows=[C.RankDeltaRow(**r) for r in joined["rows"]], unmatched_ranks=joined["unmatched_ranks"],
        by_percentile=[C.PercentileDeltaRow(**r) for r in diff_percentiles(b, e)], complete=complete)


_UNNAMED = {"run": "", "worker": "", "span": ""}


def _run_ranks(x: dict) -> C.RunRanks:
    """One run's summary (analysis/distributed.py's dict, with its histogram
    and coverage) as its Struct; a rank row `slowest_ranks` shares with
    `ranks` is built once."""
    made: dict[int, C.RankRow] = {}

    def row(r: dict) -> C.RankRow:
        hit = made.get(id(r))
        if hit is None:
            hit = made[id(r)] = C.RankRow(**r)
        return hit

    cov = x["coverage"]
    return C.RunRanks(
        ranks=[row(r) for r in x["ranks"]], slowest=_maybe(C.Straggler, x["slowest"]),
        median_step_time_us=x["median_step_time_us"], slowest_ranks=[row(r) for r in x["slowest_ranks"]],
        percentiles=[C.RankAtPercentile(**p) for p in x["percentiles"]],
        spread_percentiles=x["spread_percentiles"], spread=[C.QuantitySpread(**s) for s in x["spread"]],
        histogram=C.RankHistogram(**x["histogram"]),
        coverage=C.RankCoverage(**{**cov, "failures": [C.RankNote(**n) for n in cov["failures"]],
                                   "warnings": [C.RankNote(**n) for n in cov["warnings"]]}))


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
