"""The overview metrics of two runs side by side (one delta row each), with
the significance of the per-step ones (step time, breakdown categories)."""
from __future__ import annotations

import numpy as np

from ..analysis.ledger import spikiness
from .significance import method as S
from .delta import PCT_DECIMALS, US_DECIMALS, delta_pct, is_number

# (metric, label, unit); `metric` is the dotted path into the overview dict,
# except `device` / `device_count` / `device_memory_bytes` / `steps`.
OVERVIEW_METRICS = [
    ("device", "Device", None),
    ("device_count", "Device count", "count"),
    ("device_memory_bytes", "Device memory", "bytes"),
    # Of the traces: the step time's own steps may be the recorded ones (its label says so: diff/impls/overview.py).
    ("steps", "Profiled steps", "count"),
    ("avg_step_time_us", "Average step time", "us"),
    ("breakdown_us.kernel", "Kernel (per step)", "us"),
    ("breakdown_us.memcpy", "Memcpy (per step)", "us"),
    ("breakdown_us.memset", "Memset (per step)", "us"),
    ("breakdown_us.communication", "Communication (per step)", "us"),
    ("breakdown_us.runtime", "Runtime (per step)", "us"),
    ("breakdown_us.data_loading", "Data loading (per step)", "us"),
    ("breakdown_us.cpu_exec", "CPU exec (per step)", "us"),
    ("breakdown_us.other", "Other (per step)", "us"),
    ("spikiness.cv_pct", "Step time variation (CV)", "pct"),
    ("spikiness.worst_to_median_pct", "Worst step / median step", "pct"),
    # From the trace: the share of the profiled steps' time a kernel ran. Not the Pipeline tab's figure, the
    # driver's samples over the whole process (start-up and loading included), so lower.
    ("gpu_utilization_pct", "GPU utilization (profiled steps)", "pct"),
    # Why the device waited, per step (analysis/device_idle.py): the causes sum to its idle time.
    ("device_idle_us.data", "Device idle: data (per step)", "us"),
    ("device_idle_us.sync", "Device idle: sync (per step)", "us"),
    ("device_idle_us.launch", "Device idle: launches (per step)", "us"),
    ("device_idle_us.other", "Device idle: other (per step)", "us"),
    ("bound.words", "Bound (profiled steps)", None),
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
    if metric.startswith("spikiness."):
        samples = step_samples(overview, "avg_step_time_us")
        sp = spikiness(samples if samples is not None else np.zeros(0))
        if metric == "spikiness.cv_pct":
            return sp["cv_pct"]
        return None if sp["worst_to_median"] is None else round(100.0 * sp["worst_to_median"], PCT_DECIMALS)
    value = overview
    for part in metric.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def step_samples(overview: dict, metric: str) -> np.ndarray | None:
    """Per-step values of a per-step metric (its overview value is their
    mean), None for the other metrics."""
    steps = overview.get("steps") or []
    if metric == "avg_step_time_us":
        values = [s.get("duration_us") for s in steps]
    elif metric.startswith(("breakdown_us.", "device_idle_us.")):
        group, cat = metric.split(".", 1)
        values = [(s.get(group) or {}).get(cat) for s in steps]
    else:
        return None
    if not all(is_number(v) for v in values):
        return None
    return np.array(values, dtype=np.float64)


STEP_TIME = "avg_step_time_us"


def _significance(baseline: dict, experimental: dict, recordings: tuple, noise: S.NoisePolicy) -> dict[str, dict]:
    """The step time judged on its own (`significance.step_time`, the
    verdict the explanation shows too), the breakdown categories as one
    family against the baseline's mean step time (a category is a part of
    the step)."""
    out = {}
    b_step, e_step = step_samples(baseline, STEP_TIME), step_samples(experimental, STEP_TIME)
    if b_step is not None and e_step is not None:
        out[STEP_TIME] = S.step_time(b_step, e_step, recordings, noise=noise)
    metrics = [m for m, _, _ in OVERVIEW_METRICS if m != STEP_TIME
               and step_samples(baseline, m) is not None and step_samples(experimental, m) is not None]
    if not metrics:
        return out
    b = np.array([step_samples(baseline, m) for m in metrics]).reshape(len(metrics), -1)
    e = np.array([step_samples(experimental, m) for m in metrics]).reshape(len(metrics), -1)
    ref = float(b_step.mean()) if b_step is not None and len(b_step) else 0.0
    out.update(zip(metrics, S.compare(b, e, np.full(len(metrics), ref), recordings=recordings, noise=noise)))
    return out


def overview_rows(baseline: dict, experimental: dict, recordings: tuple = (None, None), *,
                  noise: S.NoisePolicy) -> list[dict]:
    """Every overview metric: both values, delta, delta % (None where
    undefined), and the significance of the per-step ones. `recordings`:
    each side's recording of every step of its overview (None for one)."""
    significance = _significance(baseline, experimental, recordings, noise)
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
            "significance": significance.get(metric),
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
