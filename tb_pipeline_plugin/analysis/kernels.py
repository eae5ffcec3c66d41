"""GPU kernel statistics: one row per kernel name, and one for the kernels
launched before the profiled window (a trace whose kernels have launch
events, some without one: the host ran ahead of its device, and those
kernels are work of unprofiled steps, no kernel of these steps:
analysis/device_time.py). Each row carries its display name beside the
full one (`short_name`, analysis/kernel_names.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from .kernel_names import short_names
from .labels import PRE_WINDOW_NAME

KERNEL_COLUMNS = [
    "name", "short_name", "calls", "total_us", "mean_us", "min_us", "max_us", "grid", "block",
    "registers_per_thread", "shared_memory_bytes", "blocks_per_sm", "warps_per_sm", "occupancy_pct",
]
_WEIGHTED = ["registers_per_thread", "shared_memory_bytes", "blocks_per_sm", "warps_per_sm", "occupancy_pct"]


def _most_frequent(codes: np.ndarray, ids: np.ndarray, groups: int) -> np.ndarray:
    """Per group, the launch shape id it used most often (by calls; the
    smaller id on a tie), -1 where no call records one."""
    out = np.full(groups, -1, dtype=np.int64)
    present = ids >= 0
    if not present.any():
        return out
    group, shape = codes[present].astype(np.int64), ids[present].astype(np.int64)
    pairs, calls = np.unique(group * (int(shape.max()) + 1) + shape, return_counts=True)
    pair_group, pair_shape = np.divmod(pairs, int(shape.max()) + 1)
    best = np.lexsort((pair_shape, -calls, pair_group))
    first = best[np.r_[True, pair_group[best][1:] != pair_group[best][:-1]]]
    out[pair_group[first]] = pair_shape[first]
    return out


def _group_min_max(codes: np.ndarray, values: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    return np.minimum.reduceat(values[order], starts), np.maximum.reduceat(values[order], starts)


def kernels(linked: LinkedTrace, rows: np.ndarray | None = None) -> pd.DataFrame:
    """calls, total/mean/min/max µs and launch properties per kernel name.

    Launch properties are duration-weighted means over the calls that record
    them (a 1 µs launch should not weigh as much as a 10 ms one). Reduced
    with bincounts, not a pandas groupby: with hundreds of small ranks the
    groupby's fixed costs were most of a rank's views.
    """
    t = linked.table
    k = t.kernels
    sel = np.arange(len(k.row)) if rows is None else np.flatnonzero(np.isin(k.row, rows))
    kr = k.row[sel]
    dur = t.dur_us[kr]
    # Groups in order of first appearance, as a groupby(sort=False) gives them.
    earlier = linked.before_window[kr]
    codes, name_ids = pd.factorize(np.where(earlier, -1, t.name_id[kr]))
    groups = len(name_ids)
    calls = np.bincount(codes, minlength=groups)
    total = np.bincount(codes, weights=dur, minlength=groups).astype(np.float64)  # (int64 when empty)
    low, high = _group_min_max(codes, dur, groups) if groups else (np.empty(0), np.empty(0))
    out = pd.DataFrame({
        "calls": calls.astype(np.int64), "total_us": total, "mean_us": total / np.maximum(calls, 1),
        "min_us": low, "max_us": high,
    }, index=pd.Index(name_ids, name="name_id"))
    for col in _WEIGHTED:
        values = getattr(k, col)[sel]
        has = ~np.isnan(values)
        wsum = np.bincount(codes, weights=np.where(has, values * dur, 0.0), minlength=groups)
        w = np.bincount(codes, weights=np.where(has, dur, 0.0), minlength=groups)
        plain_sum = np.bincount(codes, weights=np.where(has, values, 0.0), minlength=groups)
        n = np.bincount(codes, weights=has, minlength=groups)
        # Zero-length kernels still report their properties: fall back to a plain mean.
        mean = np.where(w > 0, wsum / np.where(w > 0, w, 1.0), plain_sum / np.where(n > 0, n, 1))
        out[col] = np.where(n > 0, mean, np.nan)
    for col, ids in (("grid", k.grid_id[sel]), ("block", k.block_id[sel])):
        out[col] = t.names(_most_frequent(codes, ids, groups))
    ids = out.index.to_numpy()
    names = np.asarray(t.names(np.maximum(ids, 0)), dtype=object)
    names[ids < 0] = PRE_WINDOW_NAME
    out.insert(0, "name", names)
    shorts = short_names(names.tolist())
    out.insert(1, "short_name", [shorts[n] for n in names.tolist()])
    out = out.reset_index(drop=True)
    out = out.astype({c: object for c in _WEIGHTED}).where(out.notna(), None) if len(out) else out
    return out[KERNEL_COLUMNS].sort_values(["total_us", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
