"""The HTTP contract: every response shape, declared once.

`docs/openapi.json` is generated from these Structs (`python -m
tb_pipeline_plugin.server.openapi`), and the frontend's TypeScript types are
generated from that document (`npm run gen:api` in frontend/), so Python,
the schema and TypeScript cannot drift apart: `make test` fails when a
generated file is stale, and the route tests decode every response body with
these types (`forbid_unknown_fields`: an undeclared field fails too).

Units are in the field names (`_us`, `_bytes`, `_pct`); `None` is JSON
`null`: a percentage whose baseline is 0, a value the trace does not record.
"""
from __future__ import annotations

from typing import Literal, Union

import msgspec
from msgspec import Struct

Number = Union[int, float]


class _Shape(Struct, forbid_unknown_fields=True, omit_defaults=False):
    pass


# ---------------------------------------------------------------- errors

class ErrorResponse(_Shape, kw_only=True):
    error: str
    status: int
    # 409 only: the run is being parsed; retry later.
    run_status: Literal["loading"] | None = None


# ---------------------------------------------------------------- runs

RunStatus = Literal["ready", "loading", "failed", "unloaded"]
RunKind = Literal["trace", "pipeline", "diagnostic"]


class WorkerInfo(_Shape):
    name: str
    spans: list[str]


class RunInfo(_Shape):
    name: str
    workers: list[WorkerInfo]
    kinds: list[RunKind]
    status: RunStatus
    error: str | None
    warnings: list[str]


class RunsResponse(_Shape):
    runs: list[RunInfo]
    loading: bool


# ---------------------------------------------------------------- overview

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


class StepInfo(_Shape):
    name: str
    step: int
    start_us: float
    duration_us: float
    breakdown_us: Breakdown


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
    steps: list[StepInfo]
    avg_step_time_us: float
    breakdown_us: Breakdown
    gpu_utilization_pct: float | None
    memory: MemorySummary
    warnings: list[str]


# ---------------------------------------------------------------- per-run tables

GroupBy = Literal["name", "name_and_shape"]


class OperatorRow(_Shape):
    name: str
    input_shape: str | None
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float


class OperatorsResponse(_Shape):
    group_by: GroupBy
    device_present: bool
    total: int
    rows: list[OperatorRow]


class KernelRow(_Shape):
    name: str
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    grid: str | None
    block: str | None
    registers_per_thread: float | None
    shared_memory_bytes: float | None
    blocks_per_sm: float | None
    warps_per_sm: float | None
    occupancy_pct: float | None


class KernelsResponse(_Shape):
    device_present: bool
    total: int
    rows: list[KernelRow]


class ModuleNode(_Shape):
    name: str
    module_class: str
    calls: int
    host_total_us: float
    host_self_us: float
    device_total_us: float
    device_self_us: float
    children: list["ModuleNode"]


class ModulesResponse(_Shape):
    device_present: bool
    roots: list[ModuleNode]


# ---------------------------------------------------------------- diff

class TraceRef(_Shape):
    run: str
    worker: str
    span: str


DiffUnit = Literal["us", "bytes", "pct", "count"]


class DiffOverviewRow(_Shape):
    metric: str
    label: str
    unit: DiffUnit | None
    baseline: Number | str | None
    experimental: Number | str | None
    delta: Number | None
    delta_pct: float | None


class DiffOverviewResponse(_Shape):
    baseline: TraceRef
    experimental: TraceRef
    device_present: bool
    rows: list[DiffOverviewRow]
    # How the runs are compared when not per step (one run has no steps).
    note: str | None


PieceKind = Literal["root", "step", "data_loading", "module", "backward", "optimizer", "annotation", "unknown"]
PieceStatus = Literal["matched", "baseline_only", "experimental_only"]


class DiffPiece(_Shape, kw_only=True):
    name: str
    kind: PieceKind
    key: str
    # The aligned step (first index of `path`); null on the root, which spans every step.
    step: int | None
    path: str
    status: PieceStatus
    has_children: bool
    baseline_name: str | None
    experimental_name: str | None
    note: str | None
    baseline_host_us: float
    experimental_host_us: float
    delta_host_us: float
    delta_host_pct: float | None
    baseline_device_us: float
    experimental_device_us: float
    delta_device_us: float
    delta_device_pct: float | None
    baseline_calls: int
    experimental_calls: int
    delta_calls: int
    # The node only: its children were aligned by an approximate fallback.
    approximate: bool | None = None


class DiffTrend(_Shape):
    """Running sums over the returned children in execution order (µs)."""

    baseline_host_us: list[float]
    experimental_host_us: list[float]
    delta_host_us: list[float]
    baseline_device_us: list[float]
    experimental_device_us: list[float]
    delta_device_us: list[float]


class Crumb(_Shape):
    name: str
    path: str


class DiffModulesResponse(_Shape):
    baseline: TraceRef
    experimental: TraceRef
    path: str
    breadcrumb: list[Crumb]
    node: DiffPiece
    approximate: bool
    children_total: int
    offset: int
    limit: int
    children: list[DiffPiece]
    trend: DiffTrend
    device_present: bool


class DiffOperatorRow(_Shape):
    name: str
    input_shape: str | None
    baseline_calls: int
    experimental_calls: int
    delta_calls: int
    delta_calls_pct: float | None
    baseline_host_self_us: float
    experimental_host_self_us: float
    delta_host_self_us: float
    delta_host_self_pct: float | None
    baseline_host_total_us: float
    experimental_host_total_us: float
    delta_host_total_us: float
    delta_host_total_pct: float | None
    baseline_device_self_us: float
    experimental_device_self_us: float
    delta_device_self_us: float
    delta_device_self_pct: float | None
    baseline_device_total_us: float
    experimental_device_total_us: float
    delta_device_total_us: float
    delta_device_total_pct: float | None


class DiffKernelRow(_Shape):
    name: str
    baseline_calls: int
    experimental_calls: int
    delta_calls: int
    delta_calls_pct: float | None
    baseline_total_us: float
    experimental_total_us: float
    delta_total_us: float
    delta_total_pct: float | None
    baseline_mean_us: float
    experimental_mean_us: float
    delta_mean_us: float
    delta_mean_pct: float | None
    baseline_min_us: float
    experimental_min_us: float
    delta_min_us: float
    delta_min_pct: float | None
    baseline_max_us: float
    experimental_max_us: float
    delta_max_us: float
    delta_max_pct: float | None


class _DiffTable(_Shape):
    baseline: TraceRef
    experimental: TraceRef
    path: str
    device_present: bool
    total: int
    offset: int
    limit: int
    sort: str
    order: Literal["desc", "asc"]
    # The statistic the default order ranks by (its delta, largest |delta| first).
    primary: str
    # The statistics each row compares (baseline_X, experimental_X, delta_X, delta_X_pct).
    columns: list[str]


class DiffOperatorsResponse(_DiffTable):
    table: Literal["operators"]
    group_by: GroupBy
    rows: list[DiffOperatorRow]


class DiffKernelsResponse(_DiffTable):
    table: Literal["kernels"]
    group_by: None
    rows: list[DiffKernelRow]


# ---------------------------------------------------------------- diagnostic mode

Verdict = Literal["scales", "gil_bound", "cpu_saturated", "io_bound", "contention", "inconclusive",
                  "not_swept", "failing"]
Executor = Literal["thread", "process"]


class DiagnosticEnvironment(_Shape):
    """The machine and interpreter the sweep ran on."""

    cores: int  # one core = 100 % CPU
    python: str
    implementation: str
    free_threaded: bool
    gil_enabled: bool
    process_start_method: str
    levels: list[int]
    executors: list[str]
    warmup_s: float
    duration_s: float
    source: str
    hostname: str


class DiagnosticPoint(_Shape):
    """One stage alone at one concurrency level of one executor."""

    concurrency: int
    qps: float
    # QPS over this curve's QPS at its lowest level; null when that is 0.
    speedup: float | None
    p50_latency_s: float
    p90_latency_s: float
    cpu_pct: float
    machine_cpu_pct: float
    peak_memory_bytes: int
    items: int
    errors: int
    duration_s: float
    cut_short: bool
    first_error: str | None


class DiagnosticCurve(_Shape):
    executor: Executor
    # The smallest level within 5 % of the best QPS, and its QPS.
    best_concurrency: int
    best_qps: float
    points: list[DiagnosticPoint]


class GilHolder(_Shape):
    function: str
    file: str
    line: int
    samples: int
    # Of the GIL-held samples.
    share: float


class DiagnosticGil(_Shape):
    # The thread level sampled.
    concurrency: int
    total_samples: int
    # Share of the sampled time some thread held the GIL.
    held_share: float
    # Why there was no sampling (then `top` is empty).
    skipped: str | None
    top: list[GilHolder]


class DiagnosticStage(_Shape):
    stage: str
    # Position in the chain; null when the stage summary was not written (sweep cut short).
    index: int | None
    kind: Literal["map", "regroup"] | None
    verdict: Verdict
    label: str
    reason: str
    # Null: that executor has no curve.
    best_thread_concurrency: int | None
    best_thread_qps: float | None
    best_process_concurrency: int | None
    best_process_qps: float | None
    thread_speedup: float
    process_speedup: float
    peak_memory_bytes: int
    items: int
    errors: int
    first_error: str | None
    inputs: int | None
    input_errors: int
    process_skipped: str | None
    skipped: str | None
    cut_short: bool
    curves: list[DiagnosticCurve]
    gil: DiagnosticGil | None


class DiagnosticResponse(_Shape):
    run: str
    # The end record was written; cut_short: stopped early (Ctrl-C, time limit) or never finished.
    complete: bool
    cut_short: bool
    reason: str | None
    elapsed_s: float | None
    environment: DiagnosticEnvironment | None
    stages: list[DiagnosticStage]
    warnings: list[str]


class DiagnosticStageDiff(_Shape):
    stage: str
    in_baseline: bool
    in_experimental: bool
    verdict_baseline: Verdict | None
    verdict_experimental: Verdict | None
    verdict_changed: bool
    # Experimental / baseline best QPS; null where either side is missing or 0.
    best_thread_qps_ratio: float | None
    best_process_qps_ratio: float | None


class DiffDiagnosticResponse(_Shape):
    baseline: DiagnosticResponse
    experimental: DiagnosticResponse
    # Stages matched by name, baseline's order first.
    stages: list[DiagnosticStageDiff]


def validate(body: bytes, response_type: type) -> None:
    """Decode `body` as `response_type`; raises msgspec.ValidationError on drift."""
    msgspec.json.decode(body, type=response_type)
