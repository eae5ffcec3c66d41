"""The columnar tables every pipeline analysis reads, whatever the source.

Times: `*_s` seconds; `t_s` seconds since the run's first record (the
origin all tables of one run share); `wall_*_s` Unix seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

STEP_COLUMNS = ["step", "loader", "t_s", "wall_start_s", "duration_s", "data_wait_s", "compute_s",
                "callbacks_s", "other_s", "batch_size", "tokens", "cached",
                # The first step after a profiler started (its start-up cost), and a last step still
                # running when the recorder closed (it holds the loop's epilogue): readers/records.py.
                "after_profiler_start", "open_at_end",
                # The recording's process drove a CUDA device (its profiler recorded CUDA activities, or
                # its host samples saw a GPU at work): its host may run ahead of the device
                # (analysis/statistics/settle.py).
                "drives_cuda",
                # The step on the device's clock (formats/pipeline.py:DeviceStep), NaN where not recorded.
                "device_s"]
CALLBACK_COLUMNS = ["step", "loader", "name", "kind", "time_s"]
STAGE_KEY = ["pipeline_id", "stage_id", "stage_name", "stage", "concurrency"]
TASK_COLUMNS = ["t_s", "wall_time_s", *STAGE_KEY, "final", "tasks", "failures", "task_mean_s", "task_p90_s",
                "task_p99_s", "task_cpu_mean_s", "task_call_mean_s", "task_runq_mean_s"]
QUEUE_COLUMNS = ["t_s", "wall_time_s", *STAGE_KEY, "final", "interval_s", "items", "qps", "put_wait_mean_s",
                 "get_wait_mean_s", "put_wait_p90_s", "get_wait_p90_s", "put_wait_p99_s", "get_wait_p99_s",
                 "occupancy"]
HOST_COLUMNS = ["t_s", "wall_time_s", "cpu_pct", "rss_bytes", "mem_used_bytes", "num_processes",
                "disk_read_bytes", "disk_write_bytes", "net_sent_bytes", "net_recv_bytes", "gpu_util_pct",
                "gpu_mem_used_bytes", "gil_contention_pct", "system_cpu_pct"]


def empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c in ("stage", "stage_name", "stage_id", "name", "kind")
                                      else float) for c in columns})


@dataclass
class PipelineTables:
    """source: "recorder", "launcher", "composer" or "trace" (data wait from
    the profiler's DataLoader annotations)."""

    source: str
    steps: pd.DataFrame = field(default_factory=lambda: empty(STEP_COLUMNS))
    callbacks: pd.DataFrame = field(default_factory=lambda: empty(CALLBACK_COLUMNS))
    stage_tasks: pd.DataFrame = field(default_factory=lambda: empty(TASK_COLUMNS))
    stage_queues: pd.DataFrame = field(default_factory=lambda: empty(QUEUE_COLUMNS))
    host: pd.DataFrame = field(default_factory=lambda: empty(HOST_COLUMNS))
    meta: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    t0_wall_s: float = 0.0
    # A group of recordings pooled as one run (analysis/statistics/group.py):
    # the recordings' names, each row's index into them in a `recording`
    # column of steps, callbacks and stage records, and the representative
    # recording (the one whose host samples these are). Empty for one run.
    recording_names: list[str] = field(default_factory=list)
    representative: int | None = None
    # Per recording (its index, None for one run): the loop's epilogue, from
    # the last step's end to the recorder's close (formats/pipeline.py:RunEnd);
    # empty for files written before it was recorded.
    epilogues: list[dict] = field(default_factory=list)


def frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    if not rows:
        return empty(columns)
    out = pd.DataFrame.from_records(rows)
    for c in columns:
        if c not in out:
            out[c] = np.nan
    return out[columns]
