"""What a null pair (one configuration on both sides) may show.

A 95 % interval misses 0 on about 1 pair in 20 of unchanged runs: that is
its definition (diff/significance/method.py), so a test that demands no
`significant` mark on one null pair fails 1 run in 20 however right the
method is (CI saw it: +723 µs ± 693 µs on 3 + 3 null recordings). What a
sound method never does is miss 0 by much, or miss it on several numbers
of one pair at once: missing by more than the interval's half-width is
|t| beyond twice the critical value (about 1 in 200 at 4 degrees of
freedom, 1 in 11,000 with a normal), while a bias (a cold first
recording, a variance too small) misses by more, on pair after pair.
"""
from __future__ import annotations

from tb_pipeline_plugin.diff.significance import method as S


def miss_in_half_widths(sig: dict) -> float:
    """How far the interval lies from 0, in its half-widths (0 when it holds 0)."""
    low, high = sig["ci_low"], sig["ci_high"]
    if low is None or sig["verdict"] != S.SIGNIFICANT or low <= 0 <= high:
        return 0.0
    half = (high - low) / 2.0
    gap = low if low > 0 else -high
    return gap / half if half > 0 else float("inf")


def assert_null(sigs: list[dict], context: str = "") -> None:
    """At most one significant mark among `sigs`, and that one only a near
    miss (module docstring)."""
    marked = [s for s in sigs if s["verdict"] == S.SIGNIFICANT]
    assert len(marked) <= 1, (context, marked)
    assert all(miss_in_half_widths(s) < 1.0 for s in marked), (context, marked)
