"""The aligned piece tree of two runs: nodes, paths, rows and trend arrays.

The root is the whole profiled window. Its children are the profiled steps,
aligned by index (the i-th step of each run). A step's children are its
pieces (see pieces.py), a module's children its submodule calls, each level
aligned with `align` on (kind, key) and ended by the level's unknown piece.

A node's `path` is the dot-joined indices of the aligned children taken from
the root ("" root, "2" third step, "2.4.1" ...). It is opaque to clients and
only valid for the same pair of traces.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import BadRequest
from . import pieces as P
from .align import align

MATCHED, BASELINE_ONLY, EXPERIMENTAL_ONLY = "matched", "baseline_only", "experimental_only"
ROOT = "root"
ROOT_NAME = "All steps"
MAX_PATH_CHARS = 1000


@dataclass(frozen=True)
class Node:
    path: str
    b: P.Piece | None
    e: P.Piece | None

    @property
    def status(self) -> str:
        if self.b is not None and self.e is not None:
            return MATCHED
        return BASELINE_ONLY if self.b is not None else EXPERIMENTAL_ONLY

    @property
    def any(self) -> P.Piece:
        return self.b if self.b is not None else self.e


def root(bi: P.PieceIndex, ei: P.PieceIndex) -> Node:
    return Node("", _window(P.steps(bi)), _window(P.steps(ei)))


def children(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> list[Node]:
    """The aligned children of `node`, in execution order."""
    if node.any.kind == ROOT:
        b_kids, e_kids = P.steps(bi), P.steps(ei)
        k = min(len(b_kids), len(e_kids))
        pairs = [(i, i) for i in range(k)]
        pairs += [(i, None) for i in range(k, len(b_kids))] + [(None, j) for j in range(k, len(e_kids))]
        return _nodes(node.path, pairs, b_kids, e_kids)
    if not has_children(bi, ei, node):
        return []
    b_kids = _split(bi, node.b)
    e_kids = _split(ei, node.e)
    # The unknown pieces close each level; they are paired with each other,
    # the rest is aligned on (kind, class / annotation family).
    b_body, e_body = b_kids[:-1], e_kids[:-1]
    pairs = align(
        [(p.kind, p.key) for p in b_body], [(p.kind, p.key) for p in e_body],
        [p.name for p in b_body], [p.name for p in e_body],
    )
    pairs.append((len(b_body) if b_kids else None, len(e_body) if e_kids else None))
    return _nodes(node.path, pairs, b_kids, e_kids)


def has_children(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> bool:
    if node.any.kind == ROOT:
        return True
    return (node.b is not None and bi.has_children(node.b)) or (node.e is not None and ei.has_children(node.e))


def resolve(bi: P.PieceIndex, ei: P.PieceIndex, path: str) -> list[Node]:
    """Nodes from the root down to `path` (BadRequest if it does not exist)."""
    if path is None:
        path = ""
    if len(path) > MAX_PATH_CHARS:
        raise BadRequest("path too long")
    chain = [root(bi, ei)]
    if path == "":
        return chain
    for part in path.split("."):
        if not part.isdigit() or not part.isascii():
            raise BadRequest(f"malformed path {path!r}: expected dot-separated child indices")
        kids = children(bi, ei, chain[-1])
        k = int(part)
        if k >= len(kids):
            raise BadRequest(f"unknown path {path!r}: no child {k} under {chain[-1].path or 'the root'!r}")
        chain.append(kids[k])
    return chain


def trend(nodes: list[Node]) -> dict[str, list[float]]:
    """Running sums over `nodes` in execution order (accumulated time), and
    the accumulated difference experimental - baseline, in µs."""
    out = {}
    for what in ("host", "device"):
        b = np.cumsum([_value(n.b, what) for n in nodes]) if nodes else np.zeros(0)
        e = np.cumsum([_value(n.e, what) for n in nodes]) if nodes else np.zeros(0)
        out[f"baseline_{what}_us"] = _rounded(b)
        out[f"experimental_{what}_us"] = _rounded(e)
        out[f"delta_{what}_us"] = _rounded(e - b)
    return out


def _value(p: P.Piece | None, what: str) -> float:
    if p is None:
        return 0.0
    return p.host_us if what == "host" else p.device_us


def _rounded(a: np.ndarray) -> list[float]:
    return np.round(a, 3).tolist()


def _split(index: P.PieceIndex, piece: P.Piece | None) -> list[P.Piece]:
    """Children of one side, always ending with its unknown piece (the whole
    piece when it has no children of its own but its counterpart has)."""
    if piece is None:
        return []
    kids = P.children(index, piece)
    return kids if kids else [P.unknown_piece(index, piece, [])]


def _nodes(parent_path: str, pairs, b_kids: list[P.Piece], e_kids: list[P.Piece]) -> list[Node]:
    prefix = f"{parent_path}." if parent_path else ""
    pairs = [(i, j) for i, j in pairs if i is not None or j is not None]
    return [
        Node(f"{prefix}{k}", b_kids[i] if i is not None else None, e_kids[j] if j is not None else None)
        for k, (i, j) in enumerate(pairs)
    ]


def _window(steps: list[P.Piece]) -> P.Piece:
    """The root piece: every profiled step together."""
    return P.Piece(
        kind=ROOT, name=ROOT_NAME, key=ROOT, step=-1,
        start_us=steps[0].start_us if steps else 0.0, end_us=steps[-1].end_us if steps else 0.0,
        host_us=float(sum(s.host_us for s in steps)), device_us=float(sum(s.device_us for s in steps)),
        calls=int(sum(s.calls for s in steps)),
    )


def row(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> dict:
    """One node as the `diff/modules` route returns it (µs, calls, deltas)."""
    b, e, p = node.b, node.e, node.any
    out = {"name": p.name, "kind": p.kind, "key": p.key}
    if p.kind != ROOT:  # the root spans every step
        out["step"] = p.step
    out.update({
        "path": node.path, "status": node.status, "has_children": has_children(bi, ei, node),
        "baseline_name": b.name if b is not None else None,
        "experimental_name": e.name if e is not None else None,
    })
    for what in ("host", "device"):
        bv, ev = _value(b, what), _value(e, what)
        out[f"baseline_{what}_us"] = round(bv, 3)
        out[f"experimental_{what}_us"] = round(ev, 3)
        out[f"delta_{what}_us"] = round(ev - bv, 3)
        out[f"delta_{what}_pct"] = round(100.0 * (ev - bv) / bv, 2) if bv else None
    bc, ec = (b.calls if b is not None else 0), (e.calls if e is not None else 0)
    out.update(baseline_calls=bc, experimental_calls=ec, delta_calls=ec - bc)
    return out


def walk(bi: P.PieceIndex, ei: P.PieceIndex, path: str = "", max_depth: int | None = None):
    """Rows of every node under `path` (itself excluded), depth first, each
    with its `depth` below `path` (1 = direct child)."""
    stack = [(node, 1) for node in reversed(children(bi, ei, resolve(bi, ei, path)[-1]))]
    while stack:
        node, depth = stack.pop()
        yield {"depth": depth, **row(bi, ei, node)}
        if max_depth is None or depth < max_depth:
            stack.extend((kid, depth + 1) for kid in reversed(children(bi, ei, node)))
