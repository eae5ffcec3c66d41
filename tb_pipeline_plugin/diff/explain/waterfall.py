"""From the baseline's step time to the experimental's, as bars: the
explanation's `waterfall` (diff/explain/contributors.py ranks the bars).
"""
from __future__ import annotations

WATERFALL_BARS = 8


# The bar of the recorded steps' delta the profiled steps' parts do not hold.
REST_LABEL = "recorded steps beyond the profiled ones"


def waterfall(b_mean: float, e_mean: float, contributors: list[dict], rest_us: float | None = None) -> list[dict]:
    """Bars from the baseline's step time to the experimental's: the
    largest contributors one by one, the rest as one bar, and `rest_us`
    (the recorded delta the profiled parts do not hold) as its own."""
    bars = [{"label": "baseline step", "kind": "total", "start_us": 0.0, "end_us": round(b_mean, 3),
             "verdict": None, "verdict_label": None}]
    level = b_mean
    ranked = sorted(contributors, key=lambda r: -abs(r["delta_us"]))
    for r in ranked[:WATERFALL_BARS]:
        bars.append({"label": r["name"], "kind": r["kind"], "start_us": round(level, 3),
                     "end_us": round(level + r["delta_us"], 3), "verdict": r["significance"]["verdict"],
                     "verdict_label": r["significance"]["label"]})
        level += r["delta_us"]
    rest = ranked[WATERFALL_BARS:]
    if rest:
        d = sum(r["delta_us"] for r in rest)
        bars.append({"label": f"{len(rest)} others", "kind": "other", "start_us": round(level, 3),
                     "end_us": round(level + d, 3), "verdict": None, "verdict_label": None})
    if rest_us:
        bars.append({"label": REST_LABEL, "kind": "other", "start_us": round(level, 3),
                     "end_us": round(level + rest_us, 3), "verdict": None, "verdict_label": None})
    bars.append({"label": "experimental step", "kind": "total", "start_us": 0.0, "end_us": round(e_mean, 3),
                 "verdict": None, "verdict_label": None})
    return bars
