"""How a run's ranks spread: the rank at each percentile of step time (with
its split), each quantity's own percentiles, and a histogram of step time.

With thousands of ranks a bar per rank says nothing; these say how the
ranks are distributed and which rank sits where. A percentile is always a
rank's own value, never an interpolation between two ranks: of the ranks
sorted by the quantity, the one at position round(p / 100 * (n - 1)), so the
rank at the 50th percentile of an odd number of ranks is the median rank
and its split adds up to its step time.
"""
from __future__ import annotations

import math

import numpy as np

# In this order wherever a rank's split is an array row (analysis/distributed.py).
QUANTITIES = ("step_time_us", "computation_us", "communication_us", "idle_us")
# The percentiles of step time the band chart draws (each the rank there).
CHART_PERCENTILES = tuple(range(101))
# Each quantity's own percentiles (the spread table, and the pair's comparison by percentile).
SPREAD_PERCENTILES = (0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100)
# Histogram bins: about sqrt(ranks), at most this many.
MAX_BINS = 50


def position(p: float, n: int) -> int:
    """The index, in n values sorted ascending, of the value at percentile `p` (round half up)."""
    return min(n - 1, int(math.floor(p / 100.0 * (n - 1) + 0.5)))


def ranks_at_percentiles(ascending: list[dict]) -> list[dict]:
    """`ascending`: rank rows sorted by step time (ties: lower rank first).
    The rank at each of `CHART_PERCENTILES`, with its split."""
    n = len(ascending)
    out = []
    for p in CHART_PERCENTILES:
        r = ascending[position(p, n)]
        out.append({"pct": p, "rank": r["rank"], "worker": r["worker"],
                    **{q: r[q] for q in QUANTITIES}})
    return out


def spread(columns: dict[str, np.ndarray]) -> list[dict]:
    """Each quantity's own distribution over the ranks (`columns`: its value
    per rank): its value at each of `SPREAD_PERCENTILES` (`values`, in that
    order) and its mean."""
    out = []
    for q in QUANTITIES:
        values = np.sort(columns[q])
        out.append({"quantity": q, "values": [float(values[position(p, len(values))]) for p in SPREAD_PERCENTILES],
                    "mean": float(values.mean())})
    return out


def histogram_edges(step_times: list[list[float]]) -> list[float]:
    """Bin edges (µs) over every run's step times, so two runs' histograms
    share their bins; about sqrt(ranks) equal bins, at most `MAX_BINS`."""
    values = [v for side in step_times for v in side]
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi <= lo:  # every rank alike: one bin around the value
        lo, hi = lo - 0.5, hi + 0.5
    bins = max(1, min(MAX_BINS, math.ceil(math.sqrt(max(len(side) for side in step_times)))))
    return [float(x) for x in np.linspace(lo, hi, bins + 1)]


def histogram(step_times: list[float], edges: list[float]) -> dict:
    """Ranks per bin of step time (each bin [a, b), the last [a, b])."""
    if not edges:
        return {"edges_us": [], "counts": []}
    counts, _ = np.histogram(np.asarray(step_times, dtype=np.float64), bins=np.asarray(edges))
    return {"edges_us": edges, "counts": [int(c) for c in counts]}
