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
"""
from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence

import numpy as np

# Beyond this many DP cells (after trimming the common prefix and suffix) the
# full score matrix would cost too much memory; difflib's matching blocks
# (exact for one insertion / removal, near-LCS otherwise) take over.
MAX_DP_CELLS = 4_000_000

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
    n, m = len(a_keys), len(b_keys)
    a_names = a_keys if a_names is None else a_names
    b_names = b_keys if b_names is None else b_names
    if len(a_names) != n or len(b_names) != m:
        raise ValueError("names must have the same length as keys")
    codes: dict[Hashable, int] = {}
    a = np.array([codes.setdefault(k, len(codes)) for k in a_keys], dtype=np.int64)
    b = np.array([codes.setdefault(k, len(codes)) for k in b_keys], dtype=np.int64)
    name_codes: dict[Hashable, int] = {}
    an = np.array([name_codes.setdefault(k, len(name_codes)) for k in a_names], dtype=np.int64)
    bn = np.array([name_codes.setdefault(k, len(name_codes)) for k in b_names], dtype=np.int64)

    # Equal heads and tails are matched outright: an LCS always exists that
    # contains them, and it keeps the quadratic part small.
    head = 0
    while head < min(n, m) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(n, m) - head and a[n - 1 - tail] == b[m - 1 - tail]:
        tail += 1
    mid_a, mid_b = slice(head, n - tail), slice(head, m - tail)
    if (n - head - tail) * (m - head - tail) <= MAX_DP_CELLS:
        inner = _lcs_pairs(a[mid_a], b[mid_b], an[mid_a], bn[mid_b])
    else:
        inner = _difflib_pairs(a[mid_a], b[mid_b])
    matches = [(i, i) for i in range(head)]
    matches += [(i + head, j + head) for i, j in inner]
    matches += [(n - tail + k, m - tail + k) for k in range(tail)]
    return _with_gaps(matches, n, m)


def _lcs_pairs(a: np.ndarray, b: np.ndarray, an: np.ndarray, bn: np.ndarray) -> list[tuple[int, int]]:
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return []
    # Score of a match: `weight` for equal keys, +1 for equal names too;
    # weight > any possible name bonus keeps "most matches" the first goal.
    weight = min(n, m) + 1
    dp = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(n):
        same = b == a[i]
        score = np.where(same, weight + (bn == an[i]), 0)
        prev = dp[i]
        cand = np.maximum(prev[1:], np.where(same, prev[:-1] + score, 0))
        # With a zero gap cost, dp[i+1][j] = max(dp[i+1][j-1], cand[j]): a running max.
        np.maximum.accumulate(cand, out=dp[i + 1, 1:])
    pairs = []
    i, j = n, m
    while i > 0 and j > 0:
        if dp[i, j] == dp[i - 1, j]:
            i -= 1
        elif dp[i, j] == dp[i, j - 1]:
            j -= 1
        else:
            pairs.append((i - 1, j - 1))
            i -= 1
            j -= 1
    pairs.reverse()
    return pairs


def _difflib_pairs(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int]]:
    matcher = difflib.SequenceMatcher(None, a.tolist(), b.tolist(), autojunk=False)
    return [(blk.a + k, blk.b + k) for blk in matcher.get_matching_blocks() for k in range(blk.size)]


def _with_gaps(matches: list[tuple[int, int]], n: int, m: int) -> list[Pair]:
    out: list[Pair] = []
    pi, pj = 0, 0
    for i, j in [*matches, (n, m)]:
        out.extend((k, None) for k in range(pi, i))
        out.extend((None, k) for k in range(pj, j))
        if i < n and j < m:
            out.append((i, j))
        pi, pj = i + 1, j + 1
    return out
