"""`diff/modules`: one node of the aligned piece tree and a page of its children."""
from __future__ import annotations

import msgspec
import numpy as np

from ... import contract as C
from ...analysis.labels import MODULE
from ..significance import marks as significance_marks
from .. import compiled_region
from .. import tree as T
from ..backward import add_backward, with_backward
from ..units import pieces_note
from . import UNNAMED, named

_HOST_WINDOW_NOTE = (
    "Steps and pieces are compared on the host: a step is its CPU-side ProfilerStep window. The Overview's "
    "step time also waits for the step's GPU work to finish, so it can be longer; use Device time for the "
    "GPU side of each piece."
)


class ModulesQuery(msgspec.Struct, frozen=True, kw_only=True):
    """The node (an opaque path from an earlier answer; "" the root) and the
    page of its children; bounded by the server's parameters
    (server/params.py:DiffModulesParams)."""

    path: str = ""
    offset: int = 0
    limit: int = T.MODULES_DEFAULT_LIMIT


def diff_modules_impl(pair, q: ModulesQuery = ModulesQuery(), refs: dict | None = None) -> C.DiffModulesResponse:
    """The node at `q.path` and one page of its aligned children
    (`children_total` counts them all). The trend arrays cover the returned
    children, as running sums over the whole level. The pieces are each
    run's own steps' pieces, whatever work a step holds: `per_unit_note`
    says so when the runs' work per step differs."""
    return named(pair.view(("diff/modules", q), lambda: _modules(pair, q)), refs)


def _modules(pair, q: ModulesQuery) -> C.DiffModulesResponse:
    b, e = pair.runs
    bi, ei = b.pieces(), e.pieces()
    chain = T.resolve(bi, ei, q.path or "")
    node = chain[-1]
    kids, approximate = T.children_info(bi, ei, node)
    row = T.row(bi, ei, node)
    if node.path == "" and pair.device_present:
        row["note"] = T.join_notes(row.get("note"), _HOST_WINDOW_NOTE)
    row["approximate"] = approximate
    page = slice(q.offset, q.offset + q.limit)
    trend = {k: v[page] for k, v in T.trend(kids).items()}
    children = [T.row(bi, ei, k) for k in kids[page]]
    node_fields, kid_fields, backward_trend = with_backward(b, e, node, kids)
    add_backward(row, *node_fields)
    for child, fields in zip(children, kid_fields[page]):
        add_backward(child, *fields)
    trend.update({k: v[page] for k, v in backward_trend.items()})
    for child, kid in zip(children, kids[page]):
        if kid.region is not None:
            child["compiled_region"] = compiled_region.region_fields(
                b, e, bi, ei, kid.region_module, kid.region[:2], kid.region[2])
    level = [node] + list(kids)
    significance_marks.mark_pieces(b, e, chain, [(row, node)] + list(zip(children, kids[page])),
                                   family=sum(1 for n in level if n.any.kind == MODULE), noise=pair.noise)
    return C.DiffModulesResponse(
        baseline=UNNAMED, experimental=UNNAMED,
        path=node.path,
        breadcrumb=[C.Crumb(name=T.display_name(n), path=n.path) for n in chain],
        node=piece(row),
        approximate=approximate,
        children_total=len(kids),
        offset=q.offset,
        limit=q.limit,
        children=[piece(c) for c in children],
        trend=C.DiffTrend(**{k: np.asarray(v).tolist() for k, v in trend.items()}),
        device_present=pair.device_present,
        device_bound=pair.basis.device_bound,
        per_unit_note=pieces_note(pair.units),
        baseline_recording=b.shown_recording,
        experimental_recording=e.shown_recording,
        recordings_note=T.recordings_note(b, e),
    )


_MARKS = ("significance", "forward_significance", "backward_significance")


def piece(row: dict) -> C.DiffPiece:
    """A row of the piece tree (diff/tree.py:row, with its marks) as its
    Struct; a field the row has not (`approximate` on a child,
    `compiled_region` off a region) stays UNSET, absent from the answer."""
    fields = dict(row)
    for k in _MARKS:
        if fields.get(k) is not None:
            fields[k] = C.Significance(**fields[k])
    region = fields.get("compiled_region")
    if region is not None:
        fields["compiled_region"] = C.CompiledRegion(
            **{**region, "kernel_families": [C.KernelFamily(**f) for f in region["kernel_families"]]})
    return C.DiffPiece(**fields)
