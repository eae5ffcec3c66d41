"""GPU kernel statistics: one row per kernel name."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace

KERNEL_COLUMNS = [
    "name", "calls", "total_us", "mean_us", "min_us", "max_us", "grid", "block",
    "registers_per_thread", "shared_memory_bytes", "blocks_per_sm", "warps_per_sm", "occupancy_pct",
]
_WEIGHTED = ["registers_per_thread", "shared_memory_bytes", "blocks_per_sm", "warps_per_sm", "occupancy_pct"]


def _most_frequent(frame: pd.DataFrame, column: str) -> pd.Series:
    """Per kernel name, the launch shape it used most often (by calls)."""
    present = frame[frame[column] >= 0]
    if present.empty:
        return pd.Series(dtype=np.int64)
    counts = present.groupby(["name_id", column]).size().reset_index(name="n")
    top = counts.sort_values(["n", column], ascending=[False, True]).drop_duplicates("name_id")
    return top.set_index("name_id")[column]


def kernels(linked: LinkedTrace, rows: np.ndarray | None = None) -> pd.DataFrame:
    """calls, total/mean/min/max µs and launch properties per kernel name.

    Launch properties are duration-weighted means over the calls that record
    them (a 1 µs launch should not weigh as much as a 10 ms one).
    """
    t = linked.table
    k = t.kernels
    sel = np.arange(len(k.row)) if rows is None else np.flatnonzero(np.isin(k.row, rows))
    kr = k.row[sel]
    dur = t.dur_us[kr]
    frame = pd.DataFrame({
        "name_id": t.name_id[kr], "dur": dur, "grid_id": k.grid_id[sel], "block_id": k.block_id[sel],
    })
    for col in _WEIGHTED:
        values = getattr(k, col)[sel]
        has = ~np.isnan(values)
        frame[col + "_wsum"] = np.where(has, values * dur, 0.0)
        frame[col + "_w"] = np.where(has, dur, 0.0)
        frame[col + "_sum"] = np.where(has, values, 0.0)
        frame[col + "_n"] = has.astype(np.int64)
    g = frame.groupby("name_id", sort=False)
    out = pd.DataFrame({
        "calls": g.size(), "total_us": g["dur"].sum(), "mean_us": g["dur"].mean(),
        "min_us": g["dur"].min(), "max_us": g["dur"].max(),
    })
    for col in _WEIGHTED:
        wsum, w, n = g[col + "_wsum"].sum(), g[col + "_w"].sum(), g[col + "_n"].sum()
        # Zero-length kernels still report their properties: fall back to a plain mean.
        plain = g[col + "_sum"].sum() / n.where(n > 0, 1)
        mean = np.where(w > 0, wsum / w.where(w > 0, 1.0), plain)
        out[col] = np.where(n > 0, mean, np.nan)
    for col, src in (("grid", "grid_id"), ("block", "block_id")):
        ids = _most_frequent(frame, src).reindex(out.index)
        out[col] = t.names(ids.fillna(-1).to_numpy(np.int64))
    out.insert(0, "name", t.names(out.index.to_numpy()))
    out = out.reset_index(drop=True)
    out = out.astype({c: object for c in _WEIGHTED}).where(out.notna(), None) if len(out) else out
    return out[KERNEL_COLUMNS].sort_values(["total_us", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
