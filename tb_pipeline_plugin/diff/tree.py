"""The aligned piece tree of two runs: nodes, paths, rows and trend arrays.

The root is the whole profiled window. Its children are the profiled steps,
aligned by index (the i-th step of each run). A step's children are its
pieces (see analysis/pieces.py), a module's children its submodule calls, each level
aligned with `align` on (kind, key) and ended by the level's unknown piece.

When exactly one run has no `ProfilerStep#N` annotations (its one step is
the whole trace, `all`), the other run's steps are merged into one `all`
step too (`pieces.whole_window`), so whole windows are compared, never the
whole trace with the first step; the root and that step carry a `note`.

A node's `path` is the dot-joined indices of the aligned children taken from
the root ("" root, "2" third step, "2.4.1" ...). It is opaque to clients and
only valid for the same pair of traces.

Aligned children are memoised per (baseline index, experimental index,
path), in an LRU kept for the pair of indexes (diff/pair.py:shared, weak
on both): zooming deeper, or asking for a piece's operators, does not
align every level above it again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import BadRequest
from ..analysis import pieces as P
from ..bounded_cache import BoundedCache
from .align import align_info
from . import compiled_region as R
from .delta import delta_fields
from .pair import shared

MATCHED, BASELINE_ONLY, EXPERIMENTAL_ONLY = "matched", "baseline_only", "experimental_only"
# A piece one run has inside a module the other run ran compiled: its work is
# in that module's time there, not missing (analysis/compiled.py).
INSIDE_COMPILED = "inside_compiled"
ROOT = "root"
ROOT_NAME = "All steps"
MAX_PATH_CHARS = 1000
# Per pair of traces: at most this many memoised levels / child nodes.
CACHE_MAX_LEVELS = 512
CACHE_MAX_NODES = 200_000
# `diff/modules` children paging: the default returns every child of any
# ordinary level; a level of 60k pieces would be a ~50 MB answer.
MODULES_DEFAULT_LIMIT = 5000
MODULES_MAX_LIMIT = CACHE_MAX_NODES


@dataclass(frozen=True)
class Node:
    path: str
    b: P.Piece | None
    e: P.Piece | None
    note: str | None = None
    # The run that ran a module around this piece compiled, when the piece is one-sided below it.
    inside_compiled: str | None = None
    # A compiled region (diff/compiled_region.py): each side's pieces it compares as one, and the module.
    region: tuple | None = None
    region_module: str | None = None

    @property
    def status(self) -> str:
        if self.b is not None and self.e is not None:
            return MATCHED
        if self.inside_compiled is not None:
            return INSIDE_COMPILED
        return BASELINE_ONLY if self.b is not None else EXPERIMENTAL_ONLY

    @property
    def any(self) -> P.Piece:
        return self.b if self.b is not None else self.e


def root(bi: P.PieceIndex, ei: P.PieceIndex) -> Node:
    b_steps, e_steps, note = _steps(bi, ei)
    if len(b_steps) != len(e_steps):
        note = join_notes(note, step_count_note(len(b_steps), len(e_steps)))
    return Node("", _window(b_steps), _window(e_steps), note)


def step_count_note(nb: int, ne: int) -> str:
    def steps(k: int) -> str:
        return f"{k} step{'s' if k != 1 else ''}"
    return (f"The baseline run profiled {steps(nb)} and the experimental run {steps(ne)}: these totals sum every "
            f"step of each run, so they differ by the step count as well. Compare step by step below (a step "
            f"without a counterpart is listed as baseline or experimental only).")


def join_notes(*notes: str | None) -> str | None:
    """The notes that are set, as one text (sentences joined by a space)."""
    kept = [n.strip() for n in notes if n]
    return " ".join(kept) if kept else None


def _steps(bi: P.PieceIndex, ei: P.PieceIndex) -> tuple[list[P.Piece], list[P.Piece], str | None]:
    """Each side's steps, and a note when one side's were merged into one
    `all` window because the other side has no steps."""
    if bi.has_steps == ei.has_steps:
        return P.steps(bi), P.steps(ei), None
    with_steps, without = ("baseline", "experimental") if bi.has_steps else ("experimental", "baseline")
    n = len(bi.step_atoms if bi.has_steps else ei.step_atoms)
    note = (f"The {without} trace has no ProfilerStep annotations, so its one step, `all`, is the whole trace. "
            f"The {with_steps} trace's {n} step{'s' if n != 1 else ''} are compared with it as one `all` step, "
            f"from the first step's start to the last step's end; pieces are aligned over that whole window.")
    if bi.has_steps:
        return [P.whole_window(bi)], P.steps(ei), note
    return P.steps(bi), [P.whole_window(ei)], note


def children(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> list[Node]:
    """The aligned children of `node`, in execution order (memoised)."""
    return children_info(bi, ei, node)[0]


def children_info(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> tuple[list[Node], bool]:
    """`children`, and whether their alignment is approximate (see align.py:
    a fallback was used because the level is too large for the exact one)."""
    hit = _levels(bi, ei).get_or_make(node.path, lambda: _Level(*_children(bi, ei, node)))
    return list(hit.kids), hit.approximate


@dataclass(frozen=True)
class _Level:
    kids: tuple
    approximate: bool

    def __len__(self) -> int:
        return len(self.kids)


def cache_info(bi: P.PieceIndex, ei: P.PieceIndex) -> dict:
    """hits, misses, levels and nodes of the pair's memo of aligned children."""
    cache = _levels(bi, ei)
    return {"hits": cache.hits, "misses": cache.misses, "levels": len(cache), "nodes": cache.weight}


def _levels(bi: P.PieceIndex, ei: P.PieceIndex) -> BoundedCache:
    """The pair's aligned levels by path, bounded in levels and in nodes."""
    return shared(bi, ei, "levels", lambda: BoundedCache(CACHE_MAX_LEVELS, max_weight=CACHE_MAX_NODES, weigh=len))


def _children(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> tuple[tuple[Node, ...], bool]:
    if node.any.kind == ROOT:
        b_kids, e_kids, note = _steps(bi, ei)
        k = min(len(b_kids), len(e_kids))
        pairs = [(i, i) for i in range(k)]
        pairs += [(i, None) for i in range(k, len(b_kids))] + [(None, j) for j in range(k, len(e_kids))]
        kids = _nodes(node.path, pairs, b_kids, e_kids)
        if note is not None:
            kids[0] = Node(kids[0].path, kids[0].b, kids[0].e, note, kids[0].inside_compiled)
        return tuple(kids), False
    if node.region is not None:
        return _region_children(node), False
    if not has_children(bi, ei, node):
        return (), False
    b_kids = _split(bi, node.b)
    e_kids = _split(ei, node.e)
    # The unknown pieces close each level; they are paired with each other,
    # the rest is aligned on (kind, class / annotation family).
    b_body, e_body = b_kids[:-1], e_kids[:-1]
    side = compiled_side(bi, ei, node)
    parts = R.region_parts(b_body, e_body, side) if node.inside_compiled is None else None
    if parts is not None:
        # The compiled graph against the eager pieces it replaced, as one piece (diff/compiled_region.py).
        prefix = f"{node.path}." if node.path else ""
        b_region, e_region = R.region_pieces(node.any.name, parts, side)
        region = Node(f"{prefix}0", b_region, e_region, R.region_note(node.any.name, parts, side),
                      region=(parts[0], parts[1], side), region_module=node.any.name)
        rest = Node(f"{prefix}1", b_kids[-1] if b_kids else None, e_kids[-1] if e_kids else None,
                    inside_compiled=side)
        return (region, rest), False
    pairs, approximate = align_info(
        [(p.kind, p.key) for p in b_body], [(p.kind, p.key) for p in e_body],
        [p.name for p in b_body], [p.name for p in e_body],
    )
    pairs.append((len(b_body) if b_kids else None, len(e_body) if e_kids else None))
    around = node.inside_compiled or compiled_side(bi, ei, node)
    return tuple(_nodes(node.path, pairs, b_kids, e_kids, around)), approximate


def _region_children(node: Node) -> tuple[Node, ...]:
    """A compiled region's children: each side's own pieces, one-sided, the baseline's first."""
    b_parts, e_parts, side = node.region
    pairs = [(i, None) for i in range(len(b_parts))] + [(None, j) for j in range(len(e_parts))]
    kids = _nodes(node.path, pairs, list(b_parts), list(e_parts), side)
    return tuple(Node(k.path, k.b, k.e, k.note, k.inside_compiled, region_module=node.region_module) for k in kids)


def compiled_side(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> str | None:
    """Which run ran this module piece compiled: "baseline", "experimental", "both", or None."""
    b = node.b is not None and bi.is_compiled(node.b)
    e = node.e is not None and ei.is_compiled(node.e)
    return "both" if b and e else "baseline" if b else "experimental" if e else None


def has_children(bi: P.PieceIndex, ei: P.PieceIndex, node: Node) -> bool:
    if node.any.kind == ROOT or node.region is not None:
        return True
    return (node.b is not None and bi.has_children(node.b)) or (node.e is not None and ei.has_children(node.e))


def recordings_note(b, e) -> str | None:
    """Which recording's steps a group's pieces and timeline are (its
    representative's: one structure per recording, analysis/group.py), so
    "ProfilerStep#6" is not read as the group's; None when neither run is a
    group."""
    shown = [(side, run) for side, run in (("baseline", b), ("experimental", e)) if run.shown_recording]
    if not shown:
        return None
    parts = [f"the {side}'s are {run.shown_recording}'s, the recording of its {run.recordings} with the median "
             "step time" for side, run in shown]
    return (f"These pieces and steps are one recording's: {'; '.join(parts)}. The Overview, the explanation and "
            "the Operators and Kernels tables pool every recording.")


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


def _nodes(parent_path: str, pairs, b_kids: list[P.Piece], e_kids: list[P.Piece],
           inside_compiled: str | None = None) -> list[Node]:
    prefix = f"{parent_path}." if parent_path else ""
    pairs = [(i, j) for i, j in pairs if i is not None or j is not None]
    return [
        Node(f"{prefix}{k}", b_kids[i] if i is not None else None, e_kids[j] if j is not None else None,
             inside_compiled=inside_compiled)
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
    # The aligned step is the path's first index; the root spans every step.
    step = None if p.kind == ROOT else int(node.path.split(".", 1)[0])
    out = {"name": p.name, "kind": p.kind, "key": p.key, "step": step}
    out.update({
        "path": node.path, "status": node.status, "has_children": has_children(bi, ei, node),
        "compiled": compiled_side(bi, ei, node),
        "baseline_name": b.name if b is not None else None,
        "experimental_name": e.name if e is not None else None,
        "note": node.note,
    })
    if node.region_module is not None and (node.region is not None or R.is_graph(p)):
        # The graph named by its module; its own name (the hash) stays in baseline_name / experimental_name.
        out["name"] = display_name(node)
        if node.region is not None:
            out.update(kind=R.REGION, key=R.REGION, compiled=node.region[2])
    for what in ("host", "device"):
        out.update(delta_fields(f"{what}_us", _value(b, what), _value(e, what)))
    bc, ec = (b.calls if b is not None else 0), (e.calls if e is not None else 0)
    out.update(baseline_calls=bc, experimental_calls=ec, delta_calls=ec - bc)
    return out


def display_name(node: Node) -> str:
    """A node's name as the module diff shows it: a compiled region and its graph calls by their module."""
    if node.region_module is not None and (node.region is not None or R.is_graph(node.any)):
        return f"{node.region_module} (compiled graph)"
    return node.any.name


def walk(bi: P.PieceIndex, ei: P.PieceIndex, path: str = "", max_depth: int | None = None):
    """Rows of every node under `path` (itself excluded), depth first, each
    with its `depth` below `path` (1 = direct child)."""
    stack = [(node, 1) for node in reversed(children(bi, ei, resolve(bi, ei, path)[-1]))]
    while stack:
        node, depth = stack.pop()
        yield {"depth": depth, **row(bi, ei, node)}
        if max_depth is None or depth < max_depth:
            # Not memoised: a walk visits every node once and would only evict
            # the levels a user is zooming through.
            stack.extend((kid, depth + 1) for kid in reversed(_children(bi, ei, node)[0]))
