"""`diff/operators` and `diff/kernels`: a page of the pair's delta tables.

Each answer is a slice of the pair's table view (diff/table_view.py): a
re-sort, a filter or another page joins nothing and judges only the rows
no page has shown yet.
"""
from __future__ import annotations

from ...analysis.kernel_names import short_names
from ..table_view import kernel_view, operator_view
from ..tables import TableQuery

# What a kernel row has only grouped by name, or only grouped by launch: null in the other grouping.
_KERNEL_ROW_FIELDS = ("module", "baseline_kernels", "experimental_kernels") + tuple(
    f"{p}_{c}" for c in ("mean_us", "min_us", "max_us") for p in ("baseline", "experimental", "delta")) + (
    "delta_mean_pct", "delta_min_pct", "delta_max_pct")


def diff_operators_impl(pair, q: TableQuery = TableQuery()) -> dict:
    """Operators joined by name (and input shape); times per sample (token)
    when the runs' work per step differs."""
    return pair.view(("diff/operators", q), lambda: _operators(pair, q))


def _operators(pair, q: TableQuery) -> dict:
    view = operator_view(pair, q.group_by, q.path)
    return {"table": "operators", "group_by": q.group_by, "path": q.path, "device_present": pair.device_present,
            **view.page(pair, q), "per_unit": view.per_unit, "per_unit_note": view.per_unit_note}


def kernel_short_names(pair) -> dict[str, str]:
    """Full kernel name -> display name over both runs' kernels (analysis/kernel_names.py), once per pair."""
    def make() -> dict[str, str]:
        b, e = pair.runs
        return short_names([*b.kernels()["name"].astype(str), *e.kernels()["name"].astype(str)])
    return pair.view("kernel_short_names", make)


def diff_kernels_impl(pair, q: TableQuery = TableQuery()) -> dict:
    """Kernels joined by name, or device time joined by what launched it
    (`group_by` "operator" or "module": diff/launches.py); times per sample
    (token) when the runs' work per step differs."""
    return pair.view(("diff/kernels", q), lambda: _kernels(pair, q))


def _kernels(pair, q: TableQuery) -> dict:
    view = kernel_view(pair, q.group_by, q.path)
    out = view.page(pair, q)
    shorts = kernel_short_names(pair) if q.group_by == "name" else {}
    for row in out["rows"]:
        for field in _KERNEL_ROW_FIELDS:
            row.setdefault(field, None)
        row["short_name"] = shorts.get(row["name"], row["name"]) if q.group_by == "name" else None
    return {"table": "kernels", "group_by": q.group_by, "path": q.path, "device_present": pair.device_present,
            **out, "per_unit": view.per_unit, "per_unit_note": view.per_unit_note}
