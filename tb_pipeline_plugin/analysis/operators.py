"""Operator statistics: one row per operator name (or name and input shape)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from ..trace.table import Kind, Phase

GROUP_BY = ("name", "name_and_shape")
OPERATOR_COLUMNS = ["name", "input_shape", "calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"]


def primary_column(has_device: bool) -> str:
    """The duration operators are ranked by: device self time when the trace
    ran anything on a device, host self time otherwise."""
    return "device_self_us" if has_device else "host_self_us"


def operator_rows(linked: LinkedTrace, rows: np.ndarray | None = None) -> np.ndarray:
    """Rows of operator events, optionally restricted to a subset of rows."""
    t = linked.table
    if rows is None:
        return np.flatnonzero((t.kind == Kind.CPU_OP) & (t.phase == Phase.COMPLETE))
    # A piece's few rows: filter them, don't scan the whole table.
    rows = np.unique(rows)
    return rows[(t.kind[rows] == Kind.CPU_OP) & (t.phase[rows] == Phase.COMPLETE)]


def operators(linked: LinkedTrace, group_by: str = "name", rows: np.ndarray | None = None) -> pd.DataFrame:
    """calls, host self/total µs and device self/total µs per operator.

    `rows` restricts the statistics to those operator events (a module
    piece's operators in the diff view).
    """
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}")
    t = linked.table
    ops = operator_rows(linked, rows)
    keys = {"name_id": t.name_id[ops]}
    if group_by == "name_and_shape":
        keys["shape_id"] = t.shape_id[ops]
    frame = pd.DataFrame({
        **keys,
        "calls": np.ones(len(ops), dtype=np.int64),
        "host_self_us": linked.host_self_us[ops],
        "host_total_us": t.dur_us[ops],
        "device_self_us": linked.device_self_us[ops],
        "device_total_us": linked.device_total_us[ops],
    })
    grouped = frame.groupby(list(keys), sort=False, as_index=False).sum()
    grouped.insert(0, "name", t.names(grouped["name_id"].to_numpy()))
    if group_by == "name_and_shape":
        shapes = t.names(grouped["shape_id"].to_numpy())
        shapes[grouped["shape_id"].to_numpy() < 0] = ""
        grouped.insert(1, "input_shape", shapes)
    else:
        grouped.insert(1, "input_shape", None)
    primary = primary_column(linked.has_device)
    out = grouped[OPERATOR_COLUMNS].sort_values([primary, "name"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)
