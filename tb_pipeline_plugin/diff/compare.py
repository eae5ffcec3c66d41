"""Delta tables: two runs' statistics side by side (pure DataFrame functions).

Column naming follows the HTTP API: for a statistic `X` (`calls`,
`host_self_us`, ...) a joined table has `baseline_X`, `experimental_X`,
`delta_X` (experimental - baseline) and `delta_<X without _us>_pct`
(100 * delta / baseline, null when the baseline is 0).
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import BadRequest

OPERATOR_COLUMNS = ["calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"]
KERNEL_COLUMNS = ["calls", "total_us", "mean_us", "min_us", "max_us"]
DEFAULT_LIMIT = 500
MAX_LIMIT = 10_000
ORDERS = ("desc", "asc")
US_DECIMALS = 3
PCT_DECIMALS = 2


def pct_name(column: str) -> str:
    """`host_self_us` -> `delta_host_self_pct`, `calls` -> `delta_calls_pct`."""
    return f"delta_{column.removesuffix('_us')}_pct"


def delta_pct(baseline, delta):
    """100 * delta / baseline; None when undefined (baseline 0, missing, text)."""
    if not _is_number(baseline) or not _is_number(delta) or baseline == 0:
        return None
    return round(100.0 * delta / baseline, PCT_DECIMALS)


def join(baseline: pd.DataFrame, experimental: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    """Outer join on `keys`; a row missing on one side counts 0 there (0
    calls, 0 µs), never dropped. Adds delta and delta % for every column."""
    b = baseline[keys + columns].rename(columns={c: f"baseline_{c}" for c in columns})
    e = experimental[keys + columns].rename(columns={c: f"experimental_{c}" for c in columns})
    merged = b.merge(e, on=keys, how="outer", sort=False)
    out = merged[keys].copy()
    for c in columns:
        dtype = np.int64 if c == "calls" else np.float64
        bv = merged[f"baseline_{c}"].fillna(0).to_numpy(dtype)
        ev = merged[f"experimental_{c}"].fillna(0).to_numpy(dtype)
        delta = ev - bv
        out[f"baseline_{c}"] = bv
        out[f"experimental_{c}"] = ev
        out[f"delta_{c}"] = delta
        with np.errstate(divide="ignore", invalid="ignore"):
            out[pct_name(c)] = np.where(bv != 0, 100.0 * delta / np.where(bv != 0, bv, 1.0), np.nan)
    return out.reset_index(drop=True)


def sort_keys(keys: list[str], columns: list[str]) -> list[str]:
    """Every column a joined table can be sorted by."""
    out = list(keys)
    for c in columns:
        out += [f"baseline_{c}", f"experimental_{c}", f"delta_{c}", pct_name(c)]
    return out


def query(
    table: pd.DataFrame, keys: list[str], columns: list[str], primary: str, args: Mapping[str, str]
) -> dict:
    """Filter, sort and page a joined table as the `diff/operators` and
    `diff/kernels` routes describe. Raises BadRequest on bad parameters."""
    allowed = sort_keys(keys, columns)
    sort = args.get("sort") or f"delta_{primary}"
    if sort not in allowed:
        raise BadRequest(f"unknown sort key {sort!r}; one of: {', '.join(allowed)}")
    order = args.get("order") or "desc"
    if order not in ORDERS:
        raise BadRequest(f"order must be 'desc' or 'asc', got {order!r}")
    offset = int_arg(args, "offset", 0, 0, None)
    limit = int_arg(args, "limit", DEFAULT_LIMIT, 0, MAX_LIMIT)
    text = (args.get("filter") or "").strip()

    if text:
        table = table[filter_mask(table, text)]
    ordered = sort_table(table, sort, order, keys)
    page = ordered.iloc[offset : offset + limit]
    return {
        "total": int(len(ordered)), "offset": offset, "limit": limit, "sort": sort, "order": order,
        "primary": primary, "columns": list(columns), "rows": records(page, keys),
    }


def filter_mask(table: pd.DataFrame, text: str) -> np.ndarray:
    """Rows whose name or input shape (where the table has one) contains
    `text`, case-insensitive: the frontend's own filter."""
    mask = table["name"].astype("string").str.contains(text, case=False, regex=False, na=False).to_numpy(bool)
    if "input_shape" in table.columns:
        shapes = table["input_shape"].astype("string")
        mask |= shapes.str.contains(text, case=False, regex=False, na=False).to_numpy(bool)
    return mask


def records(frame: pd.DataFrame, keys: list[str]) -> list[dict]:
    """JSON-ready rows: NaN -> None, µs rounded to ns, % to 2 decimals."""
    out = []
    cols = list(frame.columns)
    values = {c: frame[c].tolist() for c in cols}
    for i in range(len(frame)):
        row = {}
        for c in cols:
            v = values[c][i]
            if c in keys:
                row[c] = v if isinstance(v, str) else None if v is None or _is_nan(v) else v
            else:
                row[c] = _clean(c, v)
        out.append(row)
    return out


def sort_table(table: pd.DataFrame, sort: str, order: str, keys: list[str]) -> pd.DataFrame:
    """Stable sort: by |value| for deltas, by value otherwise; nulls last in
    both orders; ties by the key columns ascending."""
    if len(table) == 0:
        return table
    col = table[sort]
    if sort in keys:
        value = col.fillna("").astype(str).str.lower().to_numpy()
        null = col.isna().to_numpy()
    else:
        value = col.to_numpy(np.float64)
        if sort.startswith("delta_") and not sort.endswith("_pct"):
            value = np.abs(value)
        null = np.isnan(value)
        value = np.where(null, 0.0, value)
    frame = pd.DataFrame({"_null": null, "_v": value}, index=table.index)
    for k in keys:
        frame[f"_k_{k}"] = table[k].fillna("").astype(str)
    by = ["_null", "_v"] + [f"_k_{k}" for k in keys]
    asc = [True, order == "asc"] + [True] * len(keys)
    idx = frame.sort_values(by, ascending=asc, kind="mergesort").index
    return table.loc[idx]


def int_arg(args: Mapping[str, str], name: str, default: int, lo: int, hi: int | None) -> int:
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    # Plain ASCII digits only: int() would also take "٣", "+5", "5_0", " 5".
    if not isinstance(raw, str) or not (raw.isascii() and raw.isdigit()):
        raise BadRequest(f"{name} must be a non-negative integer (digits 0-9), got {raw!r}")
    value = int(raw)
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise BadRequest(f"{name} must be {bound}, got {value}")
    return value


def _clean(column: str, v):
    if v is None or _is_nan(v):
        return None
    if column.endswith("_pct"):
        return round(float(v), PCT_DECIMALS)
    if column.endswith("calls"):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return round(float(v), US_DECIMALS)
    return v


def _is_nan(v) -> bool:
    return isinstance(v, (float, np.floating)) and math.isnan(v)


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and not _is_nan(v)


# ---------------------------------------------------------------- overview

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
        numeric = unit is not None and _is_number(b) and _is_number(e)
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
    if _is_number(v):
        return round(float(v), decimals)
    return None
