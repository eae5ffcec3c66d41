"""Ranks of a run and of a pair (`distributed`): per-rank split, stragglers, percentiles."""
from __future__ import annotations

from typing import Literal

from .common import RunRef, _Shape

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
