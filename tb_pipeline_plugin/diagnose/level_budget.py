"""Which levels fit: the machine's cores, the stage's share of the sweep's
time budget, and the memory free.

Levels run up to the cores and one above (more workers than cores cannot
make a computing stage faster, and each one costs memory and time); threads
go on past that only while the stage keeps gaining as waiting stages do.
Before each level above the lowest, the level before it predicts what the
next one costs: its time (start-up growing with the workers, a call in
flight at each end of the window, calls slower by as much as the workers
then outnumber the cores) and its memory (what the level before used, per
worker). A level that would not fit is skipped, with the estimate that
decided it; the lowest level of each executor always runs (nothing is known
before it), bounded only by the sweep's time limit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .process_tree import gigabytes

MEMORY_HEADROOM = 0.8  # a level may plan to use this share of the memory left to the sweep
LOW_MEMORY_FRACTION = 0.05  # a level is stopped when the machine's free memory falls under this share of it
# Threads past the cores + 1 go on while the curve looks like a waiting stage's, as the I/O verdict reads one: QPS
# at the last level at least half of linear over the lowest and more than the cores explain, each worker under 35 %
# of a core at the lowest level and the last. (Fewer conditions are not enough on a busy machine: a GIL-bound stage
# at 4 threads keeps 25 % of a core each, and a lowest level that neighbours starved makes any level look faster.)
IO_HALF_LINEAR = 0.5
IO_CPU_PER_WORKER_PCT = 35.0


def fitted_levels(levels, cores: int) -> tuple[list[int], list[int]]:
    """(the asked levels up to the cores and the first one above them, the
    higher ones: threads run them only while the stage gains like I/O)."""
    asked = sorted({int(x) for x in levels if int(x) >= 1})
    fit = [x for x in asked if x <= cores] + [x for x in asked if x > cores][:1]
    return fit, [x for x in asked if x not in fit]


def gains_like_io(points: list[tuple[int, float, float]], cores: int) -> bool:
    """`points`: (level, QPS, CPU %) measured so far, ascending: the curve
    still gains as a waiting stage's does (the constants' comment)."""
    if len(points) < 2 or not points[0][1] > 0:
        return False
    (c0, q0, cpu0), (c1, q1, cpu1) = points[0], points[-1]
    speedup = q1 / q0
    waiting = cpu0 / c0 < IO_CPU_PER_WORKER_PCT and cpu1 / c1 < IO_CPU_PER_WORKER_PCT
    return speedup >= IO_HALF_LINEAR * c1 / c0 and speedup > cores and waiting


@dataclass
class Measured:
    """What a level that ran says about the next one."""

    concurrency: int
    startup_s: float
    p90_latency_s: float
    cpu_pct: float
    memory_used_bytes: int


def level_seconds(prev: Measured, level: int, warmup_s: float, duration_s: float, cores: int) -> float:
    """About how long `level` runs, from the level before it."""
    cores_per_worker = prev.cpu_pct / 100.0 / max(prev.concurrency, 1)

    def crowding(c: int) -> float:
        return max(1.0, c * cores_per_worker / max(cores, 1))

    latency_s = prev.p90_latency_s * crowding(level) / crowding(prev.concurrency)
    startup_s = prev.startup_s * level / max(prev.concurrency, 1)
    # The warm-up ends when each worker's call in flight does; the window, when the calls in flight at its end do.
    return startup_s + max(warmup_s, latency_s) + duration_s + latency_s


def level_bytes(prev: Measured, level: int) -> float:
    return prev.memory_used_bytes / max(prev.concurrency, 1) * level


@dataclass
class Budget:
    """The sweep's limits as one stage sees them."""

    stage_end: float  # time.monotonic() by which the stage's share of the time budget is spent (inf: none)
    stage_s: float  # that share, for the words
    memory_left_bytes: float  # what the sweep may still use (free memory, or the limit asked)
    cores: int
    warmup_s: float
    duration_s: float

    def why_skip(self, prev: Measured | None, level: int, now: float) -> tuple[str, str] | None:
        """(cause, reason) when `level` should not run; None when it fits
        (or nothing is known yet: the lowest level)."""
        if prev is None:
            return None
        need_bytes = level_bytes(prev, level)
        if need_bytes > MEMORY_HEADROOM * self.memory_left_bytes:
            return "memory", (f"would need about {gigabytes(need_bytes)} ({gigabytes(need_bytes / level)} a worker "
                              f"at {prev.concurrency}), {gigabytes(self.memory_left_bytes)} free for the sweep")
        need_s = level_seconds(prev, level, self.warmup_s, self.duration_s, self.cores)
        if now + need_s > self.stage_end:
            return "time", (f"would take about {need_s:.0f} s, {max(0.0, self.stage_end - now):.0f} s left of the "
                            f"stage's {self.stage_s:.0f} s share of the time budget")
        return None


def stage_share_s(left_s: float, stages_left: int) -> float:
    """A stage's share of the time left: equal among the stages not run yet,
    so time a fast stage leaves goes to the ones after it."""
    return left_s / max(stages_left, 1) if math.isfinite(left_s) else math.inf
