"""Delta tables: two runs' statistics side by side (pure DataFrame functions).

Column naming follows the HTTP API: for a statistic `X` (`calls`,
`host_self_us`, ...) a joined table has `baseline_X`, `experimental_X`,
`delta_X` (experimental - baseline) and the delta % as `delta.pct_name(X)`
(`delta_host_self_pct`: 100 * delta / baseline, null when the baseline is 0).
"""
from __future__ import annotations

import math
from typing import Annotated, Literal

import msgspec
import numpy as np
import pandas as pd

from ..errors import BadRequest
from .delta import PCT_DECIMALS, US_DECIMALS, delta_arrays, pct_name

OPERATOR_COLUMNS = ["calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"]
KERNEL_COLUMNS = ["calls", "total_us", "mean_us", "min_us", "max_us"]
DEFAULT_LIMIT = 500
MAX_LIMIT = 10_000


class TableQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How to filter, sort and page a delta table (typed; parsed once by the server)."""

    sort: str | None = None  # default: the delta of the table's primary column
    order: Literal["desc", "asc"] = "desc"
    filter: str = ""  # case-insensitive substring of the name (or input shape), not a regex
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    limit: Annotated[int, msgspec.Meta(ge=0, le=MAX_LIMIT)] = DEFAULT_LIMIT


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
        delta, pct = delta_arrays(bv, ev)
        out[f"baseline_{c}"] = bv
        out[f"experimental_{c}"] = ev
        out[f"delta_{c}"] = delta
        out[pct_name(c)] = pct
    return out.reset_index(drop=True)


def sort_keys(keys: list[str], columns: list[str]) -> list[str]:
    """Every column a joined table can be sorted by."""
    out = list(keys)
    for c in columns:
        out += [f"baseline_{c}", f"experimental_{c}", f"delta_{c}", pct_name(c)]
    return out


def query(table: pd.DataFrame, keys: list[str], columns: list[str], primary: str, q: TableQuery) -> dict:
    """Filter, sort and page a joined table as the `diff/operators` and
    `diff/kernels` routes describe. Raises BadRequest on an unknown sort key
    (the only parameter whose valid values depend on the table)."""
    allowed = sort_keys(keys, columns)
    sort = q.sort or f"delta_{primary}"
    if sort not in allowed:
        raise BadRequest(f"unknown sort key {sort!r}; one of: {', '.join(allowed)}")
    order, offset, limit = q.order, q.offset, q.limit
    text = q.filter.strip()

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
    for second in ("input_shape", "module"):  # the key beside the name, where the table has one
        if second in table.columns:
            values = table[second].astype("string")
            mask |= values.str.contains(text, case=False, regex=False, na=False).to_numpy(bool)
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
