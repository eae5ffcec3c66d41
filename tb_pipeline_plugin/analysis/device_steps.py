"""Each profiled step on the device's clock: the interval of the work the
step launched.

A loop that does not synchronize each step runs ahead of its device: the
host launches step k+1 while the device still runs step k, and with CUDA
graphs a host step times only the launching. What a step costs is then the
device's time for it. A step's device work is every kernel, memcpy and
memset whose launch (its runtime or driver call, a `cudaGraphLaunch`
included: `LinkedTrace.launch_of`) lies in the step's host window
(analysis/step_windows.py); work launched before the profiled window has
no launch event and belongs to no step.

Per step: the first start and the last end of its work (`device_start_us`,
`device_end_us`), and its **device step time**, `device_step_us`: from
where the device could start on the step (its own first work, or the end
of the previous step's work when that ran later) to the end of its work.
Steps of a loop that keeps its device busy then abut, and their device step
times add up to the device's time for them; a step whose device waited for
the host's launches counts that wait (the host set its pace). `work_us`
sums the durations of its work (overlapping streams counted each).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from ..trace.table import DEVICE_ACTIVITY_KINDS, Phase
from .step_windows import step_of, step_windows

COLUMNS = ("step", "name", "activities", "device_start_us", "device_end_us", "device_step_us", "work_us")


def device_steps(linked: LinkedTrace) -> pd.DataFrame:
    """One row per profiled step (COLUMNS); a step that launched no device
    work has NaN times and 0 activities. Absolute µs, as the trace's."""
    t = linked.table
    st = linked.steps
    n = len(st.name)
    rows = np.flatnonzero((t.phase == Phase.COMPLETE) & np.isin(t.kind, DEVICE_ACTIVITY_KINDS))
    launch = linked.launch_of[rows]
    launched = launch >= 0
    rows, launch = rows[launched], launch[launched]
    start_w, end_w = step_windows(linked)
    step = step_of(start_w, end_w, t.ts_us[launch])
    mine = step >= 0
    step, rows = step[mine], rows[mine]
    starts, ends = t.ts_us[rows], t.ts_us[rows] + t.dur_us[rows]
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, step, starts)
    np.maximum.at(last, step, ends)
    work = np.bincount(step, weights=t.dur_us[rows], minlength=n)[:n]
    count = np.bincount(step, minlength=n)[:n]
    has = count > 0
    first, last = np.where(has, first, np.nan), np.where(has, last, np.nan)
    # The end of the latest earlier step's work: where the device could start on this one.
    before = np.concatenate(([-np.inf], np.fmax.accumulate(np.where(has, last, -np.inf))[:-1])) if n else first
    step_us = last - np.maximum(first, before)
    return pd.DataFrame({
        "step": np.arange(n), "name": list(st.name), "activities": count.astype(np.int64),
        "device_start_us": first, "device_end_us": last, "device_step_us": step_us, "work_us": work,
    })
