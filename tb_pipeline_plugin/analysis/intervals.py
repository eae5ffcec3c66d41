"""Interval sets on one time axis: union, and measure inside windows."""
from __future__ import annotations

import numpy as np


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted intervals covering the same time as the input."""
    if len(start) == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > reach[:-1]
    group = np.cumsum(new_group) - 1
    starts = s[new_group]
    ends = np.zeros(len(starts))
    np.maximum.at(ends, group, e)
    return starts, ends


def merge(*sets: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return union(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))


def measure_in(intervals: tuple[np.ndarray, np.ndarray], win_start: np.ndarray, win_end: np.ndarray) -> np.ndarray:
    """Length of (disjoint sorted) `intervals` inside each window."""
    starts, ends = intervals
    if len(starts) == 0:
        return np.zeros(len(win_start))
    cum = np.concatenate(([0.0], np.cumsum(ends - starts)))

    def covered_until(t: np.ndarray) -> np.ndarray:
        # Covered time in (-inf, t]: whole intervals before t plus the part of the one containing t.
        i = np.searchsorted(starts, t, side="right")
        full = cum[np.maximum(i - 1, 0)]
        last = np.where(i > 0, np.minimum(t, ends[np.maximum(i - 1, 0)]) - starts[np.maximum(i - 1, 0)], 0.0)
        return np.where(i > 0, full + np.maximum(last, 0.0), 0.0)

    return np.maximum(covered_until(win_end) - covered_until(win_start), 0.0)
