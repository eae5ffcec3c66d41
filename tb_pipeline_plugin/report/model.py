"""The report of `tb-pipeline diff`: its content, declared once.

Every format (text, markdown, html, json, junit) renders one `Report`, and
`--format json` is this Struct encoded, so a dashboard reads exactly what the
other formats show. `docs/report.schema.json` is generated from it
(`python -m tb_pipeline_plugin.report.schema`, run by `make api`; a test fails
when it is stale). The numbers are the routes' (docs/http_api.md): each
field says which answer it comes from. Units are in the field names (`_us`,
`_bytes`, `_pct`) or in a row's `unit`; a delta is experimental − baseline,
so + is slower or larger and − faster or smaller, everywhere.

`REPORT_VERSION` rises when a field is renamed or removed (added fields do
not break a reader that ignores what it does not know).
"""
from __future__ import annotations

from typing import Literal, Union

from msgspec import Struct

from ..contract import Advice, Difference, NoiseSource, Significance, SignificanceVerdict, WorkUnit, WorkUnits

REPORT_VERSION = 1

Number = Union[int, float]
# "us", "bytes", "pct" (a share, 0-100), "count", "items_per_s", "per_s" (samples or tokens a second); null for
# text rows.
Unit = Literal["us", "bytes", "pct", "count", "items_per_s", "per_s"]
Direction = Literal["slower", "faster", "unchanged"]
GateOutcome = Literal["passed", "failed", "not_significant", "cannot_evaluate"]


class _Shape(Struct, forbid_unknown_fields=True, omit_defaults=False):
    pass


class Side(_Shape):
    """One side of the pair as the command line named it."""

    source: str  # the path given to `tb-pipeline diff`
    steps: int  # profiled steps the step verdict rests on
    recordings: int  # 1, or a group's recordings


class StepFigures(_Shape):
    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    delta_pct: float | None


class Step(_Shape):
    """The step-time verdict (`diff/explain`'s `step`; its `significance` is
    the one step verdict the overview row and the gate show too)."""

    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    delta_pct: float | None
    # The sign's word: "slower" for +, "faster" for −.
    direction: Direction
    significance: Significance
    # "recorded": judged on every recorded step (both runs have pipeline statistics); "profiled": on the traces' steps.
    source: Literal["profiled", "recorded"]
    # The unit of the figures above (µs per step, sample or token): not "step" when the runs' work per step differs.
    unit: WorkUnit = "step"
    per_step: StepFigures | None = None  # the per-step figures beside per-unit ones
    baseline_per_s: float | None = None  # samples (tokens) per second, when per sample (token)
    experimental_per_s: float | None = None
    # Which clock and which steps the figures are of, in words (diff/step_basis.py:describe); "" in reports
    # written before it was said.
    basis: str = ""
    # source "recorded": the part of delta_us the profiled steps' parts do not hold, and its share.
    rest_delta_us: Number | None = None
    rest_share_pct: float | None = None


class Noise(_Shape):
    """Where the noise bands came from (`diff/explain`'s `noise`, `between_run_pct`)."""

    source: NoiseSource
    baseline_recordings: int
    experimental_recordings: int
    note: str
    # The spread between recordings a band assumes where it cannot measure it, %.
    between_run_pct: float


class Contributor(_Shape):
    """A part of the step and its share of the step-time delta (`diff/explain`'s `contributors`)."""

    kind: str
    key: str
    name: str
    status: str
    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    # Of the step-time delta, signed: + the part moved the way the step did (slower with a slower step,
    # faster with a faster one), − against it; null when the step's delta is 0.
    share_pct: float | None
    significance: Significance
    # The part's own change, 100 * delta_us / baseline_us (diff/delta.py): + slower, − faster, as every Δ %.
    delta_pct: float | None = None


class WaterfallBar(_Shape):
    """From the baseline's step to the experimental's (`diff/explain`'s `waterfall`)."""

    label: str
    kind: str
    start_us: Number
    end_us: Number
    verdict: SignificanceVerdict | None
    verdict_label: str | None


class MetricRow(_Shape):
    """One compared quantity: an overview metric (`diff/overview`'s rows), a
    pipeline figure (`diff/explain`'s `pipeline`), a memory row (`diff/memory`)."""

    name: str
    label: str
    unit: Unit | None
    baseline: Number | str | None
    experimental: Number | str | None
    delta: Number | None
    delta_pct: float | None
    significance: Significance | None


class Pipeline(_Shape):
    """What both runs' recorded pipeline statistics add (`diff/explain`'s `pipeline`)."""

    clause: str
    rows: list[MetricRow]
    notes: list[str]


class TableRow(_Shape):
    """An operator or kernel: calls and the table's measure (`diff/operators`, `diff/kernels` rows)."""

    name: str  # the full name (a kernel's whole demangled signature)
    # A kernel's display name (analysis/kernel_names.py; templates and parameters folded); null for operators.
    short_name: str | None
    input_shape: str | None
    baseline_calls: Number
    experimental_calls: Number
    baseline_us: Number
    experimental_us: Number
    delta_us: Number
    delta_pct: float | None
    significance: Significance | None


class Table(_Shape):
    """The first rows of a delta table in the routes' default order (largest |delta| of `measure` first)."""

    measure: str  # the compared column: host_self_us, device_self_us, total_us
    # "sample" / "token": times are µs per sample (token), the runs' work per step differing; null: totals.
    per_unit: str | None
    total: int  # rows in the whole table
    rows: list[TableRow]


class Memory(_Shape):
    """Where the memory peak went (`diff/memory`): the sentence's device."""

    sentence: str
    message: str | None  # why there is nothing to compare
    device: str | None
    baseline_peak_bytes: int | None
    experimental_peak_bytes: int | None
    growth_bytes: int | None
    growth_pct: float | None
    # Bytes alive at each run's peak by module (label: "module path · phase · operator").
    rows: list[MetricRow]
    # Both runs' CUDA memory snapshots (`diff/memory`'s `snapshot`): each device's peak allocated, reserved
    # and fragmentation, then what was live at the peaks by category (label "device · metric" or
    # "device · category"); empty when neither run has one (and in reports written before).
    snapshot_rows: list[MetricRow] = []


class StepTimes(_Shape):
    """Each run's profiled steps in order (`overview`'s `steps[].duration_us`; a group's pooled)."""

    baseline_us: list[Number]
    experimental_us: list[Number]
    # A group's recording of each step (1-based); empty for one recording.
    baseline_recording: list[int]
    experimental_recording: list[int]


class GateResult(MetricRow):
    """A `--fail-if` gate and its outcome, on the overview row it reads (its
    fields above: `name` is the gated metric). Every gate is reported,
    passed ones too."""

    gate: str  # as given: "avg_step_time_us>5"
    op: Literal[">", "<"]
    limit_pct: float
    outcome: GateOutcome
    message: str


class Report(_Shape):
    report_version: int
    # The rows asked for (`--top N`): contributors, operators, kernels and memory rows are cut to it.
    top: int
    baseline: Side
    experimental: Side
    device_present: bool
    # What the contributors are measured on: "device" time when a run kept the device busy most of its steps.
    clock: Literal["host", "device"]
    # The explanation in one sentence (`diff/explain`'s `sentence`).
    sentence: str
    step: Step
    noise: Noise
    conclusive: Advice | None  # null when the step verdict is significant
    note: str | None  # how the runs were compared, when not plainly
    contributors: list[Contributor]
    contributors_total: int
    waterfall: list[WaterfallBar]
    overview: list[MetricRow]
    overview_note: str | None
    pipeline: Pipeline | None  # null unless both runs have recorded pipeline statistics
    operators: Table
    kernels: Table
    memory: Memory
    step_times: StepTimes
    gates: list[GateResult]
    # What `tb-pipeline diff` exits with: 0 no gate failed, 1 a gate failed, 2 a gate cannot be evaluated.
    exit_status: int
    # The unit the runs are compared in and each run's work per step (`diff/overview`'s `units`).
    units: WorkUnits | None = None
    # How the runs differ besides the change, most consequential first (`diff/overview`'s `comparability`).
    comparability: list[Difference] = []
