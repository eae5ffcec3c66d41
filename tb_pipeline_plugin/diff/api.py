"""The diff routes as pure functions of two loaded traces.

`plugin.py` resolves the two selections to TraceProcessors and adds the
`baseline` / `experimental` selection objects; everything else in the
responses comes from here. Bad parameters raise `BadRequest` (400).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..analysis.kernels import kernels
from ..analysis.operators import operators, primary_column
from ..trace.link import has_step_annotations
from ..run_api import parse_group_by
from ..errors import BadRequest
from ..trace_processor import TraceProcessor
from . import compare
from . import modules as M
from . import pieces as P

PIECES_MEMO_KEY = ("diff", "pieces")


def piece_index(tp: TraceProcessor) -> P.PieceIndex:
    """The trace's pieces, computed once per loaded trace."""
    return tp.memo(PIECES_MEMO_KEY, lambda: P.piece_index(tp.linked))


def diff_overview_impl(b: TraceProcessor, e: TraceProcessor) -> dict:
    b_steps, e_steps = has_step_annotations(b.linked.steps), has_step_annotations(e.linked.steps)
    if b_steps == e_steps:
        return {"rows": compare.overview_rows(b.overview(), e.overview()), "note": None}
    # Per-step averages of a 3-step trace against one whole-trace "step"
    # would show a regression that is not there: compare whole windows.
    without = "baseline" if not b_steps else "experimental"
    note = (f"The {without} trace has no ProfilerStep annotations, so both runs are compared over their "
            "whole profiled window (all steps taken as one).")
    rows = compare.overview_rows(b.overview(whole_window=True), e.overview(whole_window=True))
    return {"rows": rows, "note": note}


_HOST_WINDOW_NOTE = (
    "Steps and pieces are compared on the host: a step is its CPU-side ProfilerStep window. The Overview's "
    "step time also waits for the step's GPU work to finish, so it can be longer; use Device time for the "
    "GPU side of each piece."
)


# `diff/modules` children paging: the default returns every child of any
# ordinary level; a level of 60k pieces would be a ~50 MB answer.
MODULES_DEFAULT_LIMIT = 5000
MODULES_MAX_LIMIT = M.CACHE_MAX_NODES


def diff_modules_impl(b: TraceProcessor, e: TraceProcessor, path: str | None,
                      args: Mapping[str, str] | None = None) -> dict:
    """The node at `path` and one page of its aligned children (`offset`,
    `limit` in `args`; `children_total` counts them all). The trend arrays
    cover the returned children, as running sums over the whole level."""
    args = args or {}
    offset = compare.int_arg(args, "offset", 0, 0, None)
    limit = compare.int_arg(args, "limit", MODULES_DEFAULT_LIMIT, 0, MODULES_MAX_LIMIT)
    bi, ei = piece_index(b), piece_index(e)
    chain = M.resolve(bi, ei, path or "")
    node = chain[-1]
    kids, approximate = M.children_info(bi, ei, node)
    row = M.row(bi, ei, node)
    if node.path == "" and (b.linked.has_device or e.linked.has_device):
        row["note"] = M.join_notes(row.get("note"), _HOST_WINDOW_NOTE)
    row["approximate"] = approximate
    page = slice(offset, offset + limit)
    trend = {k: v[page] for k, v in M.trend(kids).items()}
    return {
        "path": node.path,
        "breadcrumb": [{"name": n.any.name, "path": n.path} for n in chain],
        "node": row,
        "approximate": approximate,
        "children_total": len(kids),
        "offset": offset,
        "limit": limit,
        "children": [M.row(bi, ei, k) for k in kids[page]],
        "trend": trend,
    }


def diff_operators_impl(b: TraceProcessor, e: TraceProcessor, args: Mapping[str, str]) -> dict:
    group_by = args.get("group_by") or "name"
    path = args.get("path") or ""
    table = operator_table(b, e, group_by, path)
    primary = operator_primary(b, e)
    out = compare.query(table, OPERATOR_KEYS, compare.OPERATOR_COLUMNS, primary, args)
    return {"group_by": group_by, "path": path, "device_present": primary == "device_self_us", **out}


def diff_kernels_impl(b: TraceProcessor, e: TraceProcessor, args: Mapping[str, str]) -> dict:
    if args.get("group_by"):
        raise BadRequest("group_by applies to diff/operators only: kernels are always grouped by name")
    path = args.get("path") or ""
    table = kernel_table(b, e, path)
    return {"path": path, **compare.query(table, KERNEL_KEYS, compare.KERNEL_COLUMNS, KERNEL_PRIMARY, args)}


OPERATOR_KEYS = ["name", "input_shape"]
KERNEL_KEYS = ["name"]
KERNEL_PRIMARY = "total_us"


def operator_primary(b: TraceProcessor, e: TraceProcessor) -> str:
    """Device self time when either trace has device activity, else host self time."""
    return primary_column(b.linked.has_device or e.linked.has_device)


def operator_table(b: TraceProcessor, e: TraceProcessor, group_by: str = "name", path: str = ""):
    """Operators of both runs joined by name (and input shape when grouped
    so), optionally restricted to the `diff/modules` piece at `path`."""
    group_by = parse_group_by(group_by)
    if path:
        bi, ei = piece_index(b), piece_index(e)
        node = M.resolve(bi, ei, path)[-1]
        b_table = _piece_operators(b, bi, node.b, group_by)
        e_table = _piece_operators(e, ei, node.e, group_by)
    else:
        b_table, e_table = b.operators(group_by), e.operators(group_by)
    if group_by == "name_and_shape":
        return compare.join(b_table, e_table, OPERATOR_KEYS, compare.OPERATOR_COLUMNS)
    table = compare.join(b_table, e_table, ["name"], compare.OPERATOR_COLUMNS)
    table.insert(1, "input_shape", None)
    return table


def kernel_table(b: TraceProcessor, e: TraceProcessor, path: str = ""):
    """Kernels of both runs joined by name, optionally restricted to those
    launched from inside the `diff/modules` piece at `path` (the kernels its
    `device_us` counts)."""
    if path:
        bi, ei = piece_index(b), piece_index(e)
        node = M.resolve(bi, ei, path)[-1]
        b_table, e_table = _piece_kernels(b, bi, node.b), _piece_kernels(e, ei, node.e)
    else:
        b_table, e_table = b.kernels(), e.kernels()
    return compare.join(b_table, e_table, KERNEL_KEYS, compare.KERNEL_COLUMNS)


def _piece_kernels(tp: TraceProcessor, index: P.PieceIndex, piece: P.Piece | None):
    if piece is not None and piece.kind == M.ROOT:
        return tp.kernels()
    rows = P.device_rows(index, piece) if piece is not None else np.empty(0, dtype=np.int64)
    return kernels(tp.linked, rows=rows)


def _piece_operators(tp: TraceProcessor, index: P.PieceIndex, piece: P.Piece | None, group_by: str):
    if piece is None:
        rows = np.empty(0, dtype=np.int64)
    elif piece.kind == M.ROOT:
        return tp.operators(group_by)
    else:
        rows = P.op_rows(index, piece)
    return operators(tp.linked, group_by, rows=rows)
