"""CPU time and wall time of the user's function, measured in the thread
that runs it, and a sample of its time waiting for a core.

A stage's task time as SPDL measures it (from the event loop) cannot tell a
worker that computes from one that waits: for the GIL after a sleep, for a
free executor thread. The worker's own CPU time (`time.thread_time_ns`)
beside its wall time inside the call can, unless the machine is
oversubscribed: then the OS preempts a computing thread inside its call and
its CPU time falls as if it waited. Linux counts each thread's time
runnable but not running (`/proc/thread-self/schedstat`, second field):
CPU + that time is the time the thread wanted a core. Reading it costs a
system call (about as much as the two CPU clock reads together), so one
call in RUNQ_SAMPLE_EVERY reads it, chosen by the low bits of the wall
clock; the mean over those calls stands for all of them.
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque

_cpu_ns = time.thread_time_ns
_wall_ns = time.perf_counter_ns
RUNQ_SAMPLE_EVERY = 16  # a power of two: `wall & (N - 1) == 0` picks one call in N
_SAMPLE_MASK = RUNQ_SAMPLE_EVERY - 1
_local = threading.local()


class _Schedstat:
    """This thread's schedstat file, open while the thread lives (the
    thread-local goes with the thread, and closes it)."""

    __slots__ = ("fd",)

    def __init__(self) -> None:
        try:
            self.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:  # not Linux, or schedstats off: no run-queue figures
            self.fd = -1

    def __del__(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def runq_ns() -> int:
    """Nanoseconds this thread has waited runnable for a core; -1 when unknown."""
    stat = getattr(_local, "schedstat", None)
    if stat is None:
        stat = _local.schedstat = _Schedstat()
    if stat.fd < 0:
        return -1
    try:
        return int(os.pread(stat.fd, 96, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return -1


class TaskClock:
    """(CPU ns, wall ns[, run-queue ns]) of each call, summed when a report
    asks: over the whole run and over the current lap (interval report).
    Worker threads only append to a deque (atomic, no lock: the per-task
    cost stays below benchmarks/README.md's 2 µs); the reporting thread
    drains it."""

    __slots__ = ("_done", "push", "calls", "cpu_ns", "wall_ns", "runq_calls", "runq_ns", "lap_calls", "lap_cpu_ns",
                 "lap_wall_ns", "lap_runq_calls", "lap_runq_ns")

    def __init__(self) -> None:
        self._done: deque = deque()
        self.push = self._done.append
        self.reset()

    def reset(self) -> None:
        """Forget every call (a forked worker process starts from zero)."""
        self._done.clear()
        self.calls = self.cpu_ns = self.wall_ns = self.runq_calls = self.runq_ns = 0
        self.lap_calls = self.lap_cpu_ns = self.lap_wall_ns = self.lap_runq_calls = self.lap_runq_ns = 0

    def _drain(self) -> None:
        done = self._done
        calls = cpu_ns = wall_ns = runq_calls = runq = 0
        while done:
            item = done.popleft()
            calls += 1
            cpu_ns += item[0]
            wall_ns += item[1]
            if len(item) > 2 and item[2] >= 0:
                runq_calls += 1
                runq += item[2]
        self.lap_calls += calls
        self.lap_cpu_ns += cpu_ns
        self.lap_wall_ns += wall_ns
        self.lap_runq_calls += runq_calls
        self.lap_runq_ns += runq
        self.calls += calls
        self.cpu_ns += cpu_ns
        self.wall_ns += wall_ns
        self.runq_calls += runq_calls
        self.runq_ns += runq

    def totals(self) -> tuple[int, int, int, int, int]:
        """(calls, CPU ns, wall ns, sampled calls, their run-queue ns) over the whole run."""
        self._drain()
        return self.calls, self.cpu_ns, self.wall_ns, self.runq_calls, self.runq_ns

    def means_s(self, lap: bool, runq: bool = False) -> tuple:
        """(CPU s, wall s) per call over the lap (and starts a new lap) or
        over the whole run; (None, None) without calls. `runq`: a third
        value, the sampled run-queue wait per call (None when unsampled)."""
        self._drain()
        if lap:
            calls, cpu, wall = self.lap_calls, self.lap_cpu_ns, self.lap_wall_ns
            runq_calls, runq_ns = self.lap_runq_calls, self.lap_runq_ns
        else:
            calls, cpu, wall = self.calls, self.cpu_ns, self.wall_ns
            runq_calls, runq_ns = self.runq_calls, self.runq_ns
        self.lap_calls = self.lap_cpu_ns = self.lap_wall_ns = self.lap_runq_calls = self.lap_runq_ns = 0
        runq_s = runq_ns / runq_calls * 1e-9 if runq_calls else None
        if not calls:
            return (None, None, None) if runq else (None, None)
        out = (cpu / calls * 1e-9, wall / calls * 1e-9)
        return (*out, runq_s) if runq else out


def timed(fn, clock: TaskClock):
    """`fn` measured into `clock`, in whichever thread calls it."""

    push = clock.push

    def call(*args, **kwargs):
        c0 = _cpu_ns()
        w0 = _wall_ns()
        q0 = -1 if w0 & _SAMPLE_MASK else runq_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            if q0 < 0:
                push((_cpu_ns() - c0, _wall_ns() - w0))
            else:
                q1 = runq_ns()
                push((_cpu_ns() - c0, _wall_ns() - w0, q1 - q0 if q1 >= 0 else -1))

    call.__wrapped__ = fn
    call.__name__ = getattr(fn, "__name__", "timed")
    call.__qualname__ = getattr(fn, "__qualname__", call.__name__)
    return call
