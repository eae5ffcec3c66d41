"""A level's spread: its measured window cut into equal slices, QPS and CPU %
per slice, so the reading side can put an interval on the level's figures
(two recordings of one stage never land on the same QPS, and a verdict
near a threshold flips with them).

QPS per slice counts calls fractionally: a call in flight across a slice
edge counts on each side by the share of its duration there, so a stage
whose calls are longer than a slice still gets a rate in every slice, and
the slices' mean is exactly the level's QPS (each worker's rate over its own
span, summed over workers).
"""
from __future__ import annotations

import threading
import time
from bisect import bisect_right

from .process_tree import machine_busy_s, processes, tree_cpu_s


def _calls_done(starts: list, ends: list, t: float) -> float:
    """Calls of one worker finished by `t`, the one in flight counted by the
    share of it done. A worker's calls run one after another, so `starts`
    and `ends` are both ascending."""
    done = bisect_right(ends, t)
    if done < len(starts) and starts[done] < t < ends[done]:
        return done + (t - starts[done]) / (ends[done] - starts[done])
    return float(done)


def worker_slice_rates(starts: list, ends: list, slices: int) -> list[float]:
    """Calls per second of one worker in each of `slices` equal parts of its
    measured span (first call start to last call end); [] without a span."""
    if not starts or ends[-1] <= starts[0]:
        return []
    t0, t1 = starts[0], ends[-1]
    width_s = (t1 - t0) / slices
    edges = [t0 + k * width_s for k in range(slices)] + [t1]
    done = [_calls_done(starts, ends, t) for t in edges]
    return [(b - a) / width_s for a, b in zip(done, done[1:])]


def slice_qps(workers: list[tuple[list, list]], slices: int) -> list[float]:
    """The level's QPS per slice: the sum over workers of each one's rate in
    its slice k ((starts, ends) per worker); [] when no worker has a span."""
    rates = [r for starts, ends in workers if (r := worker_slice_rates(starts, ends, slices))]
    return [sum(r[k] for r in rates) for k in range(slices)] if rates else []


class CpuSlices:
    """CPU % of this process and `pids`, and of the whole machine, in each of
    `count` equal parts of [t0, t0 + length_s]: a thread reads the CPU
    counters at the parts' edges (count + 1 reads a level, too few to
    disturb the stage). A level that ends early keeps its complete parts;
    a part is measured between the reads as they happened."""

    def __init__(self, pids=()):
        self.children = processes(pids)
        self._marks: list[tuple[float, float, float]] = []  # (time, tree CPU s, machine busy s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._width_s = 0.0

    def start(self, t0: float, length_s: float, count: int) -> None:
        self._width_s = length_s / count
        edges = [t0 + length_s * k / count for k in range(count + 1)]
        self._thread = threading.Thread(target=self._run, args=(edges,), name="diagnose-cpu-slices", daemon=True)
        self._thread.start()

    def _run(self, edges: list[float]) -> None:
        for edge in edges:
            if self._stop.wait(max(0.0, edge - time.monotonic())):
                return
            self._marks.append((time.monotonic(), tree_cpu_s(self.children), machine_busy_s()))

    def stop(self) -> tuple[list[float], list[float]]:
        """(tree CPU % per complete part, machine CPU % per complete part)."""
        if self._thread is None:
            return [], []
        self._stop.set()
        self._thread.join()
        tree, machine = [], []
        for (t_a, cpu_a, busy_a), (t_b, cpu_b, busy_b) in zip(self._marks, self._marks[1:]):
            wall_s = t_b - t_a
            if wall_s < 0.5 * self._width_s:
                # Reads that came late bunch up (threads holding the GIL kept this one waiting): so short a
                # part is mostly the counters' 10 ms tick, not a CPU share.
                continue
            tree.append(100.0 * (cpu_b - cpu_a) / wall_s)
            machine.append(max(0.0, 100.0 * (busy_b - busy_a) / wall_s))
        return tree, machine
