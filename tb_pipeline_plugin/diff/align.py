"""Sequence alignment of two lists of keys (pure; no trace types).

`align(a_keys, b_keys)` returns the pairs of a longest common subsequence of
the keys (Needleman–Wunsch with a zero gap cost), plus the unmatched items of
each side, in order. Inserting, removing or swapping one item therefore
leaves every other item matched, unlike greedy matching by full name, where
one inserted `Block` shifts `Block_2` to `Block_3` and breaks everything
after it.

Ties between equally long alignments are broken by `a_names` / `b_names`:
among maximal alignments, the one pairing the most identical names wins
(`Block_0`..`Block_3` against `Block_0`..`Block_4` leaves `Block_4`
unmatched); after that, earlier items are preferred.

Cost. Before any quadratic work: equal heads and tails are matched outright,
and items whose key does not occur on the other side are set aside (they can
never be matched). What is left goes, in order of preference, to

1. the exact score matrix (`MAX_DP_CELLS` cells at most: 20M, an int32
   matrix of 80 MB filled in about 0.1-0.4 s), one vectorised row per item
   of the *shorter* side, names breaking ties;
2. Myers' O((n + m) · D) diff, exact as long as the two sides differ by few
   edits (`MAX_EDITS`, `MAX_MYERS_WORK`): one inserted, removed or swapped
   item is still exact at any size; names are not used for ties;
3. runs of equal keys: consecutive equal keys form a block, the block
   sequences are aligned with a longest common subsequence weighted by
   the number of items two blocks can pair, and matched blocks are paired
   item by item from their start;
4. when even the blocks are too many: the k-th occurrence of each key on one
   side is paired with its k-th occurrence on the other, and the longest
   increasing run of those pairs is kept (O(n log n)); these pairs are
   anchors that cut both sides into chunks, and each chunk small enough
   is aligned with the exact score matrix (about 2 * `MAX_DP_CELLS` cells and
   `MAX_CHUNK_ROWS` rows in all; past that, chunks keep their anchors).

Steps 1 and 2 are exact. Steps 3-4 approximate the longest common
subsequence (they can match far fewer items) and are used only past both
budgets, to keep every answer within a fraction of a second;
`align_info` says whether they were used (`diff/modules` reports it as
`approximate`).
"""
from __future__ import annotations

import bisect
import gc
from collections.abc import Hashable, Sequence
from itertools import repeat

import numpy as np

# Beyond this many cells (after trimming) the score matrix costs too much
# time and memory (int32: 80 MB, ~0.4 s for 4500 x 4500); the cheaper,
# approximate methods below take over.
MAX_DP_CELLS = 20_000_000
# The anchored chunks of the last resort: at most this many score-matrix
# rows in all (each row costs ~10 µs of interpreter time, whatever its width).
MAX_CHUNK_ROWS = 30_000
# Myers gives up beyond this many edits, or this many inner steps.
MAX_EDITS = 1_000
MAX_MYERS_WORK = 3_000_000

Pair = tuple[int | None, int | None]


def align(
    a_keys: Sequence[Hashable],
    b_keys: Sequence[Hashable],
    a_names: Sequence[Hashable] | None = None,
    b_names: Sequence[Hashable] | None = None,
) -> list[Pair]:
    """Alignment of `a_keys` with `b_keys` as (i, j) pairs, in order.

    `(i, j)`: a[i] matched with b[j]; `(i, None)`: a[i] only; `(None, j)`:
    b[j] only. Between two matches, a-only items come before b-only ones.
    Every index of both inputs appears exactly once.
    """
    return align_info(a_keys, b_keys, a_names, b_names)[0]


def align_info(
    a_keys: Sequence[Hashable],
    b_keys: Sequence[Hashable],
    a_names: Sequence[Hashable] | None = None,
    b_names: Sequence[Hashable] | None = None,
) -> tuple[list[Pair], bool]:
    """`align`'s pairs, and whether an approximate fallback (runs of equal
    keys, occurrence LIS) was used instead of an exact longest common
    subsequence."""
    n, m = len(a_keys), len(b_keys)
    if (a_names is not None and len(a_names) != n) or (b_names is not None and len(b_names) != m):
        raise ValueError("names must have the same length as keys")
    a, b = _encode(a_keys, b_keys)
    if a_names is None and b_names is None:
        an, bn = a, b
    else:
        an, bn = _encode(a_keys if a_names is None else a_names, b_keys if b_names is None else b_names)
    i, j, approximate = _match(a, b, an, bn)
    # The answer is up to n + m fresh tuples; cyclic-GC passes would walk
    # them all again while they are made (as in trace/decode.py).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _with_gaps(i, j, n, m), approximate
    finally:
        if was_enabled:
            gc.enable()


def _encode(a_keys: Sequence[Hashable], b_keys: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as int codes (equal keys, equal codes)."""
    codes: dict[Hashable, int] = dict.fromkeys(a_keys)
    codes.update(dict.fromkeys(b_keys))
    for code, key in enumerate(codes):
        codes[key] = code
    get = codes.__getitem__
    a = np.fromiter(map(get, a_keys), dtype=np.int64, count=len(a_keys))
    b = np.fromiter(map(get, b_keys), dtype=np.int64, count=len(b_keys))
    return a, b


def _match(a: np.ndarray, b: np.ndarray, an: np.ndarray, bn: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Matched (i, j) index arrays, both increasing, and whether they are
    approximate."""
    ia, ib = np.arange(len(a)), np.arange(len(b))
    # Equal (key, name) heads and tails belong to some best alignment.
    fixed_a, fixed_b, ia, ib = _trim(ia, ib, (a, an), (b, bn))
    # Keys absent from the other side can never be matched.
    ia = ia[np.isin(a[ia], b[ib])]
    ib = ib[np.isin(b[ib], a[ia])]
    fa, fb, ia, ib = _trim(ia, ib, (a, an), (b, bn))
    fixed_a += fa
    fixed_b += fb
    if len(ia) * len(ib) > MAX_DP_CELLS:
        # Names only break ties inside the score matrix: trim on keys alone.
        fa, fb, ia, ib = _trim(ia, ib, (a,), (b,))
        fixed_a += fa
        fixed_b += fb
    approximate = False
    if len(ia) and len(ib):
        mi, mj, approximate = _middle(a[ia], b[ib], an[ia], bn[ib])
        fixed_a.append(ia[mi]), fixed_b.append(ib[mj])
    i, j = np.concatenate(fixed_a), np.concatenate(fixed_b)
    order = np.argsort(i, kind="stable")
    return i[order], j[order], approximate


def _trim(ia: np.ndarray, ib: np.ndarray, a_cols: tuple, b_cols: tuple):
    """Split off the common head and tail of the sequences a[ia], b[ib]
    (equal in every column). Returns (matched a, matched b, rest a, rest b)."""
    k = min(len(ia), len(ib))
    if k == 0:
        return [np.empty(0, np.int64)], [np.empty(0, np.int64)], ia, ib
    same = np.ones(k, dtype=bool)
    for ac, bc in zip(a_cols, b_cols):
        same &= ac[ia[:k]] == bc[ib[:k]]
    head = int(np.argmin(same)) if not same.all() else k
    rest = k - head
    same = np.ones(rest, dtype=bool)
    for ac, bc in zip(a_cols, b_cols):
        same &= ac[ia[len(ia) - rest:]][::-1] == bc[ib[len(ib) - rest:]][::-1]
    tail = int(np.argmin(same)) if not same.all() else rest
    ma = [ia[:head], ia[len(ia) - tail:]]
    mb = [ib[:head], ib[len(ib) - tail:]]
    return ma, mb, ia[head:len(ia) - tail], ib[head:len(ib) - tail]


def _middle(a, b, an, bn) -> tuple[np.ndarray, np.ndarray, bool]:
    """Matches of what trimming left, in local indices, and whether they are
    approximate (see module docstring)."""
    if len(a) * len(b) <= MAX_DP_CELLS:
        return (*_dp_items(a, b, an, bn), False)
    found = _myers(a.tolist(), b.tolist())
    if found is not None:
        return (*found, False)
    a_starts, a_len = _runs(a)
    b_starts, b_len = _runs(b)
    if len(a_starts) * len(b_starts) <= MAX_DP_CELLS:
        return (*_dp_blocks(a[a_starts], b[b_starts], a_starts, b_starts, a_len, b_len), True)
    return (*_anchored(a, b, an, bn), True)


# ---------------------------------------------------------------- score matrix


def _dp_items(a, b, an, bn) -> tuple[np.ndarray, np.ndarray]:
    # Score of a match: `weight` for equal keys, +1 for equal names too;
    # weight > any possible name bonus keeps "most matches" the first goal.
    weight = min(len(a), len(b)) + 1
    bound = min(len(a), len(b)) * (weight + 1)
    if len(a) <= len(b):
        return _dp(a, b, lambda i, same: np.where(same, weight + (bn == an[i]), 0), bound)
    j, i = _dp(b, a, lambda r, same: np.where(same, weight + (an == bn[r]), 0), bound)
    return i, j


def _dp_blocks(ak, bk, a_starts, b_starts, a_len, b_len) -> tuple[np.ndarray, np.ndarray]:
    """Weighted LCS of the block sequences (two blocks of one key can pair
    min(length) items), then item by item inside matched blocks."""
    bound = int(min(a_len.sum(), b_len.sum()))
    if len(ak) <= len(bk):
        bi, bj = _dp(ak, bk, lambda i, same: np.where(same, np.minimum(b_len, a_len[i]), 0), bound)
    else:
        bj, bi = _dp(bk, ak, lambda r, same: np.where(same, np.minimum(a_len, b_len[r]), 0), bound)
    width = np.minimum(a_len[bi], b_len[bj])
    offset = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    return np.repeat(a_starts[bi], width) + offset, np.repeat(b_starts[bj], width) + offset


def _dp(rows: np.ndarray, cols: np.ndarray, score, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-score common subsequence, one vectorised row per item of
    `rows` (the shorter side); score(i, same) is row i's match scores, and
    no total exceeds `bound` (int32 cells below 2**31: half the memory)."""
    n, m = len(rows), len(cols)
    dtype = np.int32 if bound < 2**31 - 1 else np.int64
    dp = np.zeros((n + 1, m + 1), dtype=dtype)
    for i in range(n):
        same = cols == rows[i]
        prev = dp[i]
        cand = np.maximum(prev[1:], np.where(same, prev[:-1] + score(i, same).astype(dtype, copy=False), 0))
        # With a zero gap cost, dp[i+1][j] = max(dp[i+1][j-1], cand[j]): a running max.
        np.maximum.accumulate(cand, out=dp[i + 1, 1:])
    # Trace back: up while the row above holds the value, else left to the
    # first column of this row holding it, where the match is (one binary
    # search per row instead of one step per cell).
    pi, pj = [], []
    i, j = n, m
    while i > 0 and j > 0:
        v = dp[i, j]
        if v == dp[i - 1, j]:
            i -= 1
            continue
        j0 = int(np.searchsorted(dp[i, : j + 1], v, side="left"))
        pi.append(i - 1), pj.append(j0 - 1)
        i, j = i - 1, j0 - 1
    return np.array(pi[::-1], dtype=np.int64), np.array(pj[::-1], dtype=np.int64)


# ---------------------------------------------------------------- few edits


def _myers(a: list, b: list) -> tuple[np.ndarray, np.ndarray] | None:
    """Exact LCS by Myers' greedy diff, or None past the edit / work budget."""
    n, m = len(a), len(b)
    if abs(n - m) > MAX_EDITS:
        return None
    off = MAX_EDITS + 1
    v = [-1] * (2 * off + 1)  # furthest x reached on diagonal k = x - y, at v[off + k]; -1 none
    trace = []
    work = 0
    for d in range(min(n + m, MAX_EDITS) + 1):
        trace.append(v[off - d - 1: off + d + 2])  # the state before step d
        for k in range(-d, d + 1, 2):
            x = 0 if d == 0 else _myers_move(v, off, k, d, n, m)[0]
            if x < 0:
                continue
            y = x - k
            x0 = x
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            work += 1 + x - x0
            v[off + k] = x
            if x == n and y == m:
                return _myers_path(trace, d, n, m)
        if work > MAX_MYERS_WORK:
            return None
    return None


def _myers_move(v: list[int], base: int, k: int, d: int, n: int, m: int) -> tuple[int, int]:
    """(x, previous diagonal) of step d's move onto diagonal k: down from
    k + 1 or right from k - 1, whichever gets further without leaving the
    grid; (-1, 0) when neither can."""
    best, prev = -1, 0
    if k + 1 <= d - 1:
        x = v[base + k + 1]
        if x >= 0 and x - k <= m:
            best, prev = x, k + 1
    if k - 1 >= 1 - d:
        x = v[base + k - 1]
        if x >= 0 and x + 1 <= n and x + 1 > best:
            best, prev = x + 1, k - 1
    return best, prev


def _myers_path(trace: list[list[int]], d_end: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    pi, pj = [], []
    x, y = n, m
    for d in range(d_end, 0, -1):
        _, prev_k = _myers_move(trace[d], d + 1, x - y, d, n, m)
        prev_x = trace[d][prev_k + d + 1]
        prev_y = prev_x - prev_k
        # The diagonal (matches) back to the point the move reached.
        while x > prev_x and y > prev_y:
            x, y = x - 1, y - 1
            pi.append(x), pj.append(y)
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        pi.append(x), pj.append(y)
    return np.array(pi[::-1], dtype=np.int64), np.array(pj[::-1], dtype=np.int64)


# ---------------------------------------------------------------- very large


def _runs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each run of equal consecutive keys."""
    starts = np.flatnonzero(np.concatenate(([True], a[1:] != a[:-1])))
    return starts, np.diff(np.append(starts, len(a)))


def _occurrence_lis(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pair the k-th occurrence of each key on both sides, keep the longest
    run of pairs increasing on both sides."""
    rank_a = _occurrence_rank(a)
    rank_b = _occurrence_rank(b)
    # b's position of (key, rank), looked up for each a item.
    base = max(len(a), len(b)) + 1
    kb = b * base + rank_b
    ka = a * base + rank_a
    order = np.argsort(kb, kind="stable")
    pos = np.searchsorted(kb[order], ka)
    hit = (pos < len(b)) & (kb[order][np.minimum(pos, len(b) - 1)] == ka)
    ai = np.flatnonzero(hit)
    bj = order[pos[hit]]
    keep = _lis(bj.tolist())
    return ai[keep], bj[keep]


def _anchored(a, b, an, bn) -> tuple[np.ndarray, np.ndarray]:
    """Occurrence-LIS pairs as anchors, cut into chunks small enough for the
    exact score matrix (at most `MAX_DP_CELLS` cells each, about twice that
    and `MAX_CHUNK_ROWS` rows in all); each chunk between two anchors is then
    aligned exactly. A chunk past the budget keeps its anchors."""
    n, m = len(a), len(b)
    ai, bj = _occurrence_lis(a, b)
    if len(ai) == 0:
        return ai, bj
    k = max(2, -(-2 * n * m // max(MAX_DP_CELLS, 1)))  # chunks along the diagonal, each ~cap / 2 cells
    cut = np.unique(np.searchsorted(ai, (np.arange(1, k) * n) // k))
    cut = cut[cut < len(ai)]
    bounds_a = np.concatenate(([0], ai[cut], [n]))
    bounds_b = np.concatenate(([0], bj[cut], [m]))
    out_i, out_j = [], []
    budget, rows = 2 * MAX_DP_CELLS, MAX_CHUNK_ROWS
    for i0, i1, j0, j1 in zip(bounds_a[:-1].tolist(), bounds_a[1:].tolist(), bounds_b[:-1].tolist(), bounds_b[1:].tolist()):
        cells = (i1 - i0) * (j1 - j0)
        if 0 < cells <= min(budget, MAX_DP_CELLS) and min(i1 - i0, j1 - j0) <= rows:
            budget -= cells
            rows -= min(i1 - i0, j1 - j0)
            ci, cj = _dp_items(a[i0:i1], b[j0:j1], an[i0:i1], bn[j0:j1])
            out_i.append(ci + i0), out_j.append(cj + j0)
        else:
            inside = (ai >= i0) & (ai < i1)
            out_i.append(ai[inside]), out_j.append(bj[inside])
    return np.concatenate(out_i), np.concatenate(out_j)


def _occurrence_rank(a: np.ndarray) -> np.ndarray:
    order = np.argsort(a, kind="stable")
    sorted_a = a[order]
    first = np.searchsorted(sorted_a, sorted_a, side="left")
    rank = np.empty(len(a), dtype=np.int64)
    rank[order] = np.arange(len(a)) - first
    return rank


def _lis(values: list[int]) -> np.ndarray:
    """Indices of a longest strictly increasing subsequence (patience sort)."""
    tails: list[int] = []
    tail_idx: list[int] = []
    prev = [-1] * len(values)
    for i, v in enumerate(values):
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v), tail_idx.append(i)
        else:
            tails[k], tail_idx[k] = v, i
        prev[i] = tail_idx[k - 1] if k else -1
    out = []
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        out.append(i)
        i = prev[i]
    return np.array(out[::-1], dtype=np.int64)


# ---------------------------------------------------------------- output


def _with_gaps(mi: np.ndarray, mj: np.ndarray, n: int, m: int) -> list[Pair]:
    """Matches plus every unmatched index, a-only before b-only between two
    matches; consecutive matches are emitted as runs (C-speed zips)."""
    out: list[Pair] = []
    if len(mi):
        brk = np.flatnonzero((np.diff(mi) != 1) | (np.diff(mj) != 1)) + 1
        run_starts = np.concatenate(([0], brk))
        run_ends = np.concatenate((brk, [len(mi)]))
        runs = zip(mi[run_starts].tolist(), mj[run_starts].tolist(), (run_ends - run_starts).tolist())
    else:
        runs = iter(())
    pi, pj = 0, 0
    for i, j, length in runs:
        out.extend(zip(range(pi, i), repeat(None)))
        out.extend(zip(repeat(None), range(pj, j)))
        out.extend(zip(range(i, i + length), range(j, j + length)))
        pi, pj = i + length, j + length
    out.extend(zip(range(pi, n), repeat(None)))
    out.extend(zip(repeat(None), range(pj, m)))
    return out
