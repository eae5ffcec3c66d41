"""Pipeline statistics (`pipeline`) and a pair's (`diff/pipeline`).

Seconds here (`_s`): step-level statistics are milliseconds to seconds, and
the records are written in seconds (docs/pipeline_format.md)."""
from __future__ import annotations

from typing import Literal

from msgspec import UNSET, UnsetType

from .common import Number, RunRef, _Shape
from .significance import ExplainNoise, Significance

InputBoundVerdict = Literal["yes", "partly", "no", "unknown"]
PipelineSource = Literal["recorder", "launcher", "composer", "trace"]


class PipelineSplit(_Shape):
    """Mean seconds per step of each part and its share of the step (the
    main loader's steps; headspace runs: the replayed ones). null: no steps.
    `warmup_steps`, `epilogue_steps`: recorded steps left out as warm-up or as
    holding the loop's epilogue (analysis/statistics/settle.py)."""

    steps: int
    warmup_steps: int
    epilogue_steps: int
    total_s: float
    mean_step_s: float | None
    notes: list[str]
    data_wait_s: float | None
    data_wait_pct: float | None
    compute_s: float | None
    compute_pct: float | None
    callbacks_s: float | None
    callbacks_pct: float | None
    other_s: float | None
    other_pct: float | None


class InputBound(_Shape):
    verdict: InputBoundVerdict
    data_wait_pct: float | None
    summary: str
    next_step: str


class ThroughputPoint(_Shape):
    """One window: steps that ended in [t_s, t_s + window_s)."""

    t_s: float
    window_s: float
    steps: float
    steps_per_s: float
    samples_per_s: float | None


class Throughput(_Shape):
    steps_per_s: float | None
    samples_per_s: float | None
    series: list[ThroughputPoint]


class PipelineStage(_Shape):
    pipeline_id: int | str | None
    stage_id: str | None
    stage_name: str | None
    pipeline_index: int
    stage: str | None
    concurrency: float | None
    items: float | None
    interval_s: float | None
    qps: float | None
    tasks: float | None
    failures: float | None
    task_mean_s: float | None
    task_p90_s: float | None
    task_p99_s: float | None
    # In the worker thread, around the user's function (None: not measured).
    task_cpu_mean_s: float | None
    task_call_mean_s: float | None
    # Of the same calls, time the worker waited runnable for a core (sampled; Linux).
    task_runq_mean_s: float | None
    cpu_cores: float | None  # CPU seconds the stage's workers spend per second
    put_wait_mean_s: float | None
    get_wait_mean_s: float | None
    occupancy_pct: float | None
    busy_pct: float | None
    is_slowest: bool
    is_starving: bool


class Bottleneck(_Shape):
    slowest_stage: str | None
    slowest_busy_pct: float | None
    starving_queue: str | None
    starving_occupancy_pct: float | None
    # The stage threads take turns at the GIL (analysis/statistics/gil.py):
    # slowest_stage is the one computing most under it.
    gil_bound: bool
    gil_cpu_cores: float | None
    # The run's mean sampled GIL contention behind the verdict (pct), when sampled.
    gil_contention_pct: float | None
    # Without SPDL stages: the DataLoader part named (__getitem__ | collate_fn;
    # analysis/statistics/loader.py); slowest_stage is its row.
    loader_part: str | None
    summary: str


class PipelineCallback(_Shape):
    name: str
    kind: str
    calls: int
    total_s: float
    mean_s: float
    max_s: float
    per_step_s: float
    share_pct: float | None


class HostSummary(_Shape):
    samples: int
    cpu_pct_mean: float | None
    cpu_pct_max: float | None
    rss_bytes_max: float | None
    mem_used_bytes_max: float | None
    disk_read_bytes_per_s_mean: float | None
    disk_write_bytes_per_s_mean: float | None
    net_sent_bytes_per_s_mean: float | None
    net_recv_bytes_per_s_mean: float | None
    gpu_util_pct_mean: float | None
    gpu_mem_used_bytes_max: float | None
    gil_contention_pct_mean: float | None
    gil_contention_pct_median: float | None
    gil_contention_pct_max: float | None


class HostPoint(_Shape):
    t_s: float
    cpu_pct: float | None
    rss_bytes: float | None
    mem_used_bytes: float | None
    disk_read_bytes_per_s: float | None
    disk_write_bytes_per_s: float | None
    net_sent_bytes_per_s: float | None
    net_recv_bytes_per_s: float | None
    gpu_util_pct: float | None
    gpu_mem_used_bytes: float | None
    gil_contention_pct: float | None


class PipelineHost(_Shape):
    summary: HostSummary
    series: list[HostPoint]


class PipelineProfiler(_Shape, kw_only=True):
    """Whose torch.profiler traces the run has (`tb-pipeline record --profile`):
    the launcher's, with its schedule, or the script's own (the launcher then started none)."""

    owner: Literal["launcher", "script"]
    wall_time_s: float
    schedule: str | None
    activities: list[str]
    profile_memory: bool
    trace_dir: str | None
    note: str


class PipelineMeta(_Shape, kw_only=True):
    """One writing process (recorder or launcher), or the Composer file read.
    A field its writer did not record is absent (UNSET: not encoded), as in
    the file: Composer's names only its source and path, a recorder's no path."""

    source: str
    wall_time_s: float | None | UnsetType = UNSET
    command: list[str] | None | UnsetType = UNSET
    pid: int | None | UnsetType = UNSET
    python: str | None | UnsetType = UNSET
    cpu_count: int | None | UnsetType = UNSET
    schema: int | None | UnsetType = UNSET
    hostname: str | None | UnsetType = UNSET
    torch: str | None | UnsetType = UNSET
    spdl: str | None | UnsetType = UNSET
    headspace_batches: int | None | UnsetType = UNSET
    host_interval_s: float | None | UnsetType = UNSET
    path: str | None | UnsetType = UNSET
    profilers: list[PipelineProfiler] | UnsetType = UNSET


class PipelineRecording(_Shape):
    """One recording of a pooled group: its own figures, the spread the pooled ones hide."""

    name: str
    steps: int
    mean_step_s: float | None
    data_wait_pct: float | None
    steps_per_s: float | None
    input_bound: InputBoundVerdict


class PipelineRecordings(_Shape):
    """A group of recordings pooled as one run (docs/http_api.md, "Groups of recordings")."""

    recordings: list[PipelineRecording]
    # The recording the host samples come from (the median mean step time).
    representative: str
    note: str


class LoopEpilogue(_Shape):
    """The time the loop's end cost after its last step (per recording): in
    no step, rate or verdict (analysis/statistics/settle.py)."""

    epilogue_s: float
    # The last recorded step held it (a file without the recorder's loop end, or a loop that never ended).
    from_last_step: bool
    note: str


class PipelineReport(_Shape):
    source: PipelineSource
    split: PipelineSplit
    input_bound: InputBound
    throughput: Throughput
    stages: list[PipelineStage]
    bottleneck: Bottleneck
    callbacks: list[PipelineCallback]
    host: PipelineHost
    meta: list[PipelineMeta]
    warnings: list[str]
    group: PipelineRecordings | None
    epilogue: LoopEpilogue | None


class PipelineResponse(PipelineReport):
    run: str
    worker: str
    span: str


PipelineUnit = Literal["count", "s", "pct", "1/s", "bytes"]


class PipelineSummaryRow(_Shape):
    metric: str
    label: str
    unit: PipelineUnit
    baseline: Number | None
    experimental: Number | None
    delta: Number | None
    delta_pct: float | None
    # The step time and the split's parts per step (in µs, as every significance); null for the other rows.
    significance: Significance | None


class DiffPipelineStageRow(_Shape):
    """A stage of both runs (diff/statistics/compare.py:stage_rows). A value is null where that side has
    the stage but did not measure it (a DataLoader part has no queue: no items/s, queue waits, occupancy or
    busy share; no concurrency where the recorder saw none), and its delta with it; a stage one run lacks
    counts 0 there."""

    pipeline_index: int
    stage_name: str | None
    baseline_concurrency: float | None
    experimental_concurrency: float | None
    delta_concurrency: float | None
    delta_concurrency_pct: float | None
    baseline_qps: float | None
    experimental_qps: float | None
    delta_qps: float | None
    delta_qps_pct: float | None
    baseline_task_mean_s: float | None
    experimental_task_mean_s: float | None
    delta_task_mean_s: float | None
    delta_task_mean_pct: float | None
    baseline_task_cpu_mean_s: float | None
    experimental_task_cpu_mean_s: float | None
    delta_task_cpu_mean_s: float | None
    delta_task_cpu_mean_pct: float | None
    baseline_put_wait_mean_s: float | None
    experimental_put_wait_mean_s: float | None
    delta_put_wait_mean_s: float | None
    delta_put_wait_mean_pct: float | None
    baseline_get_wait_mean_s: float | None
    experimental_get_wait_mean_s: float | None
    delta_get_wait_mean_s: float | None
    delta_get_wait_mean_pct: float | None
    # Percentages: `delta_*_pct` in percentage points, `delta_*_rel_pct` the relative change in %.
    baseline_occupancy_pct: float | None
    experimental_occupancy_pct: float | None
    delta_occupancy_pct: float | None
    delta_occupancy_rel_pct: float | None
    baseline_busy_pct: float | None
    experimental_busy_pct: float | None
    delta_busy_pct: float | None
    delta_busy_rel_pct: float | None
    # Of delta_task_mean_s (in µs, as every significance), each recording one sample; null unless both
    # sides are groups of 3 or more recordings.
    significance: Significance | None


class DiffPipelineCallbackRow(_Shape):
    name: str
    kind: str
    baseline_calls: Number
    experimental_calls: Number
    delta_calls: Number
    delta_calls_pct: float | None
    baseline_per_step_s: float
    experimental_per_step_s: float
    delta_per_step_s: float
    delta_per_step_pct: float | None
    baseline_mean_s: float
    experimental_mean_s: float
    delta_mean_s: float
    delta_mean_pct: float | None
    baseline_total_s: float
    experimental_total_s: float
    delta_total_s: float
    delta_total_pct: float | None


class DiffPipelineResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    baseline_report: PipelineReport
    experimental_report: PipelineReport
    summary: list[PipelineSummaryRow]
    # Joined rows, largest |delta task_mean_s| (stages) / |delta per_step_s| (callbacks) first.
    stages: list[DiffPipelineStageRow]
    callbacks: list[DiffPipelineCallbackRow]
    # Where the significance bands' spread between recordings came from.
    noise: ExplainNoise
