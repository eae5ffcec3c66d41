"""Walks over parent pointers, bounded however the pointers are damaged.

Parent pointers come from ids written in a file (`Python parent id`), so a
hostile or broken file can make them loop (a self-reference, a cycle, a
duplicated id). Following them one hop per iteration also costs one pass
over the array per level, which a 20,000-deep chain turns into seconds.
Both walks here double the hop length each round (pointer jumping): at most
ceil(log2(n)) + 1 rounds whatever the pointers are, O(n log n) in all.
"""
from __future__ import annotations

import numpy as np


_SHORT_WALK_HOPS = 32


def _rounds(n: int) -> int:
    return int(np.ceil(np.log2(n + 2))) + 1


def nearest_marked_ancestor(parent: np.ndarray, marked: np.ndarray, start: np.ndarray) -> np.ndarray:
    """For each row in `start` (-1 allowed): the row itself if marked, else its
    nearest marked ancestor; -1 where the chain ends (or loops) first."""
    cur = np.asarray(start, dtype=np.int64).copy()
    pending = np.flatnonzero(cur >= 0)
    pending = pending[~marked[cur[pending]]]
    # Real nesting is shallow: a few hops on the pending rows only is cheapest.
    for _ in range(_SHORT_WALK_HOPS):
        if not len(pending):
            return cur
        cur[pending] = parent[cur[pending]]
        pending = pending[cur[pending] >= 0]
        pending = pending[~marked[cur[pending]]]
    if not len(pending):
        return cur
    n = len(parent)
    sentinel = n
    idx = np.arange(n + 1, dtype=np.int64)
    up = np.append(np.where(parent >= 0, parent, sentinel), sentinel)
    stop = np.append(marked.astype(bool), True)
    hop = np.where(stop, idx, up)
    for _ in range(_rounds(n)):
        nxt = hop[hop]
        if np.array_equal(nxt, hop):
            break
        hop = nxt
    out = hop[cur[pending]]
    # A chain that loops never reaches a marked row: treat it as ended.
    out[~stop[out] | (out == sentinel)] = -1
    cur[pending] = out
    return cur


def depths(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(depth of each node, whether its chain reaches a root).

    `parent` holds node indexes or -1. A node on (or under) a cycle does not
    reach a root; its depth is then meaningless and the caller decides what
    to do with it (cut it loose, say)."""
    n = len(parent)
    sentinel = n
    anc = np.append(np.where(parent >= 0, parent, sentinel), sentinel)
    dist = np.append((parent >= 0).astype(np.int64), 0)
    for _ in range(_rounds(n)):
        if np.all(anc == sentinel):
            break
        dist = dist + dist[anc]
        anc = anc[anc]
    return dist[:n], anc[:n] == sentinel
