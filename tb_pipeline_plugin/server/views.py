"""Pure implementations of the routes: typed values in, response dicts out.

No HTTP and no loading here: `plugin.py` resolves the selections to loaded
runs and parses the parameters; each `*_impl` returns exactly the shape its
`contract` Struct declares (the route tests decode every body with it).
"""
from __future__ import annotations

import math

from ..analysis import diagnostic as diag
from ..analysis import pipeline as pipeline_analysis
from ..analysis.processor import TraceProcessor
from ..diff import views as diff
from ..diff.diagnostic import diff_diagnostic
from ..diff.pipeline import compare_pipeline
from ..pipeline.diagnostic import DiagnosticRun
from ..diff.distributed import diff_ranks
from ..analysis.distributed import ranks_summary
from ..sources.logdir import RunInfo, TraceFile
from ..sources.tb_profiler import ProfilerNames
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
            # What discovery left out (a name clash), then what the load lost.
            "warnings": list(info.notes) + (list(state.warnings) if state else []),
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


def diff_explain_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile,
                      pipelines: tuple | None = None) -> dict:
    """`pipelines`: both runs' recorded statistics (PipelineTables), or None."""
    return {**_pair(b_tf, e_tf), "device_present": diff.device_present(b, e),
            **diff.diff_explain(b, e, pipelines)}


def diff_modules_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile,
                      p: DiffModulesParams) -> dict:
    return {**_pair(b_tf, e_tf), **diff.diff_modules(b, e, p.path, p.offset, p.limit)}


def diff_operators_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile,
                        p: DiffOperatorsParams) -> dict:
    return {**_pair(b_tf, e_tf), **diff.diff_operators(b, e, p.table_query(), p.group_by, p.path)}


def diff_kernels_impl(b: TraceProcessor, e: TraceProcessor, b_tf: TraceFile, e_tf: TraceFile,
                      p: DiffKernelsParams) -> dict:
    return {**_pair(b_tf, e_tf), **diff.diff_kernels(b, e, p.table_query(), p.path)}


# ---- diagnostic mode ------------------------------------------------------------

_POINT_FIELDS = ("concurrency", "qps", "speedup", "p50_latency_s", "p90_latency_s", "cpu_pct", "machine_cpu_pct",
                 "peak_memory_bytes", "items", "errors", "duration_s", "cut_short", "first_error")


def _or_none(value):
    """"", NaN and the verdict table's 0 / -1 placeholders for "no such thing" -> None."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _environment(env: dict) -> dict | None:
    if not env:
        return None
    keys = ("python", "implementation", "free_threaded", "gil_enabled", "process_start_method", "levels",
            "executors", "warmup_s", "duration_s", "source", "hostname")
    defaults = {"source": "function", "hostname": "", "free_threaded": False, "gil_enabled": True}
    return {"cores": int(env.get("cpu_count") or 1), **{k: env.get(k, defaults.get(k)) for k in keys}}


def _gil(record: dict | None) -> dict | None:
    if record is None:
        return None
    return {"concurrency": record["concurrency"], "total_samples": record.get("total_samples", 0),
            "held_share": record.get("held_share", 0.0), "skipped": _or_none(record.get("skipped", "")),
            "top": [{k: f[k] for k in ("function", "file", "line", "samples", "share")} for f in record.get("top", [])]}


def diagnostic_impl(run: str, data: DiagnosticRun) -> dict:
    """One run's results: the verdict rows of analysis/diagnostic.py, each with
    its curves (sweep points, best concurrency) and GIL holders."""
    records = diag.as_dicts(data.records)
    sweep = diag.sweep_frame(records)
    best = diag.best_concurrency(sweep).set_index(["stage", "executor"])
    summaries = {r["stage"]: r for r in records if r.get("type") == "stage"}
    gil = {r["stage"]: r for r in records if r.get("type") == "gil"}
    end = next((r for r in reversed(records) if r.get("type") == "end"), None)
    stages = []
    for v in diag.verdicts(records).to_dict("records"):
        name = v["stage"]
        summary = summaries.get(name, {})
        curves = []
        for executor in ("thread", "process"):
            points = sweep[(sweep["stage"] == name) & (sweep["executor"] == executor)]
            if points.empty:
                continue
            b = best.loc[(name, executor)]
            curves.append({"executor": executor, "best_concurrency": int(b["best_concurrency"]),
                           "best_qps": float(b["best_qps"]),
                           "points": [{k: (_or_none(p[k]) if k in ("speedup", "first_error") else p[k])
                                       for k in _POINT_FIELDS} for p in points.to_dict("records")]})
        has = {c["executor"] for c in curves}
        stages.append({
            "stage": name, "index": v["index"] if v["index"] >= 0 else None, "kind": summary.get("kind"),
            "verdict": v["verdict"], "label": v["label"], "reason": v["reason"],
            **{f"best_{e}_{k}": (v[f"best_{e}_{k}"] if e in has else None)
               for e in ("thread", "process") for k in ("concurrency", "qps")},
            **{k: v[k] for k in ("thread_speedup", "process_speedup", "peak_memory_bytes", "items", "errors",
                                 "cut_short")},
            "first_error": _or_none(v["first_error"]), "inputs": summary.get("inputs"),
            "input_errors": summary.get("input_errors", 0), "process_skipped": _or_none(v["process_skipped"]),
            "skipped": _or_none(summary.get("skipped", "")), "curves": curves, "gil": _gil(gil.get(name)),
        })
    return {"run": run, "complete": data.complete, "cut_short": data.cut_short,
            "reason": _or_none(end.get("reason", "")) if end else None,
            "elapsed_s": end.get("elapsed_s") if end else None,
            "environment": _environment(diag.environment(records)), "stages": stages,
            "warnings": list(data.warnings)}


def diff_diagnostic_impl(b_run: str, b: DiagnosticRun, e_run: str, e: DiagnosticRun) -> dict:
    frame = diff_diagnostic(b.records, e.records)
    stages = [{
        "stage": r["stage"], "in_baseline": bool(r["in_baseline"]), "in_experimental": bool(r["in_experimental"]),
        "verdict_baseline": _or_none(r["verdict_baseline"]), "verdict_experimental": _or_none(r["verdict_experimental"]),
        "verdict_changed": bool(r["verdict_changed"]),
        "best_thread_qps_ratio": _or_none(r["best_thread_qps_ratio"]),
        "best_process_qps_ratio": _or_none(r["best_process_qps_ratio"]),
    } for r in frame.to_dict("records")]
    return {"baseline": diagnostic_impl(b_run, b), "experimental": diagnostic_impl(e_run, e), "stages": stages}


# ---- pipeline statistics ------------------------------------------------------

def pipeline_impl(run: str, tables) -> dict:
    """`tables`: the run's pipeline.PipelineTables (recorded, or from its trace)."""
    return {"run": run, **pipeline_analysis.report(tables)}


def diff_pipeline_impl(b_run: str, e_run: str, b_tables, e_tables) -> dict:
    return {"baseline_run": b_run, "experimental_run": e_run, **compare_pipeline(b_tables, e_tables)}


# ---- timeline links (torch-tb-profiler) ------------------------------------------

def timeline_impl(tf: TraceFile, names: ProfilerNames) -> dict:
    return {"trace": selection(tf), "profiler": {"run": names.run, "worker": names.worker, "span": names.span}}


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
