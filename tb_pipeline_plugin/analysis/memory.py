"""Allocator memory over the profiled window, from `[memory]` events."""
from __future__ import annotations

import numpy as np

from ..trace.link import LinkedTrace

# c10::DeviceType: 0 is CPU; CUDA is 1 and ROCm builds report 1 as well.
_CPU = 0


def _label(device_type: int, device_id: int) -> str:
    return "CPU" if device_type == _CPU else f"GPU {max(device_id, 0)}"


def _time_weighted(ts: np.ndarray, value: np.ndarray, before: float, t0: float, t1: float) -> float:
    """Average of a step function (value[k] from ts[k] on) over [t0, t1]."""
    if t1 <= t0:
        return float(value[-1]) if len(value) else before
    points = np.concatenate(([t0], np.clip(ts, t0, t1), [t1]))
    levels = np.concatenate(([before], value))
    # Level in effect before each sample inside the window.
    inside_before = np.searchsorted(ts, t0, side="right")
    if inside_before > 0:
        levels[0] = value[inside_before - 1]
    widths = np.diff(points)
    return float(np.sum(levels * widths) / (t1 - t0))


def memory_summary(linked: LinkedTrace) -> dict:
    m = linked.table.memory
    devices = []
    steps = linked.steps
    t0 = float(steps.start_us[0]) if len(steps.start_us) else 0.0
    t1 = float(steps.end_us[-1]) if len(steps.end_us) else 0.0
    has_total = m.total_allocated_bytes >= 0
    keys = sorted({(int(a), int(b)) for a, b in zip(m.device_type[has_total], m.device_id[has_total])})
    for dtype, did in keys:
        sel = np.flatnonzero(has_total & (m.device_type == dtype) & (m.device_id == did))
        sel = sel[np.argsort(m.ts_us[sel], kind="stable")]
        ts = m.ts_us[sel]
        alloc = m.total_allocated_bytes[sel].astype(np.float64)
        reserved = m.total_reserved_bytes[sel]
        before = float(alloc[0] - m.bytes_delta[sel[0]])
        in_window = (ts >= t0) & (ts <= t1)
        peak_candidates = alloc[in_window]
        start_level = alloc[np.searchsorted(ts, t0, side="right") - 1] if np.searchsorted(ts, t0, side="right") > 0 else before
        peak = float(max(peak_candidates.max() if len(peak_candidates) else start_level, start_level))
        devices.append({
            "device": _label(dtype, did),
            "avg_allocated_bytes": _time_weighted(ts, alloc, before, t0, t1),
            "peak_allocated_bytes": int(peak),
            "peak_reserved_bytes": int(reserved.max()) if len(reserved) and reserved.max() >= 0 else None,
            "samples": int(len(sel)),
        })
    gpus = [d for d in devices if d["device"] != "CPU"]
    main = max(gpus or devices, key=lambda d: d["peak_allocated_bytes"], default=None)
    return {
        "avg_bytes": main["avg_allocated_bytes"] if main else None,
        "peak_bytes": main["peak_allocated_bytes"] if main else None,
        "device": main["device"] if main else None,
        "devices": devices,
    }
