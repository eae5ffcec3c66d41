"""Sequence alignment on plain lists (diff/align.py)."""
from __future__ import annotations

import random

import pytest

from tb_pipeline_plugin.diff import align as align_mod
from tb_pipeline_plugin.diff.align import align


def lcs_length(a, b) -> int:
    """Textbook O(n*m) LCS length, the oracle for the vectorised DP."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def check_valid(pairs, a, b):
    """Every index exactly once, in order on both sides, matches on equal keys."""
    assert sorted(i for i, _ in pairs if i is not None) == list(range(len(a)))
    assert sorted(j for _, j in pairs if j is not None) == list(range(len(b)))
    a_seq = [i for i, _ in pairs if i is not None]
    b_seq = [j for _, j in pairs if j is not None]
    assert a_seq == sorted(a_seq) and b_seq == sorted(b_seq)
    for i, j in pairs:
        assert i is not None or j is not None
        if i is not None and j is not None:
            assert a[i] == b[j]


def matched(pairs):
    return [(i, j) for i, j in pairs if i is not None and j is not None]


def test_identical_sequences_match_one_to_one():
    a = ["Linear", "Block", "Block", "Linear"]
    assert align(a, list(a)) == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_empty_sides():
    assert align([], []) == []
    assert align(["A", "B"], []) == [(0, None), (1, None)]
    assert align([], ["A"]) == [(None, 0)]


def test_insertion_in_the_middle_leaves_everything_else_matched():
    a = ["Linear", "Block", "Block", "Block", "Linear"]
    b = ["Linear", "Block", "Dropout", "Block", "Block", "Linear"]
    pairs = align(a, b)
    check_valid(pairs, a, b)
    assert len(matched(pairs)) == len(a)
    assert (None, 2) in pairs


def test_removal_and_swap():
    a = ["Stem", "Block", "Block", "Block", "Head"]
    removed = ["Stem", "Block", "Block", "Head"]
    pairs = align(a, removed)
    check_valid(pairs, a, removed)
    assert len(matched(pairs)) == 4 and sum(j is None for _, j in pairs) == 1

    swapped = ["Stem", "Block", "Attention", "Block", "Head"]
    pairs = align(a, swapped)
    check_valid(pairs, a, swapped)
    assert len(matched(pairs)) == 4
    only = [(i, j) for i, j in pairs if i is None or j is None]
    # The replaced piece shows as removed + added, next to each other, a first.
    assert only == [(2, None), (None, 2)]


def test_instance_names_break_ties_between_identical_classes():
    a = ["Block"] * 4
    b = ["Block"] * 5
    names_a = [f"Block_{k}" for k in range(4)]
    names_b = [f"Block_{k}" for k in range(5)]
    pairs = align(a, b, names_a, names_b)
    assert matched(pairs) == [(k, k) for k in range(4)]
    assert pairs[-1] == (None, 4)


def test_names_pick_the_matching_instance_inside_the_quadratic_part():
    # Keys differ at both ends, so the middle goes through the DP; the names
    # decide which of the two `X` on the right pairs with the single `X`.
    a = ["A", "X", "B"]
    b = ["C", "X", "X", "D"]
    pairs = align(a, b, ["A", "X_1", "B"], ["C", "X_0", "X_1", "D"])
    assert (1, 2) in pairs and (None, 1) in pairs


def test_without_names_the_earliest_pairing_wins():
    pairs = align(["P", "X", "Q"], ["R", "X", "X", "S"])
    assert (1, 1) in pairs and (None, 2) in pairs


def test_keys_may_be_tuples():
    a = [("module", "Linear"), ("backward", "backward"), ("optimizer", "Optimizer.step")]
    b = [("data_loading", "enumerate(DataLoader)"), ("module", "Linear"), ("backward", "backward"), ("optimizer", "Optimizer.step")]
    assert matched(align(a, b)) == [(0, 1), (1, 2), (2, 3)]


def test_names_must_match_keys_length():
    with pytest.raises(ValueError):
        align(["A"], ["A"], ["A", "B"], ["A"])


@pytest.mark.parametrize("seed", range(40))
def test_random_sequences_reach_the_lcs_length(seed):
    rng = random.Random(seed)
    alphabet = "ABCD"[: rng.randint(1, 4)]
    a = [rng.choice(alphabet) for _ in range(rng.randint(0, 25))]
    b = [rng.choice(alphabet) for _ in range(rng.randint(0, 25))]
    pairs = align(a, b)
    check_valid(pairs, a, b)
    assert len(matched(pairs)) == lcs_length(a, b)


def test_difflib_fallback_for_huge_levels(monkeypatch):
    monkeypatch.setattr(align_mod, "MAX_DP_CELLS", 10)
    a = ["S"] + ["A", "B", "C"] * 10 + ["E"]
    b = ["T"] + ["A", "B", "C"] * 5 + ["X"] + ["A", "B", "C"] * 5 + ["F"]
    pairs = align(a, b)
    check_valid(pairs, a, b)
    # One insertion: still everything else matched.
    assert len(matched(pairs)) == 30


def test_long_levels_stay_fast():
    import time

    a = [f"M{k % 7}" for k in range(1500)]
    b = list(a)
    b.insert(700, "New")
    del b[100]
    b[1200] = "Other"
    t0 = time.perf_counter()
    pairs = align(a, b)
    elapsed = time.perf_counter() - t0
    check_valid(pairs, a, b)
    assert len(matched(pairs)) == lcs_length(a, b)
    assert elapsed < 2.0
