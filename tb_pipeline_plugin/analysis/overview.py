"""Run overview: device, steps and their time breakdown, GPU utilisation, memory."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace, Steps, timed_window
from ..trace.link import whole_window as linked_whole_window
from ..trace.table import Kind, Phase
from .device import device_info, distributed_info
from .device_idle import CAUSES as IDLE_CAUSES
from .device_idle import bound, device_idle
from .intervals import measure_in, merge, union
from .memory.series import memory_summary
from ..trace.names import (
    is_communication_kernel, is_cpu_collective, is_data_loading, is_host_collective, is_step, name_mask,
)

# Priority order: each microsecond of a step goes to the first active category.
CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "data_loading", "cpu_exec", "other")


def _category_rows(linked: LinkedTrace) -> dict[str, np.ndarray]:
    t = linked.table
    complete = t.phase == Phase.COMPLETE

    def rows_of(*kinds: Kind) -> np.ndarray:
        return np.flatnonzero(complete & np.isin(t.kind, kinds))

    kernels = rows_of(Kind.KERNEL)
    comm_kernel = name_mask(t, kernels, is_communication_kernel)
    annotations = rows_of(Kind.USER_ANNOTATION)
    ops = rows_of(Kind.CPU_OP)
    host_named = np.concatenate([annotations, ops])
    # With device activity an NCCL collective's real cost is its kernel (the
    # host call only enqueues it); gloo / MPI collectives run on the host
    # whatever the job's device, so their host time is communication.
    on_host = is_cpu_collective if linked.has_device else is_host_collective
    collectives = host_named[name_mask(t, host_named, on_host)]
    communication = np.concatenate([kernels[comm_kernel], collectives])
    data_loading = annotations[name_mask(t, annotations, is_data_loading)]
    not_step = annotations[~name_mask(t, annotations, is_step)]
    return {
        "kernel": kernels[~comm_kernel],
        "memcpy": rows_of(Kind.MEMCPY),
        "memset": rows_of(Kind.MEMSET),
        "communication": communication,
        "runtime": rows_of(Kind.RUNTIME, Kind.DRIVER),
        "data_loading": data_loading,
        "cpu_exec": np.concatenate([ops, not_step]),
    }


def step_breakdown(linked: LinkedTrace, steps: Steps | None = None) -> pd.DataFrame:
    """One row per step: name, step, start/duration µs and µs per category."""
    t = linked.table
    steps = steps or linked.steps
    base = steps.start_us[0] if len(steps.start_us) else 0.0
    ws, we = steps.start_us - base, steps.end_us - base
    duration = we - ws
    frame = pd.DataFrame({"name": steps.name, "step": steps.number, "start_us": ws, "duration_us": duration})
    covered = (np.empty(0), np.empty(0))
    before = np.zeros(len(ws))
    for category, rows in _category_rows(linked).items():
        s = t.ts_us[rows] - base
        covered = merge(covered, (s, s + t.dur_us[rows]))
        now = measure_in(covered, ws, we)
        frame[category] = now - before
        before = now
    frame["other"] = np.maximum(duration - before, 0.0)
    return frame


def gpu_utilization_pct(linked: LinkedTrace, steps: Steps | None = None) -> float | None:
    if not linked.has_device:
        return None
    t = linked.table
    steps = steps or linked.steps
    rows = np.flatnonzero((t.phase == Phase.COMPLETE) & (t.kind == Kind.KERNEL))
    busy = union(t.ts_us[rows] - steps.start_us[0], t.ts_us[rows] + t.dur_us[rows] - steps.start_us[0])
    total = float(np.sum(steps.end_us - steps.start_us))
    if total <= 0:
        return None
    return float(100.0 * measure_in(busy, steps.start_us - steps.start_us[0], steps.end_us - steps.start_us[0]).sum() / total)


def plausible_unix_s(seconds: float) -> float | None:
    """`seconds` when it can be a Unix time of a profile (2015 to 2100), else
    None: a timestamp relative to something unknown names no time of day."""
    return seconds if 1.42e9 <= seconds <= 4.1e9 else None


def unix_offset_s(linked: LinkedTrace) -> float | None:
    """What turns a trace timestamp (in s) into Unix seconds, or None when
    the trace cannot tell: Kineto's timestamps are µs since
    `baseTimeNanoseconds` when the trace records it, Unix µs in traces from
    before it did (2021)."""
    if not len(linked.steps.start_us):
        return None
    base = linked.table.metadata.get("baseTimeNanoseconds")
    offset = base / 1e9 if isinstance(base, (int, float)) and not isinstance(base, bool) else 0.0
    return offset if plausible_unix_s(float(linked.steps.start_us[0]) / 1e6 + offset) is not None else None


def first_step_unix_s(linked: LinkedTrace) -> float | None:
    """When the first step's annotation began on the host (Unix seconds), or None."""
    offset = unix_offset_s(linked)
    if offset is None:
        return None
    row = int(linked.steps.row[0])
    ts_us = linked.table.ts_us[row] if row >= 0 else linked.steps.start_us[0]
    return float(ts_us) / 1e6 + offset


def trace_duration_us(linked: LinkedTrace) -> float:
    start, end = timed_window(linked.table)
    return float(end - start)


def overview(linked: LinkedTrace, whole_window: bool = False) -> dict:
    """`whole_window`: all steps taken as one (to compare with a trace that
    has no step annotations)."""
    windows = linked_whole_window(linked.steps) if whole_window else linked.steps
    frame = step_breakdown(linked, windows)
    # The idle split is of the steps' own windows (a whole window has no steps to split).
    idle = device_idle(linked) if linked.has_device and not whole_window else None
    steps = []
    for i, rec in enumerate(frame.to_dict("records")):
        steps.append({
            "name": rec["name"], "step": int(rec["step"]), "start_us": float(rec["start_us"]),
            "duration_us": float(rec["duration_us"]),
            "breakdown_us": {c: float(rec[c]) for c in CATEGORIES},
            "device_idle_us": ({c: float(idle[f"{c}_us"].iloc[i]) for c in IDLE_CAUSES}
                               if idle is not None and i < len(idle) else None),
        })
    n = max(len(frame), 1)
    return {
        "device": device_info(linked),
        "distributed": distributed_info(linked.table),
        "trace_duration_us": trace_duration_us(linked),
        "start_unix_s": first_step_unix_s(linked),
        "steps": steps,
        "avg_step_time_us": float(frame["duration_us"].sum() / n),
        "breakdown_us": {c: float(frame[c].sum() / n) for c in CATEGORIES},
        "gpu_utilization_pct": gpu_utilization_pct(linked, windows),
        "device_idle_us": {c: float(idle[f"{c}_us"].sum() / n) for c in IDLE_CAUSES} if idle is not None else None,
        "bound": bound(idle, frame["duration_us"].to_numpy(np.float64)) if idle is not None else None,
        "memory": memory_summary(linked, windows),
        "warnings": list(linked.table.warnings),
    }


def step_range(overview: dict | None) -> dict | None:
    """First and last ProfilerStep number of a loaded overview and how many
    steps it holds; None before it is loaded, or when the trace has no step
    annotations (its one synthetic step "all")."""
    if not overview:
        return None
    numbers = [s["step"] for s in overview.get("steps") or [] if s.get("name") != "all"]
    if not numbers:
        return None
    return {"first": min(numbers), "last": max(numbers), "count": len(numbers)}
