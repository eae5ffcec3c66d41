"""Delta tables: two runs' statistics side by side (pure DataFrame functions).

Column naming follows the HTTP API: for a statistic `X` (`calls`,
`host_self_us`, ...) a joined table has `baseline_X`, `experimental_X`,
`delta_X` (experimental - baseline) and the delta % as `delta.pct_name(X)`
(`delta_host_self_pct`: 100 * delta / baseline, null when the baseline is 0).
"""
from __future__ import annotations

import math
from typing import Callable, Literal

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
    """Which table of a pair and how to filter, sort and page it: typed
    values (the server's parameters bound them once,
    server/params.py:_TableParams); hashable, a key of the pair's answers."""

    group_by: str = "name"
    path: str = ""  # the `diff/modules` piece the table is restricted to ("" = everything)
    sort: str | None = None  # default: the delta of the table's primary column
    order: Literal["desc", "asc"] = "desc"
    filter: str = ""  # case-insensitive substring of the name (or input shape), not a regex
    offset: int = 0
    limit: int = DEFAULT_LIMIT


def join(baseline: pd.DataFrame, experimental: pd.DataFrame, keys: list[str], columns: list[str],
         keep_unmeasured: bool = False) -> pd.DataFrame:
    """Outer join on `keys`; a row missing on one side counts 0 there (0
    calls, 0 µs), never dropped. Adds delta and delta % for every column.
    With `keep_unmeasured`, a value a side's row holds as NaN (that side has
    the row but did not measure it: a DataLoader part has no queue, so no
    items/s) stays NaN, and so do its delta and delta %: a 0 there would be a
    measurement nobody made."""
    b = baseline[keys + columns].rename(columns={c: f"baseline_{c}" for c in columns})
    e = experimental[keys + columns].rename(columns={c: f"experimental_{c}" for c in columns})
    merged = b.merge(e, on=keys, how="outer", sort=False, indicator=keep_unmeasured)
    out = merged[keys].copy()
    missing = {"baseline": merged["_merge"] == "right_only", "experimental": merged["_merge"] == "left_only"} \
        if keep_unmeasured else None

    def side(name: str, c: str, dtype) -> np.ndarray:
        v = merged[f"{name}_{c}"]
        return (v.fillna(0) if missing is None else v.mask(missing[name], 0)).to_numpy(dtype)

    for c in columns:
        dtype = np.int64 if c == "calls" and not keep_unmeasured else np.float64
        bv, ev = side("baseline", c, dtype), side("experimental", c, dtype)
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
    `diff/kernels` routes describe."""
    positions, out = page_positions(table, keys, columns, primary, q)
    return {**out, "rows": records(table.iloc[positions], keys)}


def check_sort(sort: str | None, keys: list[str], columns: list[str], primary: str) -> str:
    """The sort key a query means (default: the delta of the primary
    column); BadRequest on an unknown one (the only parameter whose valid
    values depend on the table)."""
    allowed = sort_keys(keys, columns)
    sort = sort or f"delta_{primary}"
    if sort not in allowed:
        raise BadRequest(f"unknown sort key {sort!r}; one of: {', '.join(allowed)}")
    return sort


def page_positions(table: pd.DataFrame, keys: list[str], columns: list[str], primary: str, q: TableQuery,
                   ordered: Callable[[str, str], np.ndarray] | None = None) -> tuple[np.ndarray, dict]:
    """The positions in `table` of the page `q` asks for, in its order, and
    the answer's fields but its rows. `ordered(sort, order)`: every row's
    position in `sort_positions`' order, when the caller keeps them
    (diff/table_view.py); the filter keeps that order."""
    sort = check_sort(q.sort, keys, columns, primary)
    positions = ordered(sort, q.order) if ordered else sort_positions(table, sort, q.order, keys)
    text = q.filter.strip()
    if text:
        positions = positions[filter_mask(table, text)[positions]]
    return positions[q.offset:q.offset + q.limit], {
        "total": int(len(positions)), "offset": q.offset, "limit": q.limit, "sort": sort, "order": q.order,
        "primary": primary, "columns": list(columns)}


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
    return table.iloc[sort_positions(table, sort, order, keys)]


def sort_positions(table: pd.DataFrame, sort: str, order: str, keys: list[str],
                   ties: list[np.ndarray] | None = None) -> np.ndarray:
    """The row positions of `table` in `sort_table`'s order; `ties`: the
    table's `key_ranks`, when kept."""
    if len(table) == 0:
        return np.zeros(0, dtype=np.int64)
    col = table[sort]
    if sort in keys:
        null = col.isna().to_numpy()
        value = _ranks(col.fillna("").astype(str).str.lower().to_numpy(object))
    else:
        value = col.to_numpy(np.float64)
        if sort.startswith("delta_") and not sort.endswith("_pct"):
            value = np.abs(value)
        null = np.isnan(value)
        value = np.where(null, 0.0, value)
    if order != "asc":
        value = -value
    ties = key_ranks(table, keys) if ties is None else ties
    # lexsort is stable and sorts by its last key first: nulls, the value, then each key in turn.
    return np.lexsort(tuple(reversed(ties)) + (value, null)).astype(np.int64)


def key_ranks(table: pd.DataFrame, keys: list[str]) -> list[np.ndarray]:
    """Each key column's rank per row, as text (what ties are broken by)."""
    return [_ranks(table[k].fillna("").astype(str).to_numpy(object)) for k in keys]


def _ranks(values: np.ndarray) -> np.ndarray:
    """Each text's rank in sorted order (equal texts, equal ranks)."""
    return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64)


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
