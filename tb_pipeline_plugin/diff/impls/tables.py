"""`diff/operators` and `diff/kernels`: a page of the pair's delta tables.

Each answer is a slice of the pair's table view (diff/table_view.py): a
re-sort, a filter or another page joins nothing and judges only the rows
no page has shown yet.
"""
from __future__ import annotations

from ... import contract as C
from ...analysis.kernel_names import short_names
from ..table_view import kernel_view, operator_view
from ..tables import TableQuery
from . import UNNAMED, named

_KERNEL_FIELDS = frozenset(C.DiffKernelRow.__struct_fields__)


def diff_operators_impl(pair, q: TableQuery = TableQuery(), refs: dict | None = None) -> C.DiffOperatorsResponse:
    """Operators joined by name (and input shape); times per sample (token)
    when the runs' work per step differs."""
    return named(pair.view(("diff/operators", q), lambda: _operators(pair, q)), refs)


def _operators(pair, q: TableQuery) -> C.DiffOperatorsResponse:
    view = operator_view(pair, q.group_by, q.path)
    page = view.page(pair, q)
    rows = [C.DiffOperatorRow(**{**r, "significance": C.significance_of(r["significance"])}) for r in page.pop("rows")]
    return C.DiffOperatorsResponse(
        baseline=UNNAMED, experimental=UNNAMED, table="operators", group_by=q.group_by, path=q.path,
        device_present=pair.device_present, **page, rows=rows, per_unit=view.per_unit,
        per_unit_note=view.per_unit_note)


def kernel_short_names(pair) -> dict[str, str]:
    """Full kernel name -> display name over both runs' kernels (analysis/kernel_names.py), once per pair."""
    def make() -> dict[str, str]:
        b, e = pair.runs
        return short_names([*b.kernels()["name"].astype(str), *e.kernels()["name"].astype(str)])
    return pair.view("kernel_short_names", make)


def diff_kernels_impl(pair, q: TableQuery = TableQuery(), refs: dict | None = None) -> C.DiffKernelsResponse:
    """Kernels joined by name, or device time joined by what launched it
    (`group_by` "operator" or "module": diff/launches.py); times per sample
    (token) when the runs' work per step differs."""
    return named(pair.view(("diff/kernels", q), lambda: _kernels(pair, q)), refs)


def _kernels(pair, q: TableQuery) -> C.DiffKernelsResponse:
    view = kernel_view(pair, q.group_by, q.path)
    page = view.page(pair, q)
    by_name = q.group_by == "name"
    shorts = kernel_short_names(pair) if by_name else {}
    rows = []
    for r in page.pop("rows"):
        # Each grouping's table has its own columns only: the other grouping's fields are null.
        fields = dict.fromkeys(_KERNEL_FIELDS - r.keys())
        fields.update(r, significance=C.significance_of(r["significance"]),
                      short_name=shorts.get(r["name"], r["name"]) if by_name else None)
        for side in ("baseline_kernels", "experimental_kernels"):
            if fields[side] is not None:
                fields[side] = [C.KernelShare(**k) for k in fields[side]]
        rows.append(C.DiffKernelRow(**fields))
    return C.DiffKernelsResponse(
        baseline=UNNAMED, experimental=UNNAMED, table="kernels", group_by=q.group_by, path=q.path,
        device_present=pair.device_present, **page, rows=rows, per_unit=view.per_unit,
        per_unit_note=view.per_unit_note)
