"""Per-thread nesting of host events, vectorised.

A Python stack walk over a million events costs about a second; this does
the same with sorts and binary searches. For events of one thread sorted by
(start, longest first), the nesting depth of event i is the number of
earlier events that have not ended when i starts; its parent is the last
earlier event one level up.
"""
from __future__ import annotations

import numpy as np

try:
    from ._nest import ancestor_counts as _count_walk, depths_and_parents as _walk, open_parents as _open_walk
except ImportError:  # built without a C compiler (setup.py: optional)
    _walk = _open_walk = _count_walk = None

# Up to this many threads, each thread's ends are sorted on their own
# (nearly sorted already: timsort's best case); beyond, one pass over all
# threads at once, so 100,000 threads cost no Python loop.
_PER_THREAD_MAX = 64

# Zero-length events get this length (µs) so that they nest inside an event
# starting at the same instant instead of enclosing the ones after them.
_ZERO_DUR_US = 1e-4


def _by_thread_start_longest(thread: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """np.lexsort((-length, start, thread)), fast for a trace's rows.

    They come nearly sorted by start, where a stable sort (timsort) is
    nearly free, and a thread id sorts by radix; only rows that tie on
    (thread, start) then need their lengths compared. A full lexsort sorts
    every row by length first, at random."""
    order = np.argsort(start, kind="stable")
    order = order[np.argsort(thread[order], kind="stable")]
    t, s = thread[order], start[order]
    same = (t[1:] == t[:-1]) & (s[1:] == s[:-1])
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    group = np.cumsum(~np.concatenate(([False], same)))[at]  # one number per run of ties
    order[at] = order[at][np.lexsort((-length[order[at]], group))]
    return order


def nest(thread_id: np.ndarray, ts_us: np.ndarray, dur_us: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent row (or -1) and depth for each of `rows`, in the order of `rows`.

    Parents are found among `rows` on the same thread. Partially overlapping
    events (children a rounding error longer than their parent) get the
    nearest preceding event one level up, which is what a stack would give;
    an event whose counted parent had ended gets the innermost one still
    open (`_open_parents`).
    """
    n = len(rows)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int32)
    if n == 0:
        return parent, depth
    base = ts_us[rows].min()
    start = ts_us[rows] - base  # relative: absolute µs since epoch lose ns precision
    length = np.maximum(dur_us[rows], _ZERO_DUR_US)
    thread = thread_id[rows]
    order = _by_thread_start_longest(thread, start, length)
    s, e, t = start[order], (start + length)[order], thread[order]

    sorted_depth, sorted_parent = sorted_links(s, e, t)
    sorted_depth, sorted_parent = _open_parents(s, e, t, sorted_depth, sorted_parent)

    # Back from sorted positions to row numbers, in the caller's order.
    row_of_sorted = rows[order]
    has_parent = sorted_parent >= 0
    parent_sorted_rows = np.full(n, -1, dtype=np.int64)
    parent_sorted_rows[has_parent] = row_of_sorted[sorted_parent[has_parent]]
    parent[order] = parent_sorted_rows
    depth[order] = sorted_depth
    return parent, depth


# How far back (sorted positions) an event whose counted parent had ended looks for the one still open.
_OPEN_PARENT_SCAN = 4096


def _open_parents(s: np.ndarray, e: np.ndarray, t: np.ndarray, depth: np.ndarray,
                  parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parents that had ended before their child began replaced by the
    innermost event still open at its start, and the depths that follow.

    Counting open events gives a stack's answer while events nest, and
    while a child outlasts its parent only by a rounding error. When an
    event B starts inside A and outlasts it by more, an event C starting
    after A ended but inside B counts one open event (B), so the count's
    parent, the last earlier event one level up, is A, which had ended
    (the demo's `<built-in function next>`, 4 µs after its counted parent
    `_begin_request` ended, inside a Python frame that overran it). A
    stack gives B: the latest-starting earlier event on the thread that
    has not ended."""
    has = parent >= 0
    bad = np.flatnonzero(has & (e[np.maximum(parent, 0)] <= s))
    if not len(bad):
        return depth, parent
    parent = parent.copy()
    parent[bad] = open_parent_positions(s, e, t, bad)
    return ancestor_counts(parent).astype(depth.dtype), parent


def ancestor_counts(parent: np.ndarray) -> np.ndarray:
    """Each event's number of ancestors: in one compiled pass where every
    parent comes before its child (sorted positions), else by pointer
    doubling (the same counts: tests/trace/test_nesting.py)."""
    if _count_walk is not None:
        got = _count_walk(np.ascontiguousarray(parent, np.int64))
        if got is not None:
            return np.frombuffer(got, np.int64).copy()
    return doubled_ancestor_counts(parent)


def doubled_ancestor_counts(parent: np.ndarray) -> np.ndarray:
    """`ancestor_counts` by pointer doubling: `hops[i]` edges lie between i
    and `up[i]`; each round adds the hops of `up[i]` and jumps to its `up`,
    so a chain a million deep takes 20 rounds (0.4 s over a 1 GB trace's
    host events, against 10 ms for the compiled pass)."""
    hops = (parent >= 0).astype(np.int64)
    up = parent.copy()
    alive = np.flatnonzero(up >= 0)
    while len(alive):
        nxt = up[alive]
        hops[alive] += hops[nxt]
        up[alive] = up[nxt]
        alive = alive[up[alive] >= 0]
    return hops


def open_parent_positions(s: np.ndarray, e: np.ndarray, t: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """For each of `asked` (ascending sorted positions), the latest-starting
    earlier event of its thread not ended at its start, or -1: one stack
    walk over the threads (`_nest.c`) when built, else `scan_open_parents`
    (the same answer within its scan: tests/trace/test_nesting.py)."""
    asked = np.ascontiguousarray(asked, np.int64)
    if _open_walk is None:
        return scan_open_parents(s, e, t, asked)
    got = _open_walk(np.ascontiguousarray(s, np.float64), np.ascontiguousarray(e, np.float64),
                     np.ascontiguousarray(t, np.int64), asked)
    return np.frombuffer(got, np.int64).copy()


def scan_open_parents(s: np.ndarray, e: np.ndarray, t: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """`open_parent_positions` without a compiler: a scan back of at most
    `_OPEN_PARENT_SCAN` events each (a hostile trace of a million such
    events would cost minutes in Python)."""
    out = np.full(len(asked), -1, dtype=np.int64)
    for k, i in enumerate(np.asarray(asked).tolist()):
        for j in range(i - 1, max(i - 1 - _OPEN_PARENT_SCAN, -1), -1):
            if t[j] != t[i]:
                break
            if e[j] > s[i]:
                out[k] = j
                break
    return out


def sorted_links(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(depth, sorted position of the parent or -1) of events sorted by
    (thread, start, longest first): in one compiled walk (`_nest.c`) when
    built and every end is above its start, else with the sorts below. The
    same numbers either way (tests/trace/test_nesting.py)."""
    if _walk is not None:
        got = _walk(np.ascontiguousarray(s, np.float64), np.ascontiguousarray(e, np.float64),
                    np.ascontiguousarray(t, np.int64))
        if got is not None:
            return np.frombuffer(got[0], np.int64), np.frombuffer(got[1], np.int64)
    depth = _depths(s, e, t)
    return depth, _parents(depth)


def _depths(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Depth of each event sorted by (thread, start, longest first): its
    position within its thread minus the thread's events that ended by its
    start. O(n log n) for any number of threads."""
    n = len(s)
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(t)) + 1, [n]))
    depth = np.empty(n, dtype=np.int64)
    if len(cuts) - 1 <= _PER_THREAD_MAX:
        for a, b in zip(cuts[:-1], cuts[1:]):
            ends = np.sort(e[a:b], kind="stable")  # nearly sorted already: timsort's best case
            depth[a:b] = np.arange(b - a) - np.searchsorted(ends, s[a:b], side="right")
        return depth
    # All threads in one search: every start and end as an exact integer
    # rank (floats offset by a thread number would round), keyed by thread
    # first. The search then also counts the ends of the earlier threads,
    # which equal their events: position minus it is the depth.
    values, rank = np.unique(np.concatenate((s, e)), return_inverse=True)
    thread_no = np.cumsum(np.concatenate(([0], (np.diff(t) != 0).astype(np.int64))))
    width = len(values) + 1
    start_key = thread_no * width + rank[:n]
    end_key = np.sort(thread_no * width + rank[n:])
    depth[:] = np.arange(n) - np.searchsorted(end_key, start_key, side="right")
    return depth


def _parents(depth: np.ndarray) -> np.ndarray:
    """Sorted position of each event's parent (-1): the last earlier event
    one level up. Depth rises by at most one from an event to the next on
    its thread, so that event is on the same thread. One binary search for
    all levels (key: depth, then position), O(n log n) however deep."""
    n = len(depth)
    parent = np.full(n, -1, dtype=np.int64)
    # Depths are small: as int16 the stable sort is a radix sort.
    narrow = depth.astype(np.int16) if depth.max() < np.iinfo(np.int16).max else depth
    by_depth = np.argsort(narrow, kind="stable")
    key = depth[by_depth] * n + by_depth  # ascending, unique
    # Asked in the same (depth, position) order: ascending queries walk the
    # keys forward, cache-warm (15-25 % faster than in position order).
    below = by_depth[depth[by_depth] > 0]
    k = np.searchsorted(key, (depth[below] - 1) * n + below) - 1
    # Always true but where float rounding made an end equal its start.
    ok = (k >= 0) & (depth[by_depth[np.maximum(k, 0)]] == depth[below] - 1)
    parent[below[ok]] = by_depth[k[ok]]
    return parent
