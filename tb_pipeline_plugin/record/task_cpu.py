"""CPU time and wall time of the user's function, measured in the thread
that runs it.

A stage's task time as SPDL measures it (from the event loop) cannot tell a
worker that computes from one that waits: for the GIL after a sleep, for a
free executor thread. The worker's own CPU time (`time.thread_time_ns`)
beside its wall time inside the call can.
"""
from __future__ import annotations

import time
from collections import deque

_cpu_ns = time.thread_time_ns
_wall_ns = time.perf_counter_ns


class TaskClock:
    """(CPU ns, wall ns) of each call, summed when a report asks: over the
    whole run and over the current lap (interval report). Worker threads
    only append to a deque (atomic, no lock: the per-task cost stays below
    benchmarks/README.md's 2 µs); the reporting thread drains it."""

    __slots__ = ("_done", "push", "calls", "cpu_ns", "wall_ns", "lap_calls", "lap_cpu_ns", "lap_wall_ns")

    def __init__(self) -> None:
        self._done: deque = deque()
        self.push = self._done.append
        self.calls = self.cpu_ns = self.wall_ns = 0
        self.lap_calls = self.lap_cpu_ns = self.lap_wall_ns = 0

    def _drain(self) -> None:
        done = self._done
        calls = cpu_ns = wall_ns = 0
        while done:
            cpu, wall = done.popleft()
            calls += 1
            cpu_ns += cpu
            wall_ns += wall
        self.lap_calls += calls
        self.lap_cpu_ns += cpu_ns
        self.lap_wall_ns += wall_ns
        self.calls += calls
        self.cpu_ns += cpu_ns
        self.wall_ns += wall_ns

    def totals(self) -> tuple[int, int, int]:
        """(calls, CPU ns, wall ns) over the whole run."""
        self._drain()
        return self.calls, self.cpu_ns, self.wall_ns

    def reset(self) -> None:
        """Forget every call (a forked worker process starts from zero)."""
        self._done.clear()
        self.calls = self.cpu_ns = self.wall_ns = 0
        self.lap_calls = self.lap_cpu_ns = self.lap_wall_ns = 0

    def means_s(self, lap: bool) -> tuple[float | None, float | None]:
        """(CPU s, wall s) per call over the lap (and starts a new lap) or
        over the whole run; (None, None) without calls."""
        self._drain()
        if lap:
            calls, cpu, wall = self.lap_calls, self.lap_cpu_ns, self.lap_wall_ns
        else:
            calls, cpu, wall = self.calls, self.cpu_ns, self.wall_ns
        self.lap_calls = self.lap_cpu_ns = self.lap_wall_ns = 0
        if not calls:
            return None, None
        return cpu / calls * 1e-9, wall / calls * 1e-9


def timed(fn, clock: TaskClock):
    """`fn` measured into `clock`, in whichever thread calls it."""

    push = clock.push

    def call(*args, **kwargs):
        c0 = _cpu_ns()
        w0 = _wall_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            push((_cpu_ns() - c0, _wall_ns() - w0))

    call.__wrapped__ = fn
    call.__name__ = getattr(fn, "__name__", "timed")
    call.__qualname__ = getattr(fn, "__qualname__", call.__name__)
    return call
