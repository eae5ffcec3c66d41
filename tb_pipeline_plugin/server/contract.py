"""The HTTP contract: every response shape, declared once.

`docs/openapi.json` is generated from these Structs (`python -m
tb_pipeline_plugin.server.openapi`), and the frontend's TypeScript types are
generated from that document (`npm run gen:api` in frontend/), so Python,
the schema and TypeScript cannot drift apart: `make test` fails when a
generated file is stale, and the route tests decode every response body with
these types (`forbid_unknown_fields`: an undeclared field fails too).

Units are in the field names (`_us`, `_s`, `_bytes`, `_pct`); `None` is JSON
`null`: a percentage whose baseline is 0, a value the trace does not record.
A delta % is named as diff/delta.py says (`pct_name`): `delta_<c without its
unit>_pct`, and `delta_<c without _pct>_rel_pct` for a percentage `c`.
"""
from __future__ import annotations

from typing import Literal, Union

from msgspec import Struct

from ..analysis.operators import GroupBy
from ..diff.launches import KernelGroupBy
# Declared once beside the verdicts it describes; the report of `tb-pipeline diff` carries it too.
from ..diff.pair_shape import Difference, WorkUnits
from ..diff.significance_shape import Advice, NoiseSource, Significance, SignificanceVerdict

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
RunKind = Literal["trace", "pipeline", "diagnostic", "group"]


class StepRange(_Shape):
    first: int  # N of the first ProfilerStep#N
    last: int
    count: int  # steps in the span (last - first + 1 when none is missing)


class SpanInfo(_Shape):
    """What the picker shows for one span (a trace file of the worker, as
    `tensorboard_trace_handler` writes one per profiling cycle)."""

    span: str  # the id in the file name: the URL's and every route's `span`
    order: int  # 1-based, oldest first
    # When the trace file was written, read from the id when it is a timestamp (Unix seconds).
    written_unix_s: float | None
    # Known once the span's trace or its summary is loaded; null before (and for a time the trace cannot tell).
    start_unix_s: float | None
    steps: StepRange | None


class WorkerInfo(_Shape):
    name: str
    spans: list[str]
    span_info: list[SpanInfo]  # one per span, in the order of `spans`


class RunInfo(_Shape):
    name: str
    workers: list[WorkerInfo]
    kinds: list[RunKind]
    status: RunStatus
    error: str | None
    warnings: list[str]
    # A group (kind "group"): its member runs, in recording order; empty for a plain run.
    recordings: list[str]


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
    # When the first step started (Unix seconds); null when the trace's timestamps name no time of day.
    start_unix_s: float | None
    steps: list[StepInfo]
    avg_step_time_us: float
    breakdown_us: Breakdown
    gpu_utilization_pct: float | None
    memory: MemorySummary
    warnings: list[str]


# ---------------------------------------------------------------- per-run tables

class OperatorRow(_Shape):
    name: str
    input_shape: str | None
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float


class OperatorsResponse(_Shape):
    run: str
    worker: str
    span: str
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
    run: str
    worker: str
    span: str
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
    run: str
    worker: str
    span: str
    device_present: bool
    roots: list[ModuleNode]


# ---------------------------------------------------------------- diff

class RunRef(_Shape):
    """How every answer names a run it read. A one-run answer carries these
    three fields at its top; a pair answer carries one of these each as
    `baseline` and `experimental`. `worker` and `span` are "" where they do
    not apply: a group of recordings, pipeline statistics and diagnostic
    results (which belong to the run), every rank of a run."""

    run: str
    worker: str
    span: str


DiffUnit = Literal["us", "bytes", "pct", "count", "per_s"]
InputBoundVerdict = Literal["yes", "partly", "no", "unknown"]


class ExplainNoise(_Shape):
    """Where the explanation's noise bands came from, for the sentence's reader."""

    source: NoiseSource
    baseline_recordings: int
    experimental_recordings: int
    note: str


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


class MemoryPeak(_Shape):
    peak_bytes: int
    # µs from the start of the peak's step (null: the peak is in no step).
    peak_us: Number | None
    step: str | None
    # The operator whose allocation reached the peak, and its part (module path, optimizer, ...).
    operator: str
    part: str
    avg_allocated_bytes: Number
    # Of the peak: memory allocated before the profiled window (blocks basis), or held when the step began (net).
    before_window_bytes: int
    # Frees of blocks allocated before the profiled window.
    frees_before_window: int
    # "blocks": live blocks replayed by address; "net": no addresses, net bytes since the step began.
    basis: str


class MemoryRow(_Shape):
    # By module: the part (module path, data loading, optimizer, "before the window", ...); by operator: its name.
    key: str
    phase: str
    # By module: the operator holding most of the row's bytes; by operator: the part.
    detail: str
    # Innermost Python frames of the user's code around the largest block's allocation ("": no stacks).
    call_path: str
    baseline_bytes: int
    experimental_bytes: int
    delta_bytes: int
    delta_pct: float | None
    baseline_blocks: int
    experimental_blocks: int
    # Median lifetime of the row's freed blocks, µs (null: none freed).
    median_alive_us: Number | None
    # [start, end] µs from the peak's step start of the row's blocks alive at the peak (end null: never freed).
    baseline_lifetimes: list[list[Number | None]]
    experimental_lifetimes: list[list[Number | None]]


class MemoryCurve(_Shape):
    step: str | None
    duration_us: Number
    # µs from the step start; the first point is the level at the start.
    t_us: list[Number]
    allocated_bytes: list[Number]
    reserved_bytes: list[Number | None] | None
    peak_us: Number
    peak_bytes: int


class MemoryStepPeak(_Shape):
    index: int
    baseline_step: str | None
    experimental_step: str | None
    baseline_peak_bytes: int | None
    experimental_peak_bytes: int | None


class MemoryDeviceDiff(_Shape):
    device: str
    baseline: MemoryPeak | None
    experimental: MemoryPeak | None
    growth_bytes: int | None
    growth_pct: float | None
    basis: str
    # Bytes alive at each run's peak, largest |delta| first.
    by_module: list[MemoryRow]
    by_operator: list[MemoryRow]
    steps: list[MemoryStepPeak]
    baseline_curve: MemoryCurve | None
    experimental_curve: MemoryCurve | None
    # The average's largest mover is not the peak's: its attribution follows (else empty lists).
    steady_differs: bool
    steady_by_module: list[MemoryRow]
    steady_by_operator: list[MemoryRow]


class DiffMemoryResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    devices: list[MemoryDeviceDiff]
    # The device the sentence is about: the GPU with the highest peak, else the CPU, of those both runs have.
    device: str | None
    sentence: str
    # Why there is nothing to compare (a run recorded without profile_memory=True).
    message: str | None


class Spikiness(_Shape):
    steps: int
    cv_pct: float | None
    worst_to_median: float | None


class SpikinessPair(_Shape):
    baseline: Spikiness
    experimental: Spikiness


class ProfiledStep(_Shape):
    """The profiled steps' own step delta, which the contributors split,
    when the step's verdict came from the recorded statistics."""

    baseline_steps: int
    experimental_steps: int
    delta_us: Number
    significance: Significance


class StepFigures(_Shape):
    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    delta_pct: float | None


class ExplainStep(_Shape):
    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    delta_pct: float | None
    significance: Significance
    # "recorded": from every recorded step (both runs have pipeline statistics, warm-up and epilogue left
    # out); "profiled": from the traces' profiled steps.
    source: Literal["profiled", "recorded"]
    profiled: ProfiledStep | None
    # The unit of the figures above: "sample" or "token" when the runs' work per step differs (µs per unit).
    unit: Literal["step", "sample", "token"]
    units: WorkUnits | None  # null when per step
    per_step: StepFigures | None  # the per-step figures beside per-unit ones; null when per step
    baseline_per_s: float | None  # samples (tokens) per second; null when per step
    experimental_per_s: float | None


ContributorKind = Literal["data_loading", "module", "backward", "optimizer", "communication", "annotation",
                          "unknown", "host", "device", "stall", "device_idle", "device_overlap", "pre_window"]
# Which run(s) ran a module compiled (torch.compile); its other run's submodules are rolled up into it.
CompiledSide = Literal["baseline", "experimental", "both"]


class TopOperator(_Shape):
    """Inside a module contributor on device time: the launching operator
    whose device time per step changed most, and each run's kernels for it
    (largest first)."""

    name: str
    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    baseline_kernels: list[str]
    experimental_kernels: list[str]


class BusyPair(_Shape):
    """The share of each run's steps the device was busy with their work (%)."""

    baseline: float | None
    experimental: float | None
# Which runs have it: a piece of the module diff, a contributor of the explanation.
# "inside_compiled": one run has it, inside a module the other run ran compiled (its work is that module's there).
PieceStatus = Literal["matched", "baseline_only", "experimental_only", "inside_compiled"]


class Contributor(_Shape):
    kind: ContributorKind
    key: str
    name: str
    status: PieceStatus
    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    # Signed share of the step-time delta; null when that delta is 0.
    share_pct: float | None
    # Modules only: their forward operators' and their backward's part of delta_us.
    forward_delta_us: Number | None
    backward_delta_us: Number | None
    significance: Significance
    compiled: CompiledSide | None
    # Device time only, modules only (the first few contributors).
    top_operator: TopOperator | None


# A contributor's bar, the rest of them as one (`other`), or a step (`total`).
WaterfallKind = Literal[ContributorKind, Literal["total", "other"]]


class WaterfallBar(_Shape):
    label: str
    kind: WaterfallKind
    start_us: Number
    end_us: Number
    verdict: SignificanceVerdict | None
    # The verdict in words (Significance.label).
    verdict_label: str | None


class LaunchRow(_Shape):
    metric: str
    label: str
    unit: Literal["us", "count"]
    baseline: Number | None
    experimental: Number | None
    delta: Number | None
    delta_pct: float | None
    significance: Significance


class ExplainDataWait(_Shape):
    """Mean data wait per recorded step (µs) from the pipeline statistics,
    judged like every per-step delta against the baseline's mean step."""

    baseline_us: Number | None
    experimental_us: Number | None
    delta_us: Number | None
    delta_pct: float | None
    baseline_step_us: Number | None
    experimental_step_us: Number | None
    significance: Significance


class ExplainInputBound(_Shape):
    baseline: InputBoundVerdict
    experimental: InputBoundVerdict
    changed: bool
    baseline_data_wait_pct: float | None
    experimental_data_wait_pct: float | None


class ExplainStageChange(_Shape):
    """The stage both runs have that changed most: by |delta mean task time|,
    stages without task timings after those by relative throughput change."""

    stage: str
    pipeline_index: int
    baseline_task_mean_s: float | None
    experimental_task_mean_s: float | None
    delta_task_mean_pct: float | None
    baseline_qps: float | None
    experimental_qps: float | None
    delta_qps_pct: float | None
    baseline_busy_pct: float | None
    experimental_busy_pct: float | None
    baseline_get_wait_s: float | None
    experimental_get_wait_s: float | None
    baseline_put_wait_s: float | None
    experimental_put_wait_s: float | None


class ExplainGilLimit(_Shape):
    run: str  # baseline | experimental
    stage: str
    cpu_cores: float | None


class ExplainLoaderLimit(_Shape):
    run: str  # baseline | experimental
    part: str  # __getitem__ | collate_fn
    stage: str


class ExplainPipeline(_Shape):
    """What both runs' recorded pipeline statistics add (diff/statistics/explain.py);
    `clause` is the sentence's last clause."""

    data_wait: ExplainDataWait
    input_bound: ExplainInputBound
    stage: ExplainStageChange | None
    # The GIL-bound run's limiting stage, experimental first (None: neither run is GIL-bound).
    gil: ExplainGilLimit | None
    # The input-bound run's DataLoader part that limits loading, experimental first
    # (analysis/statistics/loader.py; None: no input-bound run with DataLoader figures).
    loader: ExplainLoaderLimit | None
    clause: str


class DiffExplainResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    device_present: bool
    sentence: str
    step: ExplainStep
    spikiness: SpikinessPair
    contributors: list[Contributor]
    waterfall: list[WaterfallBar]
    # Launch health per step; empty when neither run has device activity.
    launch: list[LaunchRow]
    note: str | None
    # What the contributors measure: host time, or device time when a run kept the device busy most of its steps.
    clock: Literal["host", "device"]
    # Null without device activity.
    device_busy_pct: BusyPair | None
    # Both runs have recorded pipeline statistics; null otherwise.
    pipeline: ExplainPipeline | None
    # The spread between recordings of one configuration that a noise band
    # assumes where it cannot measure it, % (TB_PIPELINE_BETWEEN_RUN_PCT;
    # docs/http_api.md, Significance).
    between_run_pct: float
    noise: ExplainNoise
    # Every difference between what the runs were (the Overview's list).
    comparability: list[Difference]
    # What would make an inconclusive step verdict conclusive; null when it is significant.
    conclusive: Advice | None


PieceKind = Literal["root", "step", "data_loading", "module", "backward", "optimizer", "annotation", "unknown"]


class DiffPiece(_Shape, kw_only=True):
    name: str
    kind: PieceKind
    key: str
    # The aligned step (first index of `path`); null on the root, which spans every step.
    step: int | None
    path: str
    status: PieceStatus
    has_children: bool
    # A module piece that ran compiled (torch.compile) in one run or both; null otherwise.
    compiled: CompiledSide | None
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
    baseline_calls: Number
    experimental_calls: Number
    delta_calls: Number
    # The node only: its children were aligned by an approximate fallback.
    approximate: bool | None = None
    # Module pieces (diff/modules only): backward operators whose forward
    # operator ran inside the call (fwdbwd flows); null on other pieces.
    baseline_backward_us: float | None
    experimental_backward_us: float | None
    delta_backward_us: float | None
    # Host time with backward moved to the modules: a module piece's forward
    # plus backward, the `backward` piece what no sibling module claims
    # ("backward (unattributed)"), other pieces their host time.
    baseline_with_backward_us: float
    experimental_with_backward_us: float
    delta_with_backward_us: float
    delta_with_backward_pct: float | None
    # Module pieces: the module across steps (its per-step time in every
    # step of each run, diff/significance_marks.py), judged as one family per
    # level; forward + backward, forward, backward. Null on other pieces.
    significance: Significance | None = None
    forward_significance: Significance | None = None
    backward_significance: Significance | None = None


class DiffTrend(_Shape):
    """Running sums over the returned children in execution order (µs)."""

    baseline_host_us: list[float]
    experimental_host_us: list[float]
    delta_host_us: list[float]
    baseline_device_us: list[float]
    experimental_device_us: list[float]
    delta_device_us: list[float]
    # The same for the host time with backward moved to the modules (DiffPiece.*_with_backward_us).
    baseline_with_backward_us: list[float]
    experimental_with_backward_us: list[float]
    delta_with_backward_us: list[float]


class Crumb(_Shape):
    name: str
    path: str


class DiffModulesResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
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
    # A run kept the device busy most of its steps: the view opens on device time.
    device_bound: bool
    # The runs' work per step differs: the pieces are one step's, not per sample (the Overview, the
    # explanation and the tables are); null when the runs do the same work a step.
    per_unit_note: str | None


class DiffOperatorRow(_Shape):
    name: str
    input_shape: str | None
    baseline_calls: Number
    experimental_calls: Number
    delta_calls: Number
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
    # Of the primary column's delta, from per-step sums; null inside a piece (`path`).
    significance: Significance | None


class KernelShare(_Shape):
    """One kernel (or memcpy, memset) a launching operator or module ran, whole profiled window."""

    name: str
    calls: Number
    total_us: Number


class DiffKernelRow(_Shape):
    # The kernel's name; grouped by launch, the launching operator's (`operator`) or the module path (`module`).
    name: str
    # Grouped by `operator`: the module path of the operator's part of the step (a compiled module's other run
    # rolled up into it); null otherwise.
    module: str | None
    # Grouped by launch: each run's kernels of the row, largest first; null grouped by kernel name.
    baseline_kernels: list[KernelShare] | None
    experimental_kernels: list[KernelShare] | None
    baseline_calls: Number
    experimental_calls: Number
    delta_calls: Number
    delta_calls_pct: float | None
    baseline_total_us: float
    experimental_total_us: float
    delta_total_us: float
    delta_total_pct: float | None
    # Grouped by kernel name only (`columns` says which statistics a row compares).
    baseline_mean_us: float | None
    experimental_mean_us: float | None
    delta_mean_us: float | None
    delta_mean_pct: float | None
    baseline_min_us: float | None
    experimental_min_us: float | None
    delta_min_us: float | None
    delta_min_pct: float | None
    baseline_max_us: float | None
    experimental_max_us: float | None
    delta_max_us: float | None
    delta_max_pct: float | None
    # Of the primary column's delta, from per-step sums; null inside a piece (`path`).
    significance: Significance | None


class _DiffTable(_Shape):
    baseline: RunRef
    experimental: RunRef
    path: str
    device_present: bool
    total: int
    offset: int
    limit: int
    sort: str
    order: Literal["desc", "asc"]
    # The statistic the default order ranks by (its delta, largest |delta| first).
    primary: str
    # The statistics each row compares: baseline_X, experimental_X, delta_X and
    # its delta % (`delta_host_self_pct` for `host_self_us`: diff/delta.py, pct_name).
    columns: list[str]
    # "sample" / "token": the runs' work per step differs, so every summed time
    # (not calls, not a kernel's per-call mean/min/max) is µs per sample (token),
    # the marks too; null: each run's totals over its profiled window (or piece).
    per_unit: Literal["sample", "token"] | None
    per_unit_note: str | None


class DiffOperatorsResponse(_DiffTable):
    table: Literal["operators"]
    group_by: GroupBy
    rows: list[DiffOperatorRow]


class DiffKernelsResponse(_DiffTable):
    table: Literal["kernels"]
    # "name": kernels joined by name; "operator": device time by launching operator and module path, each run's
    # kernels listed (fp32 and bf16 GEMMs of one aten::addmm side by side); "module": by module path.
    group_by: KernelGroupBy
    rows: list[DiffKernelRow]


# ---------------------------------------------------------------- diagnostic mode

# "parallel_inside": one call keeps several cores busy by itself (its own thread pool: torch intra-op threads);
# "oversubscribed": past its best level the QPS falls with the machine at 100 % and more busy threads than cores.
StageVerdict = Literal["scales", "gil_bound", "cpu_saturated", "io_bound", "contention", "parallel_inside",
                       "oversubscribed", "inconclusive", "not_swept", "failing"]
Executor = Literal["thread", "process"]
# Baseline vs experimental, judged against the noise (diff/diagnostic/change.py): "changed" beyond the intervals;
# "within_noise"; "machine_busy": the curves differ, but other processes crowded the stage in a run;
# "no_interval": a run has no slices to judge the noise by; "same": the same verdict (or level).
LevelChange = Literal["same", "changed", "within_noise", "machine_busy", "no_interval"]
StageChange = Literal["same", "changed", "within_noise", "machine_busy", "no_interval", "one_side"]


class DiagnosticEnvironment(_Shape):
    """The machine and interpreter the sweep ran on."""

    cores: int  # one core = 100 % CPU
    python: str
    implementation: str
    free_threaded: bool
    gil_enabled: bool
    process_start_method: str
    levels: list[int]
    executors: list[Executor]
    warmup_s: float
    duration_s: float
    source: str
    hostname: str
    # torch intra-op threads of the main process (thread levels keep them) and those the pipeline's worker
    # processes set (DataLoader: 1); null: unknown (torch not loaded; workers inherit the main process's).
    intra_op_threads: int | None
    process_intra_op_threads: int | None
    # The sweep's time budget; null: none (or results written before there was one).
    time_limit_s: float | None


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
    # The level's 99 % intervals, from the slices of its measured window (QPS: with the between-recordings
    # term); null: results written before levels were sliced.
    qps_low: float | None
    qps_high: float | None
    cpu_pct_low: float | None
    cpu_pct_high: float | None
    # How many recordings measured the level (a group's pooled level: QPS their geometric mean, the
    # interval from their spread); 1 for a plain run.
    recordings: int
    # torch intra-op threads in the workers during the level; null: unknown (torch not loaded, or older results).
    intra_op_threads: int | None
    # Cores one call kept busy per calling thread (the level's CPU over its calling threads'); null: the callers
    # mostly waited. Results written before callers were measured: CPU % / level, a lower bound.
    cores_per_caller: float | None
    # Why the level stopped before its bound ("time limit 180 s", "Ctrl-C", "low memory: ..."); null: it did not.
    cut_reason: str | None


class SkippedLevel(_Shape):
    """A level of a stage that was not run."""

    executor: Executor
    concurrency: int
    # "time": it would not fit the stage's share of the time budget; "memory": nor the memory free.
    cause: Literal["time", "memory"]
    reason: str


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
    verdict: StageVerdict
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
    # The most CPU % other processes took at a level of this stage where the machine was full (0: never);
    # crowded from 50: its QPS then says as much about them as about the stage.
    others_cpu_pct: float
    crowded: bool
    # Cores one call keeps busy by itself at one worker, when that is 1.5 or more (its own thread pool); else null.
    cores_by_itself: float | None
    # Where the QPS falls with the machine at 100 % and more busy threads than cores, in words; null: nowhere.
    oversubscription: str | None
    skipped_levels: list[SkippedLevel]


class DiagnosticGroup(_Shape):
    """A group of recordings' results pooled (docs/http_api.md, "Groups of recordings")."""

    recordings: list[str]
    # One recording's log-QPS spread around its level's mean, pooled over the levels measured more than
    # once, as a % (exp(sd) - 1); null where no level was; and its degrees of freedom.
    between_recordings_pct: float | None
    degrees_of_freedom: int
    note: str


class DiagnosticReport(_Shape):
    # The level of every interval below (`qps_low`..`qps_high`, ...).
    interval_confidence: float
    # The end record was written; cut_short: stopped early (Ctrl-C, time limit) or never finished.
    complete: bool
    cut_short: bool
    reason: str | None
    elapsed_s: float | None
    environment: DiagnosticEnvironment | None
    stages: list[DiagnosticStage]
    warnings: list[str]
    group: DiagnosticGroup | None


class DiagnosticResponse(DiagnosticReport):
    run: str
    worker: str
    span: str


class DiagnosticStageDiff(_Shape):
    stage: str
    in_baseline: bool
    in_experimental: bool
    verdict_baseline: StageVerdict | None
    verdict_experimental: StageVerdict | None
    # The verdicts differ beyond noise: `change` is "changed".
    verdict_changed: bool
    change: StageChange
    # In words, with the evidence: "verdicts differ (scales vs CPU-saturated) but within noise: best thread QPS x1.03 ± 0.08, ...".
    change_reason: str
    # Experimental / baseline best QPS; null where either side is missing or 0; its 99 % interval, null
    # where a run has no slices.
    best_thread_qps_ratio: float | None
    best_thread_qps_ratio_low: float | None
    best_thread_qps_ratio_high: float | None
    best_process_qps_ratio: float | None
    best_process_qps_ratio_low: float | None
    best_process_qps_ratio_high: float | None
    # Did the best concurrency move beyond noise; null where a run has no such curve.
    best_thread_concurrency_change: LevelChange | None
    best_process_concurrency_change: LevelChange | None


class DiffDiagnosticResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    baseline_report: DiagnosticReport
    experimental_report: DiagnosticReport
    # The level of the ratios' intervals.
    interval_confidence: float
    # Stages matched by name, baseline's order first.
    stages: list[DiagnosticStageDiff]


# ---------------------------------------------------------------- pipeline statistics
# Seconds here (`_s`): step-level statistics are milliseconds to seconds, and
# the records are written in seconds (docs/pipeline_format.md).

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
    """One writing process (recorder or launcher), or the Composer file read."""

    source: str
    wall_time_s: float | None = None
    command: list[str] | None = None
    pid: int | None = None
    python: str | None = None
    cpu_count: int | None = None
    schema: int | None = None
    hostname: str | None = None
    torch: str | None = None
    spdl: str | None = None
    headspace_batches: int | None = None
    host_interval_s: float | None = None
    path: str | None = None
    profilers: list[PipelineProfiler] = []


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
    pipeline_index: int
    stage_name: str | None
    baseline_concurrency: float
    experimental_concurrency: float
    delta_concurrency: float
    delta_concurrency_pct: float | None
    baseline_qps: float
    experimental_qps: float
    delta_qps: float
    delta_qps_pct: float | None
    baseline_task_mean_s: float
    experimental_task_mean_s: float
    delta_task_mean_s: float
    delta_task_mean_pct: float | None
    # 0 where a side did not measure CPU time (as every joined column's missing side).
    baseline_task_cpu_mean_s: float
    experimental_task_cpu_mean_s: float
    delta_task_cpu_mean_s: float
    delta_task_cpu_mean_pct: float | None
    baseline_put_wait_mean_s: float
    experimental_put_wait_mean_s: float
    delta_put_wait_mean_s: float
    delta_put_wait_mean_pct: float | None
    baseline_get_wait_mean_s: float
    experimental_get_wait_mean_s: float
    delta_get_wait_mean_s: float
    delta_get_wait_mean_pct: float | None
    # Percentages: `delta_*_pct` in percentage points, `delta_*_rel_pct` the relative change in %.
    baseline_occupancy_pct: float
    experimental_occupancy_pct: float
    delta_occupancy_pct: float
    delta_occupancy_rel_pct: float | None
    baseline_busy_pct: float
    experimental_busy_pct: float
    delta_busy_pct: float
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


# ---------------------------------------------------------------- diff/timeline

TimelineKind = Literal["operator", "kernel", "memcpy", "memset", "annotation", "module", "python"]


class TimelineLane(_Shape):
    label: str
    # A device stream (else a host thread).
    device: bool


class TimelineEvents(_Shape):
    """One column per field, one entry per event, by start (compact: a
    whole step is thousands of events)."""
    name: list[int]  # index into the side's `names`
    kind: list[int]  # index into the answer's `kinds`
    ts_us: list[float]  # after the side's `start_us` (the piece's start)
    dur_us: list[float]
    lane: list[int]  # index into the side's `lanes`
    depth: list[int]  # nesting inside the lane, 0 outermost
    match: list[int | None]  # shared with the matching event of the other side
    delta_us: list[float | None]  # matched: experimental - baseline duration


class TimelineMerged(_Shape):
    """Events too short to draw, merged per lane and depth: each entry spans
    from its first event's start to its last one's end."""
    lane: list[int]
    depth: list[int]
    ts_us: list[float]
    dur_us: list[float]
    count: list[int]
    merged_us: list[float]  # the merged events' summed duration


class TimelineSide(_Shape):
    piece_name: str
    # Absolute trace time of the piece (host window), and of the window drawn.
    start_us: float
    end_us: float
    window_start_us: float
    window_end_us: float
    # The end of the window's last event, or the window's end if later (device
    # work can outlast the piece; events enclosing the window do not count).
    events_end_us: float
    lanes: list[TimelineLane]
    names: list[str]
    events: TimelineEvents
    events_total: int  # in the window: drawn + merged
    min_draw_us: float  # shorter events were merged (0: none)
    merged: TimelineMerged
    merged_count: int
    merged_us: float


class DiffTimelineResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    path: str
    name: str
    kind: PieceKind
    status: PieceStatus
    breadcrumb: list[Crumb]
    kinds: list[TimelineKind]
    from_us: float | None
    to_us: float | None
    matched: int  # pairs of matched events in the piece
    baseline_side: TimelineSide | None
    experimental_side: TimelineSide | None
    # A run kept the device busy most of its steps: device streams are the first lanes.
    device_bound: bool


# ---------------------------------------------------------------- timeline

class ProfilerLinkResponse(_Shape):
    # Our selection, worker and span resolved as every route resolves them.
    run: str
    worker: str
    span: str
    # The same file under torch-tb-profiler's names (its routes take these).
    profiler: RunRef


# ---------------------------------------------------------------- distributed

RankSource = Literal["trace", "name", "order"]


class RankRow(_Shape):
    worker: str
    # distributedInfo.rank when every worker has a distinct one; else `rankN` in
    # every worker's name when distinct; else the worker's place in natural order.
    rank: int
    rank_from_trace: bool
    # Which of those three gave `rank` (the same for every row of a run).
    rank_source: RankSource
    world_size: int | None
    backend: str | None
    steps: int
    step_time_us: float
    computation_us: float
    communication_us: float
    idle_us: float
    # This rank's step time minus the median rank's, and that as % of the median (null when the median is 0).
    vs_median_us: float
    vs_median_pct: float | None


class Straggler(_Shape):
    worker: str
    rank: int
    step_time_us: float
    vs_median_us: float
    vs_median_pct: float | None


class RankAtPercentile(_Shape):
    # Of the ranks sorted by step time, the one at position round(pct / 100 * (n - 1)),
    # with its own split (the parts add up to its step time).
    pct: int
    rank: int
    worker: str
    step_time_us: float
    computation_us: float
    communication_us: float
    idle_us: float


SplitQuantity = Literal["step_time_us", "computation_us", "communication_us", "idle_us"]


class QuantitySpread(_Shape):
    # One quantity's own distribution over the ranks: `values[i]` is its value
    # at percentile `percentiles[i]` of RunRanks (a rank's value, never interpolated).
    quantity: SplitQuantity
    values: list[float]
    mean: float


class RankHistogram(_Shape):
    # Ranks per bin of average step time; bins [edges_us[i], edges_us[i + 1]), the last closed.
    # In a pair both runs share the edges.
    edges_us: list[float]
    counts: list[int]


class RankNote(_Shape):
    worker: str
    text: str


class RankCoverage(_Shape):
    # Rank files of the run (each worker's last span), those left out included.
    total: int
    # Ranks in `ranks`.
    ready: int
    # Being read or parsed: asked again, the answer holds more (see `complete`).
    loading: int
    # Ranks whose file could not be read, and the first few of them with why.
    failed: int
    failures: list[RankNote]
    # Ranks whose file was read with losses (a damaged trace), and the first few warnings.
    warned: int
    warnings: list[RankNote]
    # Ranks past `limit` (the first `limit` in the workers' natural order are read);
    # `limit_variable` is the environment variable that raises it.
    left_out: int
    limit: int
    limit_variable: str


class RunRanks(_Shape):
    ranks: list[RankRow]
    slowest: Straggler | None
    median_step_time_us: float | None
    # The slowest ranks, slowest first (ties: lower rank first), at most 10.
    slowest_ranks: list[RankRow]
    # The rank at each percentile 0..100 of step time (empty without ranks).
    percentiles: list[RankAtPercentile]
    # Each quantity's value at `spread_percentiles`, and its mean.
    spread_percentiles: list[int]
    spread: list[QuantitySpread]
    histogram: RankHistogram
    coverage: RankCoverage


class SplitDeltas(_Shape):
    """Baseline, experimental, delta and delta % of a step and its split."""

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


class RankDeltaRow(SplitDeltas):
    rank: int
    baseline_worker: str
    experimental_worker: str


class PercentileDeltaRow(SplitDeltas):
    # Each quantity's own value at percentile `pct` over the ranks of each run.
    pct: int


class DistributedResponse(_Shape):
    baseline: RunRef
    # Absent without an experimental run; then rows is empty.
    experimental: RunRef | None
    baseline_ranks: RunRanks
    experimental_ranks: RunRanks | None
    rows: list[RankDeltaRow]
    # Ranks only one of the runs has (while `complete` is false, maybe only because the other's is loading).
    unmatched_ranks: list[int]
    # Both runs at the percentiles of `spread_percentiles` (empty without an experimental run).
    by_percentile: list[PercentileDeltaRow]
    # No rank of either run is still loading: asking again gives the same answer.
    complete: bool
