"""Pipeline statistics of two runs side by side: baseline / experimental /
delta for the step split, throughput, stages, callbacks and host metrics."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.statistics import report as ap
from ..delta import delta_pct
from ..significance.pipeline import with_significance
from ..tables import join

# (metric, label, unit): dotted path into analysis.pipeline.report().
SUMMARY_METRICS = [
    ("split.steps", "Steps", "count"),
    ("split.mean_step_s", "Step time", "s"),
    ("split.data_wait_s", "Data wait (per step)", "s"),
    ("split.compute_s", "Compute (per step)", "s"),
    ("split.callbacks_s", "Callbacks (per step)", "s"),
    ("split.other_s", "Other (per step)", "s"),
    ("split.data_wait_pct", "Data wait share", "pct"),
    ("throughput.steps_per_s", "Steps per second", "1/s"),
    ("throughput.samples_per_s", "Samples per second", "1/s"),
    ("host.summary.cpu_pct_mean", "CPU (process tree, mean)", "pct"),
    ("host.summary.rss_bytes_max", "Peak RSS", "bytes"),
    # NVML's busy share sampled over the whole process, start-up and loading included: lower than the
    # Overview's, which is the share of the profiled steps a kernel ran (from the trace).
    ("host.summary.gpu_util_pct_mean", "GPU utilization (driver, whole run)", "pct"),
    ("host.summary.gil_contention_pct_mean", "GIL contention (mean)", "pct"),
    ("host.summary.gil_contention_pct_max", "GIL contention (peak)", "pct"),
]
STAGE_KEYS = ["pipeline_index", "stage_name"]
STAGE_DIFF_COLUMNS = ["concurrency", "qps", "task_mean_s", "task_cpu_mean_s", "put_wait_mean_s", "get_wait_mean_s",
                      "occupancy_pct", "busy_pct"]
STAGE_PRIMARY = "task_mean_s"
CALLBACK_KEYS = ["name", "kind"]
CALLBACK_DIFF_COLUMNS = ["calls", "per_step_s", "mean_s", "total_s"]
CALLBACK_PRIMARY = "per_step_s"


def _value(report: dict, path: str):
    v = report
    for part in path.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v


def summary_rows(baseline: dict, experimental: dict) -> list[dict]:
    """Each SUMMARY_METRICS row: metric, label, unit, baseline, experimental,
    delta (experimental - baseline), delta_pct; None where a side lacks it."""
    rows = []
    for metric, label, unit in SUMMARY_METRICS:
        b, e = _value(baseline, metric), _value(experimental, metric)
        delta = e - b if isinstance(b, (int, float)) and isinstance(e, (int, float)) else None
        rows.append({"metric": metric, "label": label, "unit": unit, "baseline": b, "experimental": e,
                     "delta": delta, "delta_pct": delta_pct(b, delta)})
    return rows


def _by_abs_delta(table: pd.DataFrame, column: str) -> pd.DataFrame:
    key = table[f"delta_{column}"].abs()
    return table.iloc[np.argsort(-key.to_numpy(float), kind="stable")].reset_index(drop=True)


def stage_rows(b_tables, e_tables) -> pd.DataFrame:
    """Stages joined on (pipeline_index, stage_name): the n-th pipeline of
    each run, stage by name, so a changed concurrency still lines up; sorted
    by |delta task_mean_s|. What a side's stage did not measure stays null
    (a DataLoader part's items/s, queue waits, occupancy and busy share: it has
    no queue), never 0."""
    b = ap.stage_table(b_tables.stage_tasks, b_tables.stage_queues)
    e = ap.stage_table(e_tables.stage_tasks, e_tables.stage_queues)
    for f in (b, e):
        f["concurrency"] = pd.to_numeric(f["concurrency"], errors="coerce")
    return _by_abs_delta(join(b, e, STAGE_KEYS, STAGE_DIFF_COLUMNS, keep_unmeasured=True), STAGE_PRIMARY)


def callback_rows(b_tables, e_tables) -> pd.DataFrame:
    """Callbacks joined on (name, kind); sorted by |delta per_step_s|."""
    b = ap.slowest_callbacks(b_tables.callbacks, b_tables.steps)
    e = ap.slowest_callbacks(e_tables.callbacks, e_tables.steps)
    return _by_abs_delta(join(b, e, CALLBACK_KEYS, CALLBACK_DIFF_COLUMNS), CALLBACK_PRIMARY)


def compare_pipeline(b_tables, e_tables, noise) -> dict:
    """The `diff/pipeline` payload but the runs' references: per-run reports (split, verdict,
    throughput series, host series, stages, callbacks) plus the delta views,
    with their significance (diff/significance/pipeline.py) under the `noise`
    policy (significance.NoisePolicy)."""
    b, e = ap.report(b_tables), ap.report(e_tables)
    return with_significance({
        "baseline_report": b,
        "experimental_report": e,
        "summary": summary_rows(b, e),
        "stages": ap.records(stage_rows(b_tables, e_tables)),
        "callbacks": ap.records(callback_rows(b_tables, e_tables)),
    }, b_tables, e_tables, noise=noise)
