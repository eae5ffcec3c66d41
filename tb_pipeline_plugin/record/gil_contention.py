"""GIL contention over time: the share of time a thread that asks for the
GIL waits to get it, sampled in the recording process by gilknocker.

gilknocker (Unlicense/MIT, a small Rust extension, wheels for CPython
3.9-3.13) runs a native thread that, during a sampling window, takes the GIL
every `polling` µs and adds up how long each take waited; then it sleeps for
a window. No ptrace, no second process, no pause of the interpreter (py-spy,
used by diagnostic mode, needs all three, and its thread states cannot tell
a thread waiting for the GIL from one sleeping). Its reading is "how busy is
the GIL for a thread that wants it": near 0 when the threads sleep or run
GIL-releasing code, near 1 when Python code holds it — one busy thread is
enough, which is why analysis/statistics/gil.py reads it beside the CPU time per task.

The metric is cumulative since the last reset: each host sample reads it and
resets it, so a sample holds the contention over its own interval. Cost:
benchmarks/README.md ("GIL contention sampler").
"""
from __future__ import annotations

import time

from .once import say_once

POLL_US = 1_000
# A window sampled, then one slept, each about a fifth of the host interval
# (at most 50 ms): several windows per sample, a third of the time sampled.
WINDOW_MAX_US = 50_000
WINDOW_MIN_US = 5_000

def missing_message() -> str:
    return ("tb-pipeline: GIL contention not recorded: the gilknocker package is not installed "
            '(pip install "tb_pipeline_plugin[gil]"); recording goes on without it')


class GilContention:
    """start() / read_pct() (0..100 since the previous read, then resets) /
    stop(). `create` returns None, after one message on stderr per
    `tb-pipeline record` command (once.py), when gilknocker cannot be imported."""

    def __init__(self, knocker, window_us: int) -> None:
        self._knocker = knocker
        self._window_us = window_us

    @classmethod
    def create(cls, interval_s: float) -> "GilContention | None":
        try:
            from gilknocker import KnockKnock
        except ImportError:
            say_once("gilknocker-missing", missing_message())
            return None
        window_us = int(min(WINDOW_MAX_US, max(WINDOW_MIN_US, interval_s * 1e6 / 5)))
        return cls(KnockKnock(polling_interval_micros=POLL_US, sampling_interval_micros=window_us,
                              sleeping_interval_micros=window_us), window_us)

    def start(self) -> "GilContention":
        self._knocker.start()
        return self

    def read_pct(self) -> float | None:
        if not self._knocker.is_running:
            return None
        pct = 100.0 * float(self._knocker.contention_metric)
        self._knocker.reset_contention_metric()
        return round(min(max(pct, 0.0), 100.0), 2)

    def stop(self) -> None:
        self._knocker.stop()
        # stop() ends gilknocker's monitor thread but not a sampling window in
        # flight: that native thread still takes the GIL until its window
        # ends, and doing so while the interpreter finalizes aborts the
        # process ("FATAL: exception not rethrown"). Let it finish first.
        time.sleep((self._window_us + 2 * POLL_US) * 1e-6 + 0.005)
