"""One run's overview (`overview`) and a pair's overview rows (`diff/overview`)."""
from __future__ import annotations

from typing import Literal

from .common import Number, RunRef, _Shape
from .pair import Difference, WorkUnits
from .significance import Significance


class Breakdown(_Shape):
    """Per-step time by category, in the order time is assigned to them."""

    kernel: float
    memcpy: float
    memset: float
    communication: float
    runtime: float
    data_loading: float
    cpu_exec: float
    other: float


class DeviceIdle(_Shape):
    """The step's device idle time by cause (analysis/device_idle.py); the causes sum to it."""

    data: float
    sync: float
    launch: float
    other: float


class StepInfo(_Shape):
    name: str
    step: int
    start_us: float
    duration_us: float
    breakdown_us: Breakdown
    # Null without device work, or over a whole window.
    device_idle_us: DeviceIdle | None


class Bound(_Shape):
    """What bounds a run's profiled steps (analysis/device_idle.py:bound)."""

    bound: Literal["device", "input", "sync", "launch", "other"]
    words: str
    idle_pct: float  # the device's idle share of the steps' time
    cause_pct: DeviceIdle  # each cause's share of the idle time (%)


class DeviceInfo(_Shape):
    type: Literal["CPU", "GPU"]
    name: str | None
    count: int | None
    memory_bytes: int | None
    compute_capability: str | None


class DistributedInfo(_Shape):
    rank: int | None
    world_size: int | None
    backend: str | None


class MemoryDevice(_Shape):
    device: str
    avg_allocated_bytes: float | None
    peak_allocated_bytes: int
    peak_reserved_bytes: int | None
    samples: int


class MemorySummary(_Shape):
    avg_bytes: float | None
    peak_bytes: int | None
    device: str | None
    devices: list[MemoryDevice]


class OverviewResponse(_Shape):
    run: str
    worker: str
    span: str
    device: DeviceInfo
    device_present: bool
    distributed: DistributedInfo | None
    trace_duration_us: float
    # When the first step started (Unix seconds); null when the trace's timestamps name no time of day.
    start_unix_s: float | None
    steps: list[StepInfo]
    avg_step_time_us: float
    breakdown_us: Breakdown
    gpu_utilization_pct: float | None
    # Per step, mean: the device's idle time by cause, and the bound it implies; null without device work.
    device_idle_us: DeviceIdle | None
    bound: Bound | None
    memory: MemorySummary
    warnings: list[str]


DiffUnit = Literal["us", "bytes", "pct", "count", "per_s"]


class DiffOverviewRow(_Shape):
    metric: str
    label: str
    unit: DiffUnit | None
    baseline: Number | str | None
    experimental: Number | str | None
    delta: Number | None
    delta_pct: float | None
    # Per-step metrics (step time, breakdown, time per sample or token) only; null for the others.
    significance: Significance | None
    # What a reader must know at this number: why it has no verdict, or where to look instead.
    caveat: str | None


class DiffOverviewResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    device_present: bool
    rows: list[DiffOverviewRow]
    # How the runs are compared when not per step (one run has no steps).
    note: str | None
    units: WorkUnits
    # Every difference between what the runs were, most consequential first (empty: none known).
    comparability: list[Difference]
