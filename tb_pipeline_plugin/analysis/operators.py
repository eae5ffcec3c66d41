"""Operator statistics: one row per operator name (or name and input shape)."""
from __future__ import annotations

from typing import get_args

import numpy as np
import pandas as pd

# How operator rows are grouped: by name, or by name and input shape (declared
# once in the contract: the routes' `group_by` parameter and answer field).
from ..contract.tables import GroupBy
from ..trace.link import LinkedTrace
from ..trace.table import Kind, Phase

GROUP_BY: tuple[str, ...] = get_args(GroupBy)
OPERATOR_COLUMNS = ["name", "input_shape", "calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"]


def primary_column(has_device: bool) -> str:
    """The duration operators are ranked by: device self time when the trace
    ran anything on a device, host self time otherwise."""
    return "device_self_us" if has_device else "host_self_us"


def operator_rows(linked: LinkedTrace, rows: np.ndarray | None = None) -> np.ndarray:
    """Rows of operator events, optionally restricted to a subset of rows;
    without the operators torch folds into a same-name parent (`fold.py`)."""
    t = linked.table
    if rows is None:
        ops = np.flatnonzero((t.kind == Kind.CPU_OP) & (t.phase == Phase.COMPLETE))
    else:
        # A piece's few rows: filter them, don't scan the whole table.
        rows = np.unique(rows)
        ops = rows[(t.kind[rows] == Kind.CPU_OP) & (t.phase[rows] == Phase.COMPLETE)]
    if len(linked.folded_rows):
        ops = ops[~np.isin(ops, linked.folded_rows, assume_unique=True)]
    return ops


def _self_times(linked: LinkedTrace, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Host and device self µs of `ops` (sorted), each with the self times of
    the same-name operators folded into it: the parent's self time is then
    its duration minus the folded child's children, as in key_averages()."""
    host = linked.host_self_us[ops]
    device = linked.device_self_us[ops]
    folded, into = linked.folded_rows, linked.folded_into
    if len(folded) and len(ops):
        at = np.minimum(np.searchsorted(ops, into), len(ops) - 1)
        hit = ops[at] == into
        np.add.at(host, at[hit], linked.host_self_us[folded[hit]])
        # torch hands the child's kernels to the parent; a parent's own
        # launches (rare) are kept too, so no device time is lost.
        np.add.at(device, at[hit], linked.device_self_us[folded[hit]])
    return host, device


def operators(linked: LinkedTrace, group_by: str = "name", rows: np.ndarray | None = None) -> pd.DataFrame:
    """calls, host self/total µs and device self/total µs per operator.

    `rows` restricts the statistics to those operator events (a module
    piece's operators in the diff view).
    """
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}")
    t = linked.table
    ops = operator_rows(linked, rows)
    host_self, device_self = _self_times(linked, ops)
    keys = {"name_id": t.name_id[ops]}
    if group_by == "name_and_shape":
        keys["shape_id"] = t.shape_id[ops]
    frame = pd.DataFrame({
        **keys,
        "calls": np.ones(len(ops), dtype=np.int64),
        "host_self_us": host_self,
        "host_total_us": t.dur_us[ops],
        "device_self_us": device_self,
        "device_total_us": linked.device_total_us[ops],
    })
    grouped = frame.groupby(list(keys), sort=False, as_index=False).sum()
    label_groups(t, grouped, group_by)
    primary = primary_column(linked.has_device)
    out = grouped[OPERATOR_COLUMNS].sort_values([primary, "name"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)


def label_groups(t, grouped: pd.DataFrame, group_by: str) -> None:
    """Adds `name` (and `input_shape`, "" for an operator without shapes;
    None when grouped by name alone) in front of rows grouped by the interned
    `name_id` (and `shape_id`)."""
    grouped.insert(0, "name", t.names(grouped["name_id"].to_numpy()))
    if group_by == "name_and_shape":
        shapes = t.names(grouped["shape_id"].to_numpy())
        shapes[grouped["shape_id"].to_numpy() < 0] = ""
        grouped.insert(1, "input_shape", shapes)
    else:
        grouped.insert(1, "input_shape", None)
