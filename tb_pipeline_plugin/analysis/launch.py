"""Launch health, per step: is the host feeding the device in time?

Where the SPDL data-loader case hid: the GPU was fast, but the CPU no
longer launched its kernels in time. Per step (kernels belong to the step
whose host window holds their launching runtime call):

* `launch_delay_*_us`: a kernel's start minus its launching runtime call's
  start (`LinkedTrace.launch_of`, correlation ids): how far ahead of the
  device the host runs. Long delays mean a queue of work (healthy); delays
  near the launch cost mean the device is waiting on the host.
* `idle_us` / `gaps`: time between kernels on a device with no kernel
  running, from the step's first kernel start to its last kernel end
  (kernels of every stream of the device merged).
* `host_bound_gaps` / `host_bound_idle_us`: the gaps the host caused: the
  kernel after the gap was launched only after the gap had begun, so the
  device could not have started it sooner.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from ..trace.table import Kind, Phase
from .step_windows import step_of, step_windows

COLUMNS = ("kernels", "launch_delay_mean_us", "launch_delay_p50_us", "launch_delay_p90_us", "idle_us", "gaps",
           "host_bound_gaps", "host_bound_idle_us")


def launch_health(linked: LinkedTrace) -> pd.DataFrame:
    """One row per step (`step`, `name`, then COLUMNS); NaN delays for a
    step without launched kernels."""
    t = linked.table
    st = linked.steps
    n = len(st.name)
    win_start, win_end = step_windows(linked)
    k = np.flatnonzero((t.phase == Phase.COMPLETE) & (t.kind == Kind.KERNEL) & (linked.launch_of >= 0))
    launch = linked.launch_of[k]
    launch_ts = t.ts_us[launch]
    step = step_of(win_start, win_end, launch_ts)
    k, launch_ts, step = k[step >= 0], launch_ts[step >= 0], step[step >= 0]
    start, end, device = t.ts_us[k], t.ts_us[k] + t.dur_us[k], t.device[k]
    delay = start - launch_ts

    out = {c: np.zeros(n) for c in COLUMNS}
    for c in ("launch_delay_mean_us", "launch_delay_p50_us", "launch_delay_p90_us"):
        out[c][:] = np.nan
    order = np.lexsort((start, device, step))
    start, end, device, step, delay, launch_ts = (a[order] for a in (start, end, device, step, delay, launch_ts))
    bounds = np.flatnonzero(np.diff(step)) + 1
    for a, b in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [len(step)]))):
        if a == b:
            continue
        s = int(step[a])
        d = delay[a:b]
        out["kernels"][s] = b - a
        out["launch_delay_mean_us"][s] = float(d.mean())
        out["launch_delay_p50_us"][s] = float(np.percentile(d, 50))
        out["launch_delay_p90_us"][s] = float(np.percentile(d, 90))
        idle, gaps, hb_gaps, hb_idle = _gaps(start[a:b], end[a:b], device[a:b], launch_ts[a:b])
        out["idle_us"][s], out["gaps"][s] = idle, gaps
        out["host_bound_gaps"][s], out["host_bound_idle_us"][s] = hb_gaps, hb_idle
    frame = pd.DataFrame({"step": np.arange(n), "name": list(st.name), **out})
    for c in ("kernels", "gaps", "host_bound_gaps"):
        frame[c] = frame[c].astype(np.int64)
    return frame


def _gaps(start, end, device, launch_ts) -> tuple[float, int, int, float]:
    """Idle time and gaps between one step's kernels, per device (input
    sorted by device, then start), and those the host caused."""
    idle = hb_idle = 0.0
    gaps = hb_gaps = 0
    cuts = np.flatnonzero(np.diff(device)) + 1
    for a, b in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(device)]))):
        s, e, lt = start[a:b], end[a:b], launch_ts[a:b]
        reach = np.maximum.accumulate(e)
        # A gap opens before kernel i when everything earlier has ended.
        opens = np.flatnonzero(s[1:] > reach[:-1]) + 1
        length = s[opens] - reach[opens - 1]
        idle += float(length.sum())
        gaps += len(opens)
        host_bound = lt[opens] > reach[opens - 1]
        hb_gaps += int(host_bound.sum())
        # Of a host-bound gap, only the time after its launch is the device's
        # own latency; the time up to the launch is the host's.
        hb_idle += float((lt[opens][host_bound] - reach[opens - 1][host_bound]).sum())
    return idle, gaps, hb_gaps, hb_idle
