"""Per-step samples of the operator and kernel aggregates: the spread the
significance of an operator's or kernel's delta is judged by.

An operator counts in the step whose host window (its `ProfilerStep#N`
annotation, as for the pieces and the ledger) holds its start; a kernel in
the step whose window holds its launching runtime call. Events outside
every step are in no sample (the whole-trace tables still count them).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from ..trace.table import Kind, Phase
from .operators import label_groups, operator_rows
from .step_windows import step_of, step_windows


def operator_steps(linked: LinkedTrace, group_by: str, column: str) -> pd.DataFrame:
    """Long form: `name`, `input_shape` (when grouped by shape, else None),
    `step`, `column` summed per step."""
    t = linked.table
    ops = operator_rows(linked)
    start, end = step_windows(linked)
    step = step_of(start, end, t.ts_us[ops])
    ops, step = ops[step >= 0], step[step >= 0]
    values = {"host_self_us": linked.host_self_us, "device_self_us": linked.device_self_us,
              "host_total_us": t.dur_us, "device_total_us": linked.device_total_us}[column]
    keys = {"name_id": t.name_id[ops]}
    if group_by == "name_and_shape":
        keys["shape_id"] = t.shape_id[ops]
    frame = pd.DataFrame({**keys, "step": step, column: values[ops]})
    grouped = frame.groupby([*keys, "step"], sort=False, as_index=False)[column].sum()
    label_groups(t, grouped, group_by)
    return grouped[["name", "input_shape", "step", column]]


def kernel_steps(linked: LinkedTrace) -> pd.DataFrame:
    """Long form: `name`, `step`, `total_us` of the kernels launched in each step."""
    t = linked.table
    k = np.flatnonzero((t.phase == Phase.COMPLETE) & (t.kind == Kind.KERNEL) & (linked.launch_of >= 0))
    start, end = step_windows(linked)
    step = step_of(start, end, t.ts_us[linked.launch_of[k]])
    k, step = k[step >= 0], step[step >= 0]
    frame = pd.DataFrame({"name_id": t.name_id[k], "step": step, "total_us": t.dur_us[k]})
    grouped = frame.groupby(["name_id", "step"], sort=False, as_index=False)["total_us"].sum()
    grouped.insert(0, "name", t.names(grouped["name_id"].to_numpy()))
    return grouped[["name", "step", "total_us"]]
