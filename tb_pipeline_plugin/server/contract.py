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
    # The aligned step (first index of `path`); absent on the root, which spans every step.
    step: int | None = None
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


def validate(body: bytes, response_type: type) -> None:
    """Decode `body` as `response_type`; raises msgspec.ValidationError on drift."""
    msgspec.json.decode(body, type=response_type)


# ---------------------------------------------------------------- distributed

class RankRow(_Shape):
    worker: str
    # distributedInfo.rank; the worker's position when the trace has none.
    rank: int
    rank_from_trace: bool
    world_size: int | None
    backend: str | None
    steps: int
    step_time_us: float
    computation_us: float
    communication_us: float
    idle_us: float
    # This rank's step time minus the median rank's.
    vs_median_us: float


class Straggler(_Shape):
    worker: str
    rank: int
    step_time_us: float
    vs_median_us: float


class RunRanks(_Shape):
    run: str
    ranks: list[RankRow]
    slowest: Straggler | None
    median_step_time_us: float | None


class RankDeltaRow(_Shape):
    rank: int
    baseline_worker: str
    experimental_worker: str
    baseline_step_time_us: float
    experimental_step_time_us: float
    delta_step_time_us: float
    delta_step_time_pct: float | None
    baseline_computation_us: float
    experimental_computation_us: float
    delta_computation_us: float
    delta_computation_pct: float | None
    baseline_communication_us: float
    experimental_communication_us: float
    delta_communication_us: float
    delta_communication_pct: float | None
    baseline_idle_us: float
    experimental_idle_us: float
    delta_idle_us: float
    delta_idle_pct: float | None


class DistributedResponse(_Shape):
    baseline: RunRanks
    # Absent without an experimental run; then rows is empty.
    experimental: RunRanks | None
    rows: list[RankDeltaRow]
    # Ranks only one of the runs has.
    unmatched_ranks: list[int]
