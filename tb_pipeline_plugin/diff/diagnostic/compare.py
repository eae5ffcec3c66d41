"""Baseline vs experimental diagnostic results: per stage, the two verdicts
side by side, how the best QPS moved with its interval, and whether the
verdict changed beyond noise (diff/diagnostic/change.py).

Stages are matched by name (the stage names a pipeline gives, stable across
runs of the same code); a stage in one run only keeps a row with the other
side empty.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from ...analysis.diagnostic.report import as_dicts, environment, report, sweep_frame, verdicts
from ...analysis.diagnostic.spread import CONFIDENCE, crowded, level_spread, others_cpu_pct
from .change import CHANGED, best_concurrency_change, evidence, verdict_change

SIDE_COLUMNS = ["verdict", "label", "best_thread_concurrency", "best_thread_qps", "best_process_concurrency",
                "best_process_qps", "thread_cpu_pct", "process_cpu_pct", "peak_memory_bytes", "errors",
                "gil_function", "gil_file", "gil_line", "cut_short"]
CHANGE_COLUMNS = ["best_thread_qps_ratio_low", "best_thread_qps_ratio_high", "best_process_qps_ratio_low",
                  "best_process_qps_ratio_high", "change", "change_reason", "best_thread_concurrency_change",
                  "best_process_concurrency_change"]
DIFF_COLUMNS = (["stage", "in_baseline", "in_experimental"]
                + [f"{c}_{side}" for c in SIDE_COLUMNS for side in ("baseline", "experimental")]
                + ["best_thread_qps_ratio", "best_process_qps_ratio", "verdict_changed", *CHANGE_COLUMNS])


def diff_diagnostic(baseline: Iterable[Any], experimental: Iterable[Any]) -> pd.DataFrame:
    """DIFF_COLUMNS, baseline's stage order first; ratios are experimental /
    baseline (NaN where either side is missing or zero), with their
    intervals (NaN: no interval); `change` is one of
    change.CHANGES, `verdict_changed` is `change == "changed"`:
    the verdicts differ beyond noise."""
    baseline, experimental = list(baseline), list(experimental)
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
    changes = _changes(baseline, experimental, base, exp, list(merged["stage"]))
    for column in changes.columns:
        merged[column] = changes[column].to_numpy()
    merged["verdict_changed"] = merged["change"] == CHANGED
    return merged[DIFF_COLUMNS]


def _changes(baseline: list, experimental: list, base: pd.DataFrame, exp: pd.DataFrame,
             stages: list[str]) -> pd.DataFrame:
    """Per stage in `stages`: the interval of each best QPS ratio, the verdict
    change and the best concurrency changes (diff/diagnostic/change.py)."""
    sides = []
    for records, table in ((baseline, base), (experimental, exp)):
        records = as_dicts(records)
        sweep = sweep_frame(records)
        cores = int(environment(records).get("cpu_count") or 1)
        sides.append({"spread": level_spread(sweep), "rows": {r["stage"]: r for r in table.to_dict("records")},
                      "gil": {r["stage"]: r for r in records if r.get("type") == "gil"},
                      "others": others_cpu_pct(sweep, cores), "crowded": crowded(sweep, cores)})
    rows = []
    for stage in stages:
        b, e = sides
        b_row, e_row = b["rows"].get(stage), e["rows"].get(stage)
        b_spread, e_spread = (side["spread"][side["spread"]["stage"] == stage] for side in sides)
        others = (b["others"].get(stage, 0.0) if stage in b["crowded"] else 0.0,
                  e["others"].get(stage, 0.0) if stage in e["crowded"] else 0.0)
        is_crowded = stage in b["crowded"] or stage in e["crowded"]
        items = (evidence(b_spread, e_spread, b_row, e_row, b["gil"].get(stage), e["gil"].get(stage), is_crowded)
                 if b_row is not None and e_row is not None else [])
        ratios = {i["what"]: i for i in items}
        change, reason = verdict_change(b_row, e_row, items, others)
        row = {"change": change, "change_reason": reason}
        for what in ("thread", "process"):
            item = ratios.get(f"best {what} QPS")
            row[f"best_{what}_qps_ratio_low"] = item["low"] if item else np.nan
            row[f"best_{what}_qps_ratio_high"] = item["high"] if item else np.nan
            row[f"best_{what}_concurrency_change"] = best_concurrency_change(b_spread, e_spread, b_row, e_row, what,
                                                                             is_crowded)
        rows.append(row)
    return pd.DataFrame(rows, columns=CHANGE_COLUMNS)


def compare_diagnostic(baseline, experimental) -> dict:
    """The `diff/diagnostic` route's answer but the runs' references, from both
    runs' DiagnosticRun (readers/diagnostic.py): both reports and the stage
    rows (None for a side without the stage, a ratio without two QPS or an
    interval without slices)."""
    frame = diff_diagnostic(baseline.records, experimental.records)
    stages = [{
        "stage": r["stage"], "in_baseline": bool(r["in_baseline"]), "in_experimental": bool(r["in_experimental"]),
        "verdict_baseline": _present(r["verdict_baseline"]), "verdict_experimental": _present(r["verdict_experimental"]),
        "verdict_changed": bool(r["verdict_changed"]), "change": r["change"], "change_reason": r["change_reason"],
        **{f"best_{what}_qps_ratio{end}": _present(r[f"best_{what}_qps_ratio{end}"])
           for what in ("thread", "process") for end in ("", "_low", "_high")},
        "best_thread_concurrency_change": r["best_thread_concurrency_change"],
        "best_process_concurrency_change": r["best_process_concurrency_change"],
    } for r in frame.to_dict("records")]
    return {"baseline_report": report(baseline), "experimental_report": report(experimental), "stages": stages,
            "interval_confidence": CONFIDENCE}


def _present(value):
    """The outer join's NaN for a side without the stage -> None."""
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else value
