"""A module call's backward time: the backward operators whose forward
operator ran inside the call, looked up by time.

The backward operators linked to a forward operator (analysis/attribution.py:
top-level operators holding a `fwdbwd` flow end, as in the ledger) are
sorted by their forward operator's start, so any forward interval's
backward time is two binary searches away: the module diff asks it for
every module piece of a level (diff/backward.py:with_backward).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace.link import LinkedTrace
from .attribution import Attribution


@dataclass(frozen=True)
class BackwardIndex:
    fwd_ts_us: np.ndarray  # sorted start of each backward operator's forward operator
    cum_us: np.ndarray  # len(fwd_ts_us) + 1 prefix sums of the backward operators' durations

    def within(self, intervals) -> float:
        """Backward time of the forward operators starting inside `intervals` ([start, end) pairs)."""
        total = 0.0
        for start, end in intervals:
            lo, hi = np.searchsorted(self.fwd_ts_us, [start, end], side="left")
            total += float(self.cum_us[hi] - self.cum_us[lo])
        return total


def backward_index(linked: LinkedTrace, attribution: Attribution) -> BackwardIndex:
    """Every linked backward operator of the region threads, inside a step or
    not: a forward interval is the only filter."""
    t = linked.table
    ops = attribution.operators
    ops = ops[ops["forward_row"] >= 0]
    rows, fwd = ops["row"].to_numpy(), ops["forward_row"].to_numpy()
    fwd_ts_us = t.ts_us[fwd]
    order = np.argsort(fwd_ts_us, kind="stable")
    return BackwardIndex(fwd_ts_us[order], np.concatenate(([0.0], np.cumsum(t.dur_us[rows][order]))))
