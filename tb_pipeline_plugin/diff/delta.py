"""The one definition of a delta: experimental - baseline, and its percentage.

Every comparison the plugin shows (tables, overview, piece tree, pipeline
statistics, the explanation) builds its delta fields here, so "delta %"
means the same thing everywhere: 100 * delta / baseline, rounded to 2
decimals, and null when the baseline is 0 or either side is not a number.

Field names, for a quantity `c`: `delta_<c>` is the difference in `c`'s own
unit (percentage points when `c` is a percentage, `_pct`), and the relative
change is `delta_<c without its unit>_pct`: `host_self_us` ->
`delta_host_self_pct`, `mean_s` -> `delta_mean_pct`, `calls` ->
`delta_calls_pct`. A percentage's relative change would then be named as
its difference, so it is `delta_<c without _pct>_rel_pct`:
`busy_pct` -> `delta_busy_rel_pct`.
"""
from __future__ import annotations

import math

import numpy as np

US_DECIMALS = 3
PCT_DECIMALS = 2


# Unit suffixes a relative change drops: a % of µs or of seconds is a %.
_UNITS = ("_us", "_s")


def pct_name(column: str) -> str:
    """The relative change's field of `column` (module docstring)."""
    if column.endswith("_pct"):
        return f"delta_{column.removesuffix('_pct')}_rel_pct"
    for unit in _UNITS:
        if column.endswith(unit):
            return f"delta_{column.removesuffix(unit)}_pct"
    return f"delta_{column}_pct"


def is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and not _is_nan(v)


def delta_pct(baseline, delta) -> float | None:
    """100 * delta / baseline; None when undefined (baseline 0, missing, text)."""
    if not is_number(baseline) or not is_number(delta) or baseline == 0:
        return None
    return round(100.0 * delta / baseline, PCT_DECIMALS)


def delta_fields(column: str, baseline: float, experimental: float, decimals: int = US_DECIMALS) -> dict:
    """`baseline_<c>`, `experimental_<c>`, `delta_<c>` and `pct_name(c)` of one quantity."""
    delta = experimental - baseline
    return {
        f"baseline_{column}": _round(baseline, decimals),
        f"experimental_{column}": _round(experimental, decimals),
        f"delta_{column}": _round(delta, decimals),
        pct_name(column): delta_pct(baseline, delta),
    }


def delta_arrays(baseline: np.ndarray, experimental: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column form of `delta_fields`: (delta, delta %) with NaN where the % is undefined."""
    delta = experimental - baseline
    nonzero = baseline != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(nonzero, 100.0 * delta / np.where(nonzero, baseline, 1.0), np.nan)
    return delta, pct


def delta_field_columns(column: str, baseline: np.ndarray, experimental: np.ndarray,
                        decimals: int = US_DECIMALS) -> dict[str, list]:
    """`delta_fields` of whole columns of floats at once: for each key, the
    list of what `delta_fields` gives row by row (the same float operations,
    Python's own rounding of each value), without its per-value checks: the
    rank-by-rank table of 10,000 ranks is 40,000 of them."""
    delta, pct = delta_arrays(baseline, experimental)

    def rounded(values: np.ndarray, places: int) -> list:
        return [None if v != v else round(v, places) for v in values.tolist()]  # v != v: NaN

    return {
        f"baseline_{column}": rounded(baseline, decimals),
        f"experimental_{column}": rounded(experimental, decimals),
        f"delta_{column}": rounded(delta, decimals),
        pct_name(column): rounded(pct, PCT_DECIMALS),
    }


def _round(v, decimals: int):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    return round(float(v), decimals)


def _is_nan(v) -> bool:
    return isinstance(v, (float, np.floating)) and math.isnan(v)
