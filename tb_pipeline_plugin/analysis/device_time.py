"""Device time where the work is: every kernel, memcpy and memset charged to
the operator that launched it, and through that operator to its part of the
step (analysis/attribution.py), so that device time per step splits by
module, backward and optimizer as host time does (analysis/ledger.py).

A device activity's *launch* is its runtime event (the correlation id, or an
`ac2g` flow: `LinkedTrace.launch_of`); its *owner* the operator that issued
the launch (`LinkedTrace.owner`). Its part is that of the top-level operator
of the region threads around the owner, and its step the step whose host
window holds the launch: work launched in step k is step k's work wherever
the device ran it. Three cases have no such operator:

* *launched before the profiled window*: the host runs ahead of a busy
  device, so the first profiled step executes work launched in unprofiled
  steps: no launch event exists for it (its correlation id precedes the
  first recorded launch). It belongs to no step: never charged to whatever
  encloses it in time, it keeps a row of its own in the tables, and the
  device ledger leaves it out of the step it ran in;
* launched by an operator outside every top-level operator of the region
  threads (another thread): `unknown`;
* *CUDA graphs*: a `cudaGraphLaunch` launches all of a graph's kernels at
  once, with its correlation id: they are charged to the operator that
  launched the graph and marked `via_graph`; which module inside the graph
  ran each kernel the trace does not say.

The device ledger (`device_ledger`) has the shape of the host one: per step,
the device time of each part (work launched before the window is in no
step: the time the device ran only that work is not the step's), `device_idle` (the step's time the device ran
none of the step's work: waiting for the host) and `device_overlap` (work of
several streams at once, counted once: negative), so that a step's parts
add up to its step time exactly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.forest import nearest_marked_ancestor
from ..trace.link import LinkedTrace
from ..trace.names import name_mask
from ..trace.table import DEVICE_ACTIVITY_KINDS, Phase
from .attribution import Attribution
from .intervals import union
from .labels import DEVICE_IDLE, DEVICE_OVERLAP, PRE_WINDOW, PRE_WINDOW_NAME, UNKNOWN, UNKNOWN_NAME
from .ledger import StepLedger
from .overview import step_breakdown
from .step_windows import step_of

GRAPH_LAUNCHES = ("cudaGraphLaunch", "cudaGraphLaunch_v10000", "hipGraphLaunch")
LAUNCH_COLUMNS = ("row", "step", "ts_us", "dur_us", "kind", "key", "phase", "op_row", "via_graph")


def device_launches(linked: LinkedTrace, attribution: Attribution) -> pd.DataFrame:
    """One row per device activity in a step (LAUNCH_COLUMNS), sorted by row:
    its step, its start and duration clipped to the step's window, its part (kind, key,
    phase), the operator that launched it (-1: none) and whether a CUDA
    graph launch ran it."""
    t = linked.table
    rows = np.flatnonzero((t.phase == Phase.COMPLETE) & np.isin(t.kind, DEVICE_ACTIVITY_KINDS))
    st = linked.steps
    n = len(rows)
    launch = linked.launch_of[rows]
    launched = launch >= 0
    op_row = np.where(launched, linked.owner[rows], -1)
    # Step: the launch's host window; work with no launch, the step it ran in.
    step = np.full(n, -1, dtype=np.int64)
    step[launched] = step_of(attribution.step_start_us, attribution.step_end_us, t.ts_us[launch[launched]])
    step[~launched] = step_of(np.asarray(st.start_us, np.float64), np.asarray(st.end_us, np.float64),
                              t.ts_us[rows[~launched]])
    ops = attribution.operators
    kind = np.full(n, UNKNOWN, dtype=object)
    key = np.full(n, UNKNOWN_NAME, dtype=object)
    phase = np.full(n, "", dtype=object)
    if len(ops):
        top_level = np.zeros(len(t), dtype=bool)
        op_rows = ops["row"].to_numpy(np.int64)
        top_level[op_rows] = True
        top = nearest_marked_ancestor(linked.parent, top_level, op_row)
        found = top >= 0
        at = np.searchsorted(op_rows, top[found])
        for out, column in ((kind, "kind"), (key, "key"), (phase, "phase")):
            out[found] = ops[column].to_numpy(object)[at]
    earlier = linked.before_window[rows]
    kind[earlier], key[earlier] = PRE_WINDOW, PRE_WINDOW_NAME
    via_graph = np.zeros(n, dtype=bool)
    if launched.any():
        via_graph[launched] = name_mask(t, launch[launched], lambda s: s in GRAPH_LAUNCHES)
    keep = step >= 0
    # Clipped to the step's window at both ends: a step's window starts where
    # the previous step's device work ended, and work launched early in a step
    # can run while that work still runs (it is the previous window's time).
    at = np.maximum(step, 0)
    ts = np.maximum(t.ts_us[rows], np.asarray(st.start_us, np.float64)[at])
    dur = np.minimum(t.ts_us[rows] + t.dur_us[rows], np.asarray(st.end_us, np.float64)[at]) - ts
    return pd.DataFrame({
        "row": rows[keep], "step": step[keep], "ts_us": ts[keep], "dur_us": np.maximum(dur[keep], 0.0),
        "kind": kind[keep], "key": key[keep], "phase": phase[keep], "op_row": op_row[keep],
        "via_graph": via_graph[keep],
    })


def device_ledger(linked: LinkedTrace, launches: pd.DataFrame) -> StepLedger:
    """Per step, where its device time went (module docstring)."""
    st = linked.steps
    n_steps = len(st.name)
    window_us = step_breakdown(linked)["duration_us"].to_numpy(np.float64)
    host_us = np.asarray(st.host_end_us, np.float64) - np.asarray(st.start_us, np.float64)
    # Work launched before the window is no step's: the time the device ran only it leaves the step.
    earlier = launches["kind"].to_numpy(object) == PRE_WINDOW
    step_us = np.maximum(window_us - (_busy_per_step(launches, n_steps) - _busy_per_step(launches[~earlier], n_steps)),
                         0.0)
    launches = launches[~earlier]
    steps = pd.DataFrame({"step": np.arange(n_steps), "name": list(st.name), "step_us": step_us, "host_us": host_us})
    parts = (launches.groupby(["step", "kind", "key", "phase"], as_index=False, sort=False)["dur_us"].sum()
             .rename(columns={"dur_us": "us"}))
    summed = np.zeros(n_steps)
    np.add.at(summed, launches["step"].to_numpy(np.int64), launches["dur_us"].to_numpy(np.float64))
    busy = _busy_per_step(launches, n_steps)
    extra = pd.DataFrame({
        "step": np.tile(np.arange(n_steps), 2),
        "kind": [DEVICE_IDLE] * n_steps + [DEVICE_OVERLAP] * n_steps,
        "key": [DEVICE_IDLE] * n_steps + [DEVICE_OVERLAP] * n_steps, "phase": "",
        "us": np.concatenate([np.maximum(step_us - busy, 0.0), busy - summed]),
    })
    parts = pd.concat([parts, extra], ignore_index=True).assign(stall_us=0.0)
    return StepLedger(steps=steps, parts=parts)


def on_device_intervals(ledger: StepLedger, steps: pd.DataFrame) -> StepLedger:
    """`ledger` with each step's time the device interval of its work
    (analysis/device_steps.py: `steps`), for a host that ran ahead of its
    device: its windows then hold host time before its work and after it
    the device spent on other steps' work. The step's own work is as before;
    `device_idle` becomes the interval's time its device ran none of it. A
    step that launched nothing keeps its window."""
    interval = steps.set_index("step")["device_step_us"].reindex(ledger.steps["step"]).to_numpy(np.float64)
    old = ledger.steps["step_us"].to_numpy(np.float64)
    new = np.where(np.isfinite(interval), interval, old)
    parts = ledger.parts.copy()
    idle = (parts["kind"] == DEVICE_IDLE).to_numpy()
    at = parts.loc[idle, "step"].to_numpy(np.int64)
    busy = old[at] - parts.loc[idle, "us"].to_numpy(np.float64)
    parts.loc[idle, "us"] = np.maximum(new[at] - busy, 0.0)
    # The step is at least its busy time: work clipped to the window can outlast the interval's rounding.
    new[at] = np.maximum(new[at], busy)
    return StepLedger(steps=ledger.steps.assign(step_us=new), parts=parts)


def device_bound_pct(ledger: StepLedger) -> float | None:
    """The share of the steps' time the device was busy with the steps' work
    (%, over all steps); None without steps."""
    total = float(ledger.steps["step_us"].sum())
    if total <= 0:
        return None
    idle = float(ledger.parts.loc[ledger.parts["kind"] == DEVICE_IDLE, "us"].sum())
    return 100.0 * (total - idle) / total


def graph_us_per_step(launches: pd.DataFrame, n_steps: int) -> float:
    """Device time per step that CUDA graph launches ran (`launches`: a
    run's `device_launches`; `n_steps`: its profiled steps, at least one)."""
    return float(launches.loc[launches["via_graph"], "dur_us"].sum()) / max(n_steps, 1)


def _busy_per_step(launches: pd.DataFrame, n_steps: int) -> np.ndarray:
    """Time the device ran any of each step's work (overlapping streams once)."""
    busy = np.zeros(n_steps)
    for step, group in launches.groupby("step", sort=False):
        ts = group["ts_us"].to_numpy(np.float64)
        s, e = union(ts, ts + group["dur_us"].to_numpy(np.float64))
        busy[int(step)] = float(np.sum(e - s))
    return busy


LAUNCH_TABLE_KEYS = ["kind", "key", "phase", "operator", "kernel"]


def _unlaunched_name(launches: pd.DataFrame) -> np.ndarray:
    """The operator name of work no launch event links to: launched before
    the window, or (its launch lost) unknown."""
    return np.where(launches["kind"].to_numpy(object) == PRE_WINDOW, PRE_WINDOW_NAME, UNKNOWN_NAME)


def launch_table(linked: LinkedTrace, launches: pd.DataFrame) -> pd.DataFrame:
    """Device time by part, launching operator and kernel name (whole run):
    LAUNCH_TABLE_KEYS, `calls`, `total_us`, and `via_graph` (calls a CUDA
    graph launch ran). `operator` is the launching operator's name (work
    launched before the window, or with no launch event, is named so); memcpy and memset are named as
    kernels are."""
    t = linked.table
    op = launches["op_row"].to_numpy(np.int64)
    names = t.names(t.name_id[np.maximum(op, 0)])
    operator = np.where(op >= 0, np.asarray(names, dtype=object), _unlaunched_name(launches))
    frame = launches.assign(operator=operator, kernel=np.asarray(t.names(t.name_id[launches["row"].to_numpy()]),
                                                                 dtype=object))
    grouped = frame.groupby(LAUNCH_TABLE_KEYS, as_index=False, sort=False).agg(
        calls=("row", "size"), total_us=("dur_us", "sum"), via_graph=("via_graph", "sum"))
    return grouped.astype({"calls": np.int64, "via_graph": np.int64})


def launch_steps(linked: LinkedTrace, launches: pd.DataFrame) -> pd.DataFrame:
    """Long form: `operator`, `kind`, `key`, `step`, `total_us`: each step's
    device time by launching operator and part (the samples behind the
    significance of a launch table's rows)."""
    t = linked.table
    op = launches["op_row"].to_numpy(np.int64)
    operator = np.where(op >= 0, np.asarray(t.names(t.name_id[np.maximum(op, 0)]), dtype=object),
                        _unlaunched_name(launches))
    frame = launches.assign(operator=operator, total_us=launches["dur_us"])
    return frame.groupby(["operator", "kind", "key", "step"], as_index=False, sort=False)["total_us"].sum()
