"""Diagnostic mode's results (`diagnostic`) and a pair's (`diff/diagnostic`)."""
from __future__ import annotations

from typing import Literal

from .common import RunRef, _Shape

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
