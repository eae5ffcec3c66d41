"""Baseline vs experimental diagnostic results: per stage, the two verdicts
side by side and how the best QPS moved.

Stages are matched by name (the stage names a pipeline gives, stable across
runs of the same code); a stage in one run only keeps a row with the other
side empty.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from ..analysis.diagnostic import report, verdicts

SIDE_COLUMNS = ["verdict", "label", "best_thread_concurrency", "best_thread_qps", "best_process_concurrency",
                "best_process_qps", "thread_cpu_pct", "process_cpu_pct", "peak_memory_bytes", "errors",
                "gil_function", "gil_file", "gil_line", "cut_short"]
DIFF_COLUMNS = (["stage", "in_baseline", "in_experimental"]
                + [f"{c}_{side}" for c in SIDE_COLUMNS for side in ("baseline", "experimental")]
                + ["best_thread_qps_ratio", "best_process_qps_ratio", "verdict_changed"])


def diff_diagnostic(baseline: Iterable[Any], experimental: Iterable[Any]) -> pd.DataFrame:
    """DIFF_COLUMNS, baseline's stage order first; ratios are experimental /
    baseline (NaN where either side is missing or zero)."""
    base, exp = verdicts(baseline), verdicts(experimental)
    merged = base[["stage", *SIDE_COLUMNS]].merge(exp[["stage", *SIDE_COLUMNS]], on="stage", how="outer",
                                                  suffixes=("_baseline", "_experimental"), indicator=True,
                                                  sort=False)
    order = {s: i for i, s in enumerate(list(base["stage"]) + [s for s in exp["stage"] if s not in set(base["stage"])])}
    merged = merged.iloc[np.argsort([order[s] for s in merged["stage"]], kind="stable")].reset_index(drop=True)
    merged["in_baseline"] = merged["_merge"].isin(["both", "left_only"])
    merged["in_experimental"] = merged["_merge"].isin(["both", "right_only"])
    for what in ("thread", "process"):
        b = merged[f"best_{what}_qps_baseline"].astype(float)
        e = merged[f"best_{what}_qps_experimental"].astype(float)
        merged[f"best_{what}_qps_ratio"] = np.where((b > 0) & (e > 0), e / b.where(b > 0, 1.0), np.nan)
    merged["verdict_changed"] = (merged["in_baseline"] & merged["in_experimental"]
                                 & (merged["verdict_baseline"] != merged["verdict_experimental"]))
    return merged[DIFF_COLUMNS]


def diff_diagnostic_impl(baseline, experimental) -> dict:
    """The `diff/diagnostic` route's answer but the run names, from both
    runs' DiagnosticRun (pipeline/diagnostic.py): both reports and the stage rows (None for a side without the stage or a ratio without
    two QPS)."""
    frame = diff_diagnostic(baseline.records, experimental.records)
    stages = [{
        "stage": r["stage"], "in_baseline": bool(r["in_baseline"]), "in_experimental": bool(r["in_experimental"]),
        "verdict_baseline": _present(r["verdict_baseline"]), "verdict_experimental": _present(r["verdict_experimental"]),
        "verdict_changed": bool(r["verdict_changed"]),
        "best_thread_qps_ratio": _present(r["best_thread_qps_ratio"]),
        "best_process_qps_ratio": _present(r["best_process_qps_ratio"]),
    } for r in frame.to_dict("records")]
    return {"baseline": report(baseline), "experimental": report(experimental), "stages": stages}


def _present(value):
    """The outer join's NaN for a side without the stage -> None."""
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else value
