"""The overview metrics of two runs side by side (one delta row each)."""
from __future__ import annotations

import numpy as np

from .delta import PCT_DECIMALS, US_DECIMALS, delta_pct, is_number

# (metric, label, unit); `metric` is the dotted path into the overview dict,
# except `device` / `device_count` / `device_memory_bytes` / `steps`.
OVERVIEW_METRICS = [
    ("device", "Device", None),
    ("device_count", "Device count", "count"),
    ("device_memory_bytes", "Device memory", "bytes"),
    ("steps", "Steps", "count"),
    ("avg_step_time_us", "Average step time", "us"),
    ("breakdown_us.kernel", "Kernel (per step)", "us"),
    ("breakdown_us.memcpy", "Memcpy (per step)", "us"),
    ("breakdown_us.memset", "Memset (per step)", "us"),
    ("breakdown_us.communication", "Communication (per step)", "us"),
    ("breakdown_us.runtime", "Runtime (per step)", "us"),
    ("breakdown_us.data_loading", "Data loading (per step)", "us"),
    ("breakdown_us.cpu_exec", "CPU exec (per step)", "us"),
    ("breakdown_us.other", "Other (per step)", "us"),
    ("gpu_utilization_pct", "GPU utilization", "pct"),
    ("memory.avg_bytes", "Average memory", "bytes"),
    ("memory.peak_bytes", "Peak memory", "bytes"),
]


def overview_value(overview: dict, metric: str):
    device = overview.get("device") or {}
    if metric == "device":
        return device.get("name") or device.get("type")
    if metric == "device_count":
        return device.get("count")
    if metric == "device_memory_bytes":
        return device.get("memory_bytes")
    if metric == "steps":
        return len(overview.get("steps") or [])
    value = overview
    for part in metric.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def overview_rows(baseline: dict, experimental: dict) -> list[dict]:
    """Every overview metric: both values, delta, delta % (None where undefined)."""
    rows = []
    for metric, label, unit in OVERVIEW_METRICS:
        b, e = overview_value(baseline, metric), overview_value(experimental, metric)
        numeric = unit is not None and is_number(b) and is_number(e)
        delta = e - b if numeric else None
        decimals = US_DECIMALS if unit in ("us", "bytes") else PCT_DECIMALS
        rows.append({
            "metric": metric, "label": label, "unit": unit,
            "baseline": _round_metric(b, decimals), "experimental": _round_metric(e, decimals),
            "delta": _round_metric(delta, decimals), "delta_pct": delta_pct(b, delta) if numeric else None,
        })
    return rows


def _round_metric(v, decimals: int):
    if isinstance(v, (bool, str)) or v is None:
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if is_number(v):
        return round(float(v), decimals)
    return None
