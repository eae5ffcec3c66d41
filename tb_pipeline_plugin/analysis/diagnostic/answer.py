"""A run's diagnostic report (report.py's dict, which the pair's comparison
and the tests read) as the contract's Structs: what the `diagnostic` route
answers (server/run_impls.py) and each side of `diff/diagnostic`'s
(diff/impls/pipeline.py)."""
from __future__ import annotations

from ... import contract as C


def report_fields(r: dict) -> dict:
    """The fields of a `DiagnosticReport` (a `DiagnosticResponse` adds the run's reference)."""
    env, group = r["environment"], r["group"]
    return dict(
        interval_confidence=r["interval_confidence"], complete=r["complete"], cut_short=r["cut_short"],
        reason=r["reason"], elapsed_s=r["elapsed_s"],
        environment=None if env is None else C.DiagnosticEnvironment(**env),
        stages=[_stage(s) for s in r["stages"]],
        warnings=r["warnings"],
        group=None if group is None else C.DiagnosticGroup(**group),
    )


def _stage(s: dict) -> C.DiagnosticStage:
    gil = s["gil"]
    return C.DiagnosticStage(**{
        **s,
        "curves": [C.DiagnosticCurve(executor=c["executor"], best_concurrency=c["best_concurrency"],
                                     best_qps=c["best_qps"], points=[C.DiagnosticPoint(**p) for p in c["points"]])
                   for c in s["curves"]],
        "gil": None if gil is None else C.DiagnosticGil(**{**gil, "top": [C.GilHolder(**h) for h in gil["top"]]}),
        "skipped_levels": [C.SkippedLevel(**k) for k in s["skipped_levels"]],
    })


def report_struct(r: dict) -> C.DiagnosticReport:
    return C.DiagnosticReport(**report_fields(r))
