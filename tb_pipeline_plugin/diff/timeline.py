"""Two runs' timelines of one aligned piece, their events matched.

Matching follows the alignment the module diff shows (diff/tree.py): below
the piece, aligned child pieces are matched with each other (their own
events: a module call, an annotation, a step), down to pieces that do not
split further; inside such a matched leaf piece the operators of both runs
(every nesting level, in start order, the rows its `calls` count) are
aligned by name (diff/align.py); a matched event's kernels, memcpys and
memsets (the device activity charged to it, `LinkedTrace.owner`) are matched
in launch order by name. Nothing inside a piece only one run has is matched,
and no event is matched across two pieces the alignment did not pair.

Each match has an id both sides' events carry, and the delta of its
duration (experimental - baseline, µs). The matches of a piece are memoised
per pair of runs (a few paths each): zooming or panning inside a piece asks
for windows of the same piece again.
"""
from __future__ import annotations

from dataclasses import dataclass

import msgspec
import numpy as np

from .. import contract as C
from ..analysis import pieces as P
from ..bounded_cache import BoundedCache
from ..analysis.timeline import KINDS, depths, first_named, lanes, level_of_detail, window_rows
from . import tree as T
from .align import align
from .pair import shared

DEFAULT_WIDTH_PX = 2000
MAX_WIDTH_PX = 20_000
# Per side: ~45 bytes of JSON each, so both sides stay under 1 MB.
DEFAULT_MAX_EVENTS = 10_000
MAX_EVENTS = 1_000_000
_CACHE_PATHS = 16


class TimelineQuery(msgspec.Struct, frozen=True, kw_only=True):
    """Which piece and window of the pair's timelines (`timeline_diff`'s
    arguments); bounded by the server's parameters
    (server/params.py:DiffTimelineParams)."""

    path: str = ""
    from_us: float | None = None
    to_us: float | None = None
    width_px: int = DEFAULT_WIDTH_PX
    max_events: int = DEFAULT_MAX_EVENTS
    find: str = ""


@dataclass(frozen=True)
class Matches:
    """Matched (baseline row, experimental row) pairs; id = position."""

    b_rows: np.ndarray
    e_rows: np.ndarray
    delta_us: np.ndarray  # experimental - baseline duration
    # Each side's rows sorted once: a piece's matches are looked up for every window.
    b_order: np.ndarray
    e_order: np.ndarray

    @classmethod
    def of(cls, b_rows: np.ndarray, e_rows: np.ndarray, delta_us: np.ndarray) -> "Matches":
        return cls(b_rows, e_rows, delta_us, np.argsort(b_rows, kind="stable"), np.argsort(e_rows, kind="stable"))

    def lookup(self, side: str, rows: np.ndarray) -> np.ndarray:
        """Match id of each row (-1 when unmatched)."""
        mine, order = (self.b_rows, self.b_order) if side == "baseline" else (self.e_rows, self.e_order)
        if len(mine) == 0:
            return np.full(len(rows), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(mine[order], rows), len(mine) - 1)
        return np.where(mine[order][pos] == rows, order[pos], -1)


def piece_matches(b, e, bi: P.PieceIndex, ei: P.PieceIndex, chain: list[T.Node]) -> Matches:
    """The matches inside the last node of `chain` (and the chain's own
    pieces' events: a piece's step and parent modules), memoised for the
    last few pieces of the pair."""
    cache = shared(bi, ei, "timeline_matches", lambda: BoundedCache(_CACHE_PATHS))
    return cache.get_or_make(chain[-1].path, lambda: _matches(b.linked, e.linked, bi, ei, chain))


def _matches(bl, el, bi: P.PieceIndex, ei: P.PieceIndex, chain: list[T.Node]) -> Matches:
    hb: list[np.ndarray] = []
    he: list[np.ndarray] = []

    def own(n: T.Node) -> None:
        if n.b is not None and n.e is not None and n.b.row >= 0 and n.e.row >= 0:
            hb.append(np.array([n.b.row])), he.append(np.array([n.e.row]))

    for n in chain[:-1]:
        own(n)
    stack = [chain[-1]]
    while stack:
        n = stack.pop()
        if n.b is None or n.e is None:
            continue
        own(n)
        # A compiled region's sides have no pieces in common: its operators are matched as a leaf's.
        if T.has_children(bi, ei, n) and n.region is None:
            stack.extend(T.children(bi, ei, n))
        else:
            i, j = _align_ops(bl, el, P.op_rows(bi, n.b), P.op_rows(ei, n.e))
            hb.append(i), he.append(j)
    host_b = np.concatenate(hb) if hb else np.zeros(0, np.int64)
    host_e = np.concatenate(he) if he else np.zeros(0, np.int64)
    db, de = _device_pairs(bl, el, host_b, host_e)
    b_rows, e_rows = np.concatenate((host_b, db)).astype(np.int64), np.concatenate((host_e, de)).astype(np.int64)
    delta = el.table.dur_us[e_rows] - bl.table.dur_us[b_rows]
    return Matches.of(b_rows, e_rows, delta)


def _names(linked, rows: np.ndarray) -> list:
    return linked.table.names(linked.table.name_id[rows]).tolist()


def _align_ops(bl, el, b_ops: np.ndarray, e_ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(b_ops) == 0 or len(e_ops) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = [(i, j) for i, j in align(_names(bl, b_ops), _names(el, e_ops)) if i is not None and j is not None]
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    i, j = np.array(pairs, dtype=np.int64).T
    return b_ops[i], e_ops[j]


def _by_owner(linked) -> tuple[np.ndarray, np.ndarray]:
    """Device rows charged to a host event, sorted by (owner, start), and their owners."""
    owner = linked.owner
    dev = np.flatnonzero(owner >= 0)
    order = np.lexsort((linked.table.ts_us[dev], owner[dev]))
    return dev[order], owner[dev][order]


def _device_pairs(bl, el, host_b: np.ndarray, host_e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Device activity of matched host events, matched in launch order by
    name: position by position where both launched as many, else aligned."""
    (bd, bo), (ed, eo) = _by_owner(bl), _by_owner(el)
    blo, bhi = np.searchsorted(bo, host_b, "left"), np.searchsorted(bo, host_b, "right")
    elo, ehi = np.searchsorted(eo, host_e, "left"), np.searchsorted(eo, host_e, "right")
    nb, ne = bhi - blo, ehi - elo
    same = (nb > 0) & (nb == ne)
    width = nb[same]
    offset = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    pb = bd[np.repeat(blo[same], width) + offset]
    pe = ed[np.repeat(elo[same], width) + offset]
    named = np.asarray(_names(bl, pb), dtype=object) == np.asarray(_names(el, pe), dtype=object)
    out_b, out_e = [pb[named]], [pe[named]]
    for k in np.flatnonzero((nb > 0) & (ne > 0) & (nb != ne)).tolist():
        i, j = _align_ops(bl, el, bd[blo[k]:bhi[k]], ed[elo[k]:ehi[k]])
        out_b.append(i), out_e.append(j)
    return np.concatenate(out_b), np.concatenate(out_e)


# ---------------------------------------------------------------- the answer


def timeline_diff(b, e, path: str = "", from_us: float | None = None, to_us: float | None = None,
                  width_px: int = DEFAULT_WIDTH_PX, max_events: int = DEFAULT_MAX_EVENTS, find: str = "",
                  devices_first: bool = False) -> dict:
    """The fields of the `diff/timeline` answer (contract DiffTimelineResponse)
    but the runs' references, `device_bound` and the recordings: both runs'
    events of the piece at `path` (optionally the window
    [from_us, to_us) after each side's piece start), matched, each side cut
    to what `width_px` pixels draw (0: every event); the first event named
    `find` in the window is drawn whatever its length. The bounds of the
    arguments are the parameters' (server/params.py:DiffTimelineParams)."""
    bi, ei = b.pieces(), e.pieces()
    chain = T.resolve(bi, ei, path)
    node = chain[-1]
    matches = piece_matches(b, e, bi, ei, chain)
    sides = {}
    for side, tp, index, piece in (("baseline", b, bi, node.b), ("experimental", e, ei, node.e)):
        sides[side] = None if piece is None else _side(
            side, tp, index, piece, matches, from_us, to_us, width_px, max_events, find, devices_first)
    return {
        "path": node.path,
        "name": node.any.name,
        "kind": node.any.kind,
        "status": node.status,
        "breadcrumb": [C.Crumb(name=n.any.name, path=n.path) for n in chain],
        "kinds": list(KINDS),
        "from_us": from_us,
        "to_us": to_us,
        "matched": int(len(matches.b_rows)),
        "baseline_side": sides["baseline"],
        "experimental_side": sides["experimental"],
    }


def _side(side: str, tp, index: P.PieceIndex, piece: P.Piece, matches: Matches, from_us, to_us,
          width_px: int, max_events: int, find: str, devices_first: bool) -> C.TimelineSide:
    linked = tp.linked
    t = linked.table
    start, end = piece.start_us, piece.end_us
    w0 = min(start + (from_us or 0.0), end)
    w1 = min(start + to_us, end) if to_us is not None else end
    rows = window_rows(tp.timeline_index(), linked, w0, w1) if w1 > w0 else np.zeros(0, np.int64)
    first = np.concatenate(([index.step_thread], index.autograd_threads)) if index.step_thread >= 0 else np.zeros(0, np.int64)
    ln = lanes(linked, rows, first, devices_first)
    depth = depths(linked, tp.timeline_index(), rows, ln.of_row)
    ts, dur = t.ts_us[rows], t.dur_us[rows]
    detail = level_of_detail(ts, dur, ln.of_row, depth, w1 - w0, width_px, max_events, first_named(t, rows, find, w0))
    kept = np.flatnonzero(detail.keep)
    kept = kept[np.argsort(ts[kept], kind="stable")]
    krows = rows[kept]
    ids = matches.lookup(side, krows)
    name_ids, name_index = np.unique(t.name_id[krows], return_inverse=True)
    delta = np.where(ids >= 0, matches.delta_us[np.maximum(ids, 0)] if len(matches.delta_us) else 0.0, np.nan)
    kinds = tp.timeline_index().kind[krows]
    # The events of the window, not the ones enclosing it (a step or an `epoch` annotation around a module).
    ends = (ts + dur)[ts >= w0]
    return C.TimelineSide(
        piece_name=piece.name,
        start_us=round(start, 3),
        end_us=round(end, 3),
        window_start_us=round(w0, 3),
        window_end_us=round(w1, 3),
        # Device activity can outlast the host window of the piece that launched it.
        events_end_us=round(max(float(ends.max()), w1) if len(ends) else w1, 3),
        lanes=[C.TimelineLane(label=lb, device=dv) for lb, dv in zip(ln.label, ln.device)],
        names=[s if s is not None else "" for s in t.names(name_ids).tolist()],
        events=C.TimelineEvents(
            name=name_index.astype(np.int64).tolist(),
            kind=kinds.astype(np.int64).tolist(),
            ts_us=np.round(ts[kept] - start, 3).tolist(),
            dur_us=np.round(dur[kept], 3).tolist(),
            lane=_list(ln.of_row[kept]),
            depth=_list(depth[kept]),
            match=[None if i < 0 else i for i in ids.tolist()],
            delta_us=np.round(delta, 3).tolist(),  # NaN (unmatched) is encoded null
        ),
        events_total=int(len(rows)),
        min_draw_us=round(float(detail.min_draw_us), 3),
        merged=C.TimelineMerged(
            lane=_list(detail.merged_lane),
            depth=_list(detail.merged_depth),
            ts_us=np.round(detail.merged_ts_us - start, 3).tolist(),
            dur_us=np.round(detail.merged_dur_us, 3).tolist(),
            count=_list(detail.merged_count),
            merged_us=np.round(detail.merged_us, 3).tolist(),
        ),
        merged_count=int(detail.merged_count.sum()),
        merged_us=round(float(detail.merged_us.sum()), 3),
    )


def _list(values) -> list:
    """An array's (or a list's) values as Python numbers, as the Struct declares them."""
    return np.asarray(values).tolist()
