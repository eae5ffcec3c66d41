"""Each step's host window, and the step a time falls in.

A step's window is its `ProfilerStep#N` annotation's own host interval:
`LinkedTrace.steps` clips a step's start to the previous step's device end
so that the overview never counts time twice, but the annotation still
holds the step's host work. The pieces, the ledger, the per-step samples
and launch health all place events with these windows.
"""
from __future__ import annotations

import numpy as np

from ..trace.link import LinkedTrace


def step_windows(linked: LinkedTrace) -> tuple[np.ndarray, np.ndarray]:
    """(start_us, end_us) of each step's host window; the synthetic `all`
    step keeps `steps.start_us`. Fresh arrays: callers may write to them."""
    st = linked.steps
    real = np.asarray(st.row) >= 0
    start = np.asarray(st.start_us, dtype=np.float64).copy()
    start[real] = linked.table.ts_us[np.asarray(st.row)[real]]  # no gather at all when the table is empty
    return start, np.asarray(st.host_end_us, dtype=np.float64).copy()


def step_of(step_start: np.ndarray, step_end: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Index of the step whose window [start, end) holds each of `ts`, -1 for
    none (the latest-starting one where windows overlap)."""
    if len(step_start) == 0:
        return np.full(len(ts), -1, dtype=np.int64)
    order = np.argsort(step_start, kind="stable")
    k = np.searchsorted(step_start[order], ts, side="right") - 1
    found = order[np.maximum(k, 0)]
    ok = (k >= 0) & (ts < step_end[found])
    return np.where(ok, found, -1).astype(np.int64)
