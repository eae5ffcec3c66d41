"""The explanation's launch-health table: per-step launch health
(analysis/launch.py) of both runs, side by side with delta and significance.

Each metric is judged against its own baseline mean, the metrics of the
table as one family (diff/significance/method.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .significance import method as S
from .delta import delta_pct

# (metric: a column of analysis/launch.py's frame, label, unit)
LAUNCH_METRICS = (
    ("launch_delay_mean_us", "Launch to kernel start, mean (per step)", "us"),
    ("launch_delay_p90_us", "Launch to kernel start, 90th percentile (per step)", "us"),
    ("idle_us", "Device idle between kernels (per step)", "us"),
    ("host_bound_idle_us", "Device waiting for the host (per step)", "us"),
    ("host_bound_gaps", "Gaps the host caused (per step)", "count"),
    ("gaps", "Idle gaps between kernels (per step)", "count"),
    ("kernels", "Kernels (per step)", "count"),
)


def launch_rows(b: pd.DataFrame, e: pd.DataFrame, recordings: tuple = (None, None), *,
                noise: S.NoisePolicy) -> list[dict]:
    """Per-step means, delta and significance of each metric of both runs'
    launch-health frames; empty when neither run launched a kernel.
    `recordings`: each side's recording of every step (None for one)."""
    if b["kernels"].sum() == 0 and e["kernels"].sum() == 0:
        return []
    rows, bs, es, labels = [], [], [], []
    for metric, label, unit in LAUNCH_METRICS:
        # Steps without kernels have no delay: leave them out of the delays.
        b_has, e_has = b[metric].notna().to_numpy(), e[metric].notna().to_numpy()
        bv, ev = b[metric].to_numpy(np.float64)[b_has], e[metric].to_numpy(np.float64)[e_has]
        bs.append(bv)
        es.append(ev)
        labels.append(tuple(None if rec is None else np.asarray(rec)[frame["step"].to_numpy(np.int64)[has]]
                            for rec, frame, has in zip(recordings, (b, e), (b_has, e_has))))
        rows.append({"metric": metric, "label": label, "unit": unit,
                     "baseline": round(float(bv.mean()), 3) if len(bv) else None,
                     "experimental": round(float(ev.mean()), 3) if len(ev) else None})
    k = len(rows)
    for i, row in enumerate(rows):
        # One call per metric (their step counts differ), each at the family's confidence.
        sig = S.compare(bs[i][None, :], es[i][None, :], family=k, recordings=labels[i], noise=noise)[0]
        both = row["baseline"] is not None and row["experimental"] is not None
        row["delta"] = round(row["experimental"] - row["baseline"], 3) if both else None
        row["delta_pct"] = delta_pct(row["baseline"], row["delta"]) if both else None
        row["significance"] = sig
    return rows
