"""Why the device waits: each profiled step's device idle time split by
cause, and the bound it implies (issue 45; HTA's idle-time analysis, host
wait / kernel wait / other for one run, is the anchor).

A step's idle time is its window (trace/link.py: from where the previous
step ended to the later of its host end and its last device work's end)
minus the union of every kernel, memcpy and memset in it: the same window
the Overview's breakdown and GPU utilization use. Each gap of that union
(from the window's start, between two busy stretches, to the window's end)
goes, a microsecond at a time, to the first cause that holds:

* `data`: the training thread was in the DataLoader (its
  `enumerate(DataLoader)...` annotation): the device waited for a batch;
* `sync`: a synchronizing call (`cudaStreamSynchronize`,
  `cudaDeviceSynchronize`, `cudaEventSynchronize`, a blocking `cudaMemcpy`,
  and their driver forms: what `.item()`, `.cpu()` and `print(loss)` do)
  returned in the gap or just before it: the host had waited for the device
  to drain, so nothing was queued when it did;
* `launch`: the work that ends the gap was launched after the gap began:
  the device had run out of queued work and waited for the host's next
  launch (Python, the framework, the launches themselves set the pace);
* `other`: the rest (work queued but held back: stream waits, events,
  dependencies, and the window's tail after the last work).

The causes add up to the idle time exactly. The bound of a run follows from
its shares over the steps: `device` when idle under `IDLE_BOUND_PCT` of
its steps' time, else the largest cause's (`input`, `sync`, `launch`,
`other`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from ..trace.names import is_data_loading, name_mask
from ..trace.table import DEVICE_ACTIVITY_KINDS, Kind, Phase
from .intervals import measure_in, union

CAUSES = ("data", "sync", "launch", "other")
SYNC_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpy2D",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2",
    "cuMemcpy", "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy",
})
# A synchronizing call that returned this close before a gap began released the host into it.
SYNC_SLACK_US = 5.0
# Below this share of its steps' time idle, a run is device-bound.
IDLE_BOUND_PCT = 20.0
BOUND_OF_CAUSE = {"data": "input", "sync": "sync", "launch": "launch", "other": "other"}
BOUND_WORDS = {"device": "device-bound", "input": "input-bound", "sync": "sync-bound",
               "launch": "host-bound: launches", "other": "device waiting (other)"}


def device_idle(linked: LinkedTrace) -> pd.DataFrame:
    """One row per profiled step: `step`, `idle_us` and one `<cause>_us`
    column per cause (they sum to `idle_us`); empty without device work."""
    t = linked.table
    st = linked.steps
    n = len(st.name)
    columns = {"step": np.arange(n), "idle_us": np.zeros(n), **{f"{c}_us": np.zeros(n) for c in CAUSES}}
    complete = t.phase == Phase.COMPLETE
    device = np.flatnonzero(complete & np.isin(t.kind, DEVICE_ACTIVITY_KINDS))
    if not linked.has_device or not len(device) or not n:
        return pd.DataFrame(columns)
    busy_s, busy_e = union(t.ts_us[device], t.ts_us[device] + t.dur_us[device])
    win_s, win_e = np.asarray(st.start_us, np.float64), np.asarray(st.end_us, np.float64)
    gaps_s, gaps_e, gap_step = _gaps(busy_s, busy_e, win_s, win_e)
    annotations = np.flatnonzero(complete & (t.kind == Kind.USER_ANNOTATION))
    loading = annotations[name_mask(t, annotations, is_data_loading)]
    runtime = np.flatnonzero(complete & np.isin(t.kind, (Kind.RUNTIME, Kind.DRIVER)))
    syncs = runtime[name_mask(t, runtime, lambda s: s in SYNC_CALLS)]
    left_s, left_e = gaps_s.copy(), gaps_e.copy()
    out = {c: np.zeros(len(gaps_s)) for c in CAUSES}
    # data: the part of each gap the DataLoader's annotations cover.
    data = union(t.ts_us[loading], t.ts_us[loading] + t.dur_us[loading]) if len(loading) else None
    if data is not None:
        out["data"] = measure_in(data, gaps_s, gaps_e)
    rest = (gaps_e - gaps_s) - out["data"]
    # sync: a gap a synchronizing call returned into (or just before).
    sync_end = np.sort(t.ts_us[syncs] + t.dur_us[syncs])
    released = (np.searchsorted(sync_end, left_e, side="right") - np.searchsorted(sync_end, left_s - SYNC_SLACK_US)) > 0
    out["sync"] = np.where(released, rest, 0.0)
    rest = rest - out["sync"]
    # launch: the work ending the gap was launched after the gap began.
    launched_in_gap = _next_work_launched_after(linked, device, left_s, left_e)
    out["launch"] = np.where(launched_in_gap, rest, 0.0)
    out["other"] = rest - out["launch"]
    for cause in CAUSES:
        np.add.at(columns[f"{cause}_us"], gap_step, np.maximum(out[cause], 0.0))
    columns["idle_us"] = sum(columns[f"{c}_us"] for c in CAUSES)
    return pd.DataFrame(columns)


def _gaps(busy_s: np.ndarray, busy_e: np.ndarray, win_s: np.ndarray, win_e: np.ndarray) -> tuple:
    """The idle stretches of each window (start, end, window index)."""
    out_s, out_e, out_w = [], [], []
    for w, (ws, we) in enumerate(zip(win_s.tolist(), win_e.tolist())):
        lo = np.searchsorted(busy_e, ws, side="right")  # first busy stretch ending after the window starts
        hi = np.searchsorted(busy_s, we, side="left")  # busy stretches starting before it ends
        cursor = ws
        for s, e in zip(busy_s[lo:hi].tolist(), busy_e[lo:hi].tolist()):
            if s > cursor:
                out_s.append(cursor)
                out_e.append(min(s, we))
                out_w.append(w)
            cursor = max(cursor, e)
        if cursor < we:
            out_s.append(cursor)
            out_e.append(we)
            out_w.append(w)
    return np.array(out_s, np.float64), np.array(out_e, np.float64), np.array(out_w, np.int64)


def _next_work_launched_after(linked: LinkedTrace, device: np.ndarray, gap_s: np.ndarray,
                              gap_e: np.ndarray) -> np.ndarray:
    """Per gap: the device work starting at its end was launched after its
    start (the device waited for that launch)."""
    t = linked.table
    order = device[np.argsort(t.ts_us[device], kind="stable")]
    starts = t.ts_us[order]
    at = np.searchsorted(starts, gap_e, side="left")
    found = at < len(order)
    nxt = order[np.minimum(at, len(order) - 1)]
    launch = linked.launch_of[nxt]
    launch_ts = np.where(launch >= 0, t.ts_us[np.maximum(launch, 0)], -np.inf)
    return found & (starts[np.minimum(at, len(order) - 1)] <= gap_e + 1e-6) & (launch_ts > gap_s)


def bound(idle: pd.DataFrame, step_us: np.ndarray) -> dict:
    """A run's bound from its steps' idle split: `bound` (BOUND_WORDS' key),
    its words, the idle share of the steps' time (%) and each cause's share
    of the idle time (%)."""
    total = float(np.sum(step_us))
    idle_us = float(idle["idle_us"].sum()) if len(idle) else 0.0
    idle_pct = 100.0 * idle_us / total if total > 0 else 0.0
    shares = {c: (100.0 * float(idle[f"{c}_us"].sum()) / idle_us if idle_us > 0 else 0.0) for c in CAUSES}
    if idle_pct < IDLE_BOUND_PCT:
        key = "device"
    else:
        key = BOUND_OF_CAUSE[max(CAUSES, key=lambda c: shares[c])]
    return {"bound": key, "words": BOUND_WORDS[key], "idle_pct": round(idle_pct, 2),
            "cause_pct": {c: round(v, 2) for c, v in shares.items()}}
