"""A module piece's backward in the module diff: the backward operators its
forward created, and its cost with them (`*_with_backward_us`), for a
level's node and children (analysis/backward_index.py finds them).
"""
from __future__ import annotations

import numpy as np

from ..analysis.labels import BACKWARD, MODULE
from ..analysis.run import Run
from . import tree as T
from .delta import delta_fields


def with_backward(b: Run, e: Run, node: T.Node, kids: list[T.Node]):
    """Each piece's backward time and its host time with backward moved to
    the modules, for the node and every child of the level (the trend runs
    over all of them): ((b_bwd, e_bwd, b_with, e_with) of the node, the same
    per child, the trend of the `with_backward` times).

    A module's backward is the backward operators whose forward operator ran
    inside the call (its submodules' included), so a module's cost is its
    forward plus its backward; the level's `backward` piece keeps what no
    sibling module claims, "backward (unattributed)", so the pieces of a step
    still add up to the step. Backward is null on other pieces."""
    bix, eix = b.backward_index(), e.backward_index()

    def bwd(n: T.Node) -> tuple[float | None, float | None]:
        if n.any.kind != MODULE:
            return None, None
        return (bix.within(n.b.intervals) if n.b is not None else 0.0,
                eix.within(n.e.intervals) if n.e is not None else 0.0)

    def host(p) -> float:
        return p.host_us if p is not None else 0.0

    kid_bwd = [bwd(k) for k in kids]
    claimed_b = sum(v[0] for v in kid_bwd if v[0] is not None)
    claimed_e = sum(v[1] for v in kid_bwd if v[1] is not None)
    fields = []
    for k, (bv, ev) in zip(kids, kid_bwd):
        bh, eh = host(k.b), host(k.e)
        if bv is not None:
            bw, ew = bh + bv, eh + ev
        elif k.any.kind == BACKWARD:
            # Clipped at 0: a sibling's backward ran outside this piece (another thread's window).
            bw, ew = (max(bh - claimed_b, 0.0) if k.b is not None else 0.0,
                      max(eh - claimed_e, 0.0) if k.e is not None else 0.0)
        else:
            bw, ew = bh, eh
        fields.append((bv, ev, bw, ew))
    nb, ne = bwd(node)
    node_fields = (nb, ne, host(node.b) + (nb or 0.0), host(node.e) + (ne or 0.0))
    bs = np.cumsum([f[2] for f in fields]) if fields else np.zeros(0)
    es = np.cumsum([f[3] for f in fields]) if fields else np.zeros(0)
    trend = {"baseline_with_backward_us": np.round(bs, 3).tolist(),
             "experimental_with_backward_us": np.round(es, 3).tolist(),
             "delta_with_backward_us": np.round(es - bs, 3).tolist()}
    return node_fields, fields, trend


def add_backward(row: dict, bv: float | None, ev: float | None, bw: float, ew: float) -> None:
    """`*_backward_us` (null on pieces other than modules) and `*_with_backward_us` of one row."""
    if bv is None:
        row.update(baseline_backward_us=None, experimental_backward_us=None, delta_backward_us=None)
    else:
        row.update(baseline_backward_us=round(bv, 3), experimental_backward_us=round(ev, 3),
                   delta_backward_us=round(ev - bv, 3))
    row.update(delta_fields("with_backward_us", bw, ew))
