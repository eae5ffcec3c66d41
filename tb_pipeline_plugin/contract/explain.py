"""The explanation of a pair (`diff/explain`): the step verdict, ranked contributors, the
waterfall, launch health and the pipeline part."""
from __future__ import annotations

from typing import Literal

from .common import Number, RunRef, _Shape
from .modules_diff import CompiledSide, PieceStatus
from .pair import Difference, WorkUnits
from .pipeline import InputBoundVerdict
from .significance import Advice, ExplainNoise, Significance, SignificanceVerdict


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
    # source "recorded": the part of delta_us the profiled steps' parts (the contributors) do not hold, and
    # its share of delta_us (null when no share is given); null for "profiled".
    rest_delta_us: Number | None
    rest_share_pct: float | None
    # Which clock and which steps the figures are of, in words (diff/step_basis.py:describe).
    basis: str
    # The unit of the figures above: "sample" or "token" when the runs' work per step differs (µs per unit).
    unit: Literal["step", "sample", "token"]
    units: WorkUnits | None  # null when per step
    per_step: StepFigures | None  # the per-step figures beside per-unit ones; null when per step
    baseline_per_s: float | None  # samples (tokens) per second; null when per step
    experimental_per_s: float | None


ContributorKind = Literal["data_loading", "module", "backward", "optimizer", "communication", "annotation",
                          "unknown", "host", "device", "stall", "device_idle", "device_overlap", "pre_window"]


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
    # The same kernels' display names (analysis/kernel_names.py), in the same order.
    baseline_kernel_short_names: list[str]
    experimental_kernel_short_names: list[str]


class BusyPair(_Shape):
    """The share of each run's steps the device was busy with their work (%)."""

    baseline: float | None
    experimental: float | None


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
    """What both runs' recorded pipeline statistics add (diff/explain/pipeline.py);
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
