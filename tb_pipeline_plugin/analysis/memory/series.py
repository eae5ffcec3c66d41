"""Allocator memory over the profiled window, from `[memory]` events."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...trace.link import LinkedTrace, Steps

# c10::DeviceType: 0 is CPU; CUDA is 1 and ROCm builds report 1 as well.
_CPU = 0


def _label(device_type: int, device_id: int) -> str:
    return "CPU" if device_type == _CPU else f"GPU {max(device_id, 0)}"


def _time_weighted(ts: np.ndarray, value: np.ndarray, before: float, t0: float, t1: float) -> float:
    """Average over [t0, t1] of the step function that is `before` until
    ts[0] and value[k] from ts[k] on (samples outside the window get zero
    width after clipping, so the level in force at t0 is counted from t0)."""
    if t1 <= t0:
        return _level_at(ts, value, before, t1)
    points = np.concatenate(([t0], np.clip(ts, t0, t1), [t1]))
    levels = np.concatenate(([before], value))
    return float(np.sum(levels * np.diff(points)) / (t1 - t0))


def _level_at(ts: np.ndarray, value: np.ndarray, before: float, t: float) -> float:
    i = np.searchsorted(ts, t, side="right")
    return float(value[i - 1]) if i > 0 else before


def _peak(ts: np.ndarray, value: np.ndarray, before: float, t0: float, t1: float) -> float:
    inside = value[(ts >= t0) & (ts <= t1)]
    at_start = _level_at(ts, value, before, t0)
    return float(max(inside.max(), at_start)) if len(inside) else at_start


def _rebuilt_allocated(bytes_delta: np.ndarray) -> tuple[np.ndarray, float]:
    """Allocated bytes after each event, and before the first, from `Bytes`
    alone (Kineto before 2022 wrote no totals): the running sum, raised so
    that it never goes below zero. Frees of memory allocated before the trace
    prove at least that much was held; more may have been."""
    running = np.cumsum(bytes_delta, dtype=np.float64)
    before = max(0.0, -float(running.min()))
    return running + before, before


@dataclass(frozen=True)
class DeviceSeries:
    """One device's `[memory]` events in time order (file order among equal
    times: an allocation and its free can share a microsecond)."""

    device: str
    events: np.ndarray  # int64 indices into `table.memory`
    ts_us: np.ndarray
    allocated_bytes: np.ndarray  # float64, after each event
    reserved_bytes: np.ndarray  # float64, after each event; NaN where the trace has none
    before_bytes: float  # allocated before the first event: held from before the profiled window
    has_totals: bool  # False: rebuilt from `Bytes` alone (Kineto before 2022)


def device_series(linked: LinkedTrace) -> list[DeviceSeries]:
    """Every device's allocator state over the trace, CPU first."""
    m = linked.table.memory
    known = m.device_type >= 0  # the decoder warned about the others
    keys = sorted({(int(a), int(b)) for a, b in zip(m.device_type[known], m.device_id[known])})
    out = []
    for dtype, did in keys:
        sel = np.flatnonzero(known & (m.device_type == dtype) & (m.device_id == did))
        sel = sel[np.argsort(m.ts_us[sel], kind="stable")]
        has_total = m.total_allocated_bytes[sel] >= 0
        if has_total.any():
            sel = sel[has_total]
            alloc = m.total_allocated_bytes[sel].astype(np.float64)
            # The allocator's state before the first event in the trace.
            before = float(alloc[0] - m.bytes_delta[sel[0]])
        else:
            alloc, before = _rebuilt_allocated(m.bytes_delta[sel])
        reserved = m.total_reserved_bytes[sel].astype(np.float64)
        reserved[reserved < 0] = np.nan
        out.append(DeviceSeries(_label(dtype, did), sel, m.ts_us[sel], alloc, reserved, before,
                                bool(has_total.any())))
    return out


def steps_window(linked: LinkedTrace, steps: Steps | None = None) -> tuple[float, float]:
    """[t0, t1] of the steps; a memory-only trace's samples are the window."""
    m = linked.table.memory
    steps = steps or linked.steps
    t0 = float(steps.start_us.min()) if len(steps.start_us) else 0.0
    t1 = float(steps.end_us.max()) if len(steps.end_us) else 0.0
    known = m.device_type >= 0
    if t1 <= t0 and known.any():
        # No timed events (a memory-only trace): the samples are the window.
        t0, t1 = float(m.ts_us[known].min()), float(m.ts_us[known].max())
    return t0, t1


def memory_summary(linked: LinkedTrace, steps: Steps | None = None) -> dict:
    """Per device: time-weighted average and peak of allocated bytes, and the
    peak of reserved bytes, all over the steps' window."""
    t0, t1 = steps_window(linked, steps)
    devices = []
    for s in device_series(linked):
        ts, alloc, before, reserved = s.ts_us, s.allocated_bytes, s.before_bytes, s.reserved_bytes
        has_reserved = ~np.isnan(reserved)
        devices.append({
            "device": s.device,
            "avg_allocated_bytes": _time_weighted(ts, alloc, before, t0, t1),
            "peak_allocated_bytes": int(_peak(ts, alloc, before, t0, t1)),
            "peak_reserved_bytes": (
                int(_peak(ts[has_reserved], reserved[has_reserved], 0.0, t0, t1)) if has_reserved.any() else None
            ),
            "samples": int(len(s.events)),
        })
    gpus = [d for d in devices if d["device"] != "CPU"]
    main = max(gpus or devices, key=lambda d: d["peak_allocated_bytes"], default=None)
    return {
        "avg_bytes": main["avg_allocated_bytes"] if main else None,
        "peak_bytes": main["peak_allocated_bytes"] if main else None,
        "device": main["device"] if main else None,
        "devices": devices,
    }
