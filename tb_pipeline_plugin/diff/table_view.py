"""The operator and kernel tables of a pair, made once per grouping and
piece: joined, scaled per unit, and marked row by row as pages ask.

A `TableView` is what `diff/operators` and `diff/kernels` answer from: the
joined table (diff/tables.py) of both runs, optionally inside one
`diff/modules` piece, with each side's times per sample (token) when the
runs' work per step differs. A re-sort, a filter or another page is a
slice of it; a row's significance mark (diff/significance/marks.py) is its
own (judged against the whole table as its family), so it is kept for the
next page that shows the row.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..analysis.device_time import launch_table
from ..analysis.kernels import kernels
from ..analysis.operators import operators, primary_column
from ..analysis.pieces import Piece, PieceIndex, device_rows, op_rows
from ..analysis.run import Run
from . import tables
from . import tree as T
from .launches import LAUNCH_COLUMNS, launch_join, launch_keys, launch_samples
from .significance import marks as significance_marks
from .tables import TableQuery
from .units import table_note, table_scales

OPERATOR_KEYS = ["name", "input_shape"]
KERNEL_KEYS = ["name"]
KERNEL_PRIMARY = "total_us"
# The times a table row sums (scaled per sample when the work per step
# differs); per-call statistics (a kernel's mean, min, max) and calls are not.
OPERATOR_TIMES = ("host_self_us", "host_total_us", "device_self_us", "device_total_us")
KERNEL_TIMES = ("total_us",)
LAUNCH_TIMES = ("total_us",)


@dataclass
class TableView:
    table: pd.DataFrame  # joined, its index the rows' positions (0..n-1)
    keys: list[str]
    columns: list[str]
    primary: str
    path: str
    # Each run's per-step sums of the primary column in long form (keys, step, column).
    samples: Callable[[Run], pd.DataFrame]
    # Each side's per-step samples multiplied by (the marks), None unscaled.
    step_scales: tuple | None
    per_unit: str | None
    per_unit_note: str | None
    _marks: dict = field(default_factory=dict, repr=False)
    _rows: dict = field(default_factory=dict, repr=False)  # position -> JSON-ready row (tables.records)
    _orders: dict = field(default_factory=dict, repr=False)  # (sort, order) -> positions in that order
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def page(self, pair, q: TableQuery) -> dict:
        """The answer's table fields for `q` (tables.page_positions, on the
        view's kept orders), the page's rows each with its significance."""
        positions, out = tables.page_positions(self.table, self.keys, self.columns, self.primary, q, self._ordered)
        rows = [dict(r) for r in self._records(positions)]
        for row, mark in zip(rows, self.marks(pair, positions, rows)):
            row["significance"] = mark
        return {**out, "rows": rows}

    def _ordered(self, sort: str, order: str) -> np.ndarray:
        """Every row's position in `tables.sort_table`'s order, kept per sort and order."""
        with self._lock:
            hit = self._orders.get((sort, order))
            if hit is None:
                ties = self._orders.get("ties")
                if ties is None:
                    ties = self._orders["ties"] = tables.key_ranks(self.table, self.keys)
                hit = self._orders[(sort, order)] = tables.sort_positions(self.table, sort, order, self.keys, ties)
            return hit

    def _records(self, positions: np.ndarray) -> list[dict]:
        with self._lock:
            missing = [int(p) for p in positions if int(p) not in self._rows]
            if missing:
                for p, row in zip(missing, tables.records(self.table.iloc[missing], self.keys)):
                    self._rows[p] = row
            return [self._rows[int(p)] for p in positions]

    def marks(self, pair, positions: np.ndarray, rows: list[dict]) -> list:
        """The marks of the rows at `positions`, judging those not judged yet."""
        with self._lock:
            missing = [i for i, p in enumerate(positions) if int(p) not in self._marks]
            if missing:
                asked = [{k: rows[i][k] for k in self.keys} for i in missing]
                significance_marks.mark_rows(pair.b, pair.e, asked, self.keys, len(self.table), self.path,
                                             self.samples, self.primary, self.step_scales, pair.noise)
                for i, row in zip(missing, asked):
                    self._marks[int(positions[i])] = row["significance"]
            return [self._marks[int(p)] for p in positions]


def operator_view(pair, group_by: str, path: str) -> TableView:
    """Operators of both runs joined by name (and input shape when grouped
    so), inside the piece at `path` ("" everything)."""
    def make() -> TableView:
        per = _per_unit(pair, path)
        primary = operator_primary(pair)
        table = operator_table(pair, group_by, path, per["scales"])
        return TableView(table, OPERATOR_KEYS, tables.OPERATOR_COLUMNS, primary, path,
                         lambda tp: tp.operator_steps(group_by, primary), per["step_scales"], per["unit"],
                         per["note"])
    return pair.view(("operator_view", group_by, path), make)


def kernel_view(pair, group_by: str, path: str) -> TableView:
    """Kernels joined by name, or device time joined by what launched it
    (`group_by` "operator" or "module": diff/launches.py), inside the piece
    at `path` ("" everything)."""
    def make() -> TableView:
        per = _per_unit(pair, path)
        if group_by == "name":
            table = kernel_table(pair, path, per["scales"])
            keys, columns = KERNEL_KEYS, tables.KERNEL_COLUMNS
            samples = lambda tp: tp.kernel_steps()  # noqa: E731 - the one line each branch differs by
        else:
            compiled = frozenset(pair.compiled)
            sides = [_times_scaled(t, LAUNCH_TIMES, f) for t, f in zip(_piece_launch_tables(pair, path), per["scales"])]
            table = launch_join(*sides, group_by, compiled)
            keys, columns = launch_keys(group_by), LAUNCH_COLUMNS
            samples = lambda tp: launch_samples(tp, group_by, compiled)  # noqa: E731
        return TableView(table, keys, columns, KERNEL_PRIMARY, path, samples, per["step_scales"], per["unit"],
                         per["note"])
    return pair.view(("kernel_view", group_by, path), make)


def operator_primary(pair) -> str:
    """Device self time when either trace has device activity, else host self time."""
    return primary_column(pair.device_present)


def _per_unit(pair, path: str) -> dict:
    """How a table of the pair is scaled: `unit` (sample, token; None: each
    run's totals), `scales` (each side's table times x, (1, 1) unscaled),
    `step_scales` (each side's per-step samples x, for the marks), `note`."""
    piece = bool(path) and T.resolve(pair.b.pieces(), pair.e.pieces(), path)[-1].any.kind != T.ROOT
    scales = table_scales(pair.units, None if piece else (pair.b.step_count, pair.e.step_count))
    if scales is None:
        return {"unit": None, "scales": (1.0, 1.0), "step_scales": None, "note": None}
    return {"unit": pair.units["unit"], "scales": scales, "step_scales": table_scales(pair.units, None),
            "note": table_note(pair.units, piece)}


def _times_scaled(table, columns: tuple, factor: float):
    """`table` with its time `columns` multiplied by `factor` (a copy; itself at 1)."""
    if factor == 1.0:
        return table
    out = table.copy()
    for c in columns:
        if c in out:
            out[c] = out[c].astype(np.float64) * factor
    return out


def _piece_launch_tables(pair, path: str) -> tuple:
    """Both runs' launch tables, of the `diff/modules` piece at `path` when
    given (the device activity launched inside it)."""
    b, e = pair.runs
    if not path:
        return b.launch_table(), e.launch_table()
    bi, ei = b.pieces(), e.pieces()
    node = T.resolve(bi, ei, path)[-1]

    def inside(run: Run, index: PieceIndex, piece: Piece | None):
        launches = run.device_launches()
        if piece is None:
            launches = launches.iloc[0:0]
        elif piece.kind != T.ROOT:
            launches = launches[launches["row"].isin(device_rows(index, piece))]
        return launch_table(run.linked, launches)

    return inside(b, bi, node.b), inside(e, ei, node.e)


def operator_table(pair, group_by: str = "name", path: str = "", scales: tuple = (1.0, 1.0)) -> pd.DataFrame:
    """Operators of both runs joined by name (and input shape when grouped
    so), optionally restricted to the `diff/modules` piece at `path`; each
    side's times multiplied by its `scales` (`_per_unit`)."""
    b, e = pair.runs
    if path:
        bi, ei = b.pieces(), e.pieces()
        node = T.resolve(bi, ei, path)[-1]
        b_table = _piece_operators(b, bi, node.b, group_by)
        e_table = _piece_operators(e, ei, node.e, group_by)
    else:
        b_table, e_table = b.operators(group_by), e.operators(group_by)
    b_table, e_table = (_times_scaled(t, OPERATOR_TIMES, f) for t, f in zip((b_table, e_table), scales))
    if group_by == "name_and_shape":
        return tables.join(b_table, e_table, OPERATOR_KEYS, tables.OPERATOR_COLUMNS)
    table = tables.join(b_table, e_table, ["name"], tables.OPERATOR_COLUMNS)
    table.insert(1, "input_shape", None)
    return table


def kernel_table(pair, path: str = "", scales: tuple = (1.0, 1.0)) -> pd.DataFrame:
    """Kernels of both runs joined by name, optionally restricted to those
    launched from inside the `diff/modules` piece at `path` (the kernels its
    `device_us` counts); each side's total time multiplied by its `scales`."""
    b, e = pair.runs
    if path:
        bi, ei = b.pieces(), e.pieces()
        node = T.resolve(bi, ei, path)[-1]
        b_table, e_table = _piece_kernels(b, bi, node.b), _piece_kernels(e, ei, node.e)
    else:
        b_table, e_table = b.kernels(), e.kernels()
    b_table, e_table = (_times_scaled(t, KERNEL_TIMES, f) for t, f in zip((b_table, e_table), scales))
    return tables.join(b_table, e_table, KERNEL_KEYS, tables.KERNEL_COLUMNS)


def _piece_kernels(tp: Run, index: PieceIndex, piece: Piece | None):
    if piece is not None and piece.kind == T.ROOT:
        return tp.kernels()
    rows = device_rows(index, piece) if piece is not None else np.empty(0, dtype=np.int64)
    return kernels(tp.linked, rows=rows)


def _piece_operators(tp: Run, index: PieceIndex, piece: Piece | None, group_by: str):
    if piece is None:
        rows = np.empty(0, dtype=np.int64)
    elif piece.kind == T.ROOT:
        return tp.operators(group_by)
    else:
        rows = op_rows(index, piece)
    return operators(tp.linked, group_by, rows=rows)
