"""Two groups of diagnostic recordings compared on real recordings kept in tests/data/diagnostic_null_groups/
(record.py there: the real engine on samples/diagnostic_sample.py, levels 1 and 2, on the shared 2-core box,
and what the box was doing), pooled and compared as the `diff/diagnostic` route does.

The same code as two groups never reads "changed" and its best-QPS intervals hold 1, however six recordings
are split into two groups of three; the level's interval rests on that level's own recordings, since the
recordings of a sleeping stage and of a Python loop scatter five to twenty times apart; real changes (a stage
made GIL-bound, a sleep twice as long) are still found. Each test failed on the method before it
(docs/diagnostic_format.md, "A group of recordings"): one between-recordings spread pooled over every stage
and level, with every level counted as degrees of freedom of its own.
"""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tb_pipeline_plugin.analysis.diagnostic.group import pool_diagnostic
from tb_pipeline_plugin.diff.diagnostic.compare import compare_diagnostic
from tb_pipeline_plugin.readers.diagnostic import read_diagnostic

DATA = Path(__file__).resolve().parents[1] / "data" / "diagnostic_null_groups"
RESULTS = Path("diagnostic") / "diagnostic.jsonl"
# Six recordings of the baseline. Split (r2, r15, r1) vs (r19, r16, r24), the method before read decode's best
# thread QPS x1.35 [1.09, 1.66] and best process QPS x1.30 [1.05, 1.60] with decode not crowded: the shape of
# the clean clone's CI failure (decode's thread ratio 1.06-1.75).
SIX = ("r2", "r15", "r1", "r19", "r16", "r24")
# Split so, the GIL share's spread pooled over stages read augment "changed": GIL held 7 % vs 14 % (± 7 points).
GIL_NULL_PAIR = (("r5", "r14", "r1"), ("r20", "r16", "r19"))


def _group(variant: str, names) -> object:
    names = list(names)
    return pool_diagnostic([read_diagnostic(DATA / variant / n) for n in names], [f"{variant}/{n}" for n in names])


def _compare(base, exp) -> tuple[dict, set]:
    d = compare_diagnostic(base, exp)
    crowded = {s["stage"] for side in ("baseline", "experimental") for s in d[f"{side}_report"]["stages"]
               if s["crowded"]}
    return {r["stage"]: r for r in d["stages"]}, crowded


def _qps(variant: str, name: str) -> dict[tuple, float]:
    """(stage, executor, level) -> QPS, from the JSON lines with json alone."""
    lines = (DATA / variant / name / RESULTS).read_text().splitlines()
    return {(r["stage"], r["executor"], r["concurrency"]): r["qps"] for r in map(json.loads, lines)
            if r["type"] == "sweep"}


def test_the_same_code_as_two_groups_holds_one_however_split():
    splits = [(b, tuple(n for n in SIX if n not in b)) for b in itertools.combinations(SIX, 3) if SIX[0] in b]
    assert len(splits) == 10
    for b, e in splits:
        rows, crowded = _compare(_group("baseline", b), _group("baseline", e))
        for stage, row in rows.items():
            assert row["change"] in ("same", "within_noise", "machine_busy"), (b, e, stage, row["change_reason"])
            for what in ("thread", "process"):
                assert row[f"best_{what}_concurrency_change"] != "changed", (b, e, stage, what)
                low, high = row[f"best_{what}_qps_ratio_low"], row[f"best_{what}_qps_ratio_high"]
                # Crowded stages say as much about other processes (machine_busy), as in test_group_diagnostic.
                assert stage in crowded or low <= 1.0 <= high, (b, e, stage, what, low, high)
        if (b, e) == (SIX[:3], SIX[3:]):
            decode = rows["decode"]
            assert "decode" not in crowded
            assert decode["best_thread_qps_ratio"] == pytest.approx(1.35, abs=0.005)
            assert decode["best_process_qps_ratio"] == pytest.approx(1.30, abs=0.005)


def test_a_level_is_judged_by_its_own_recordings():
    names = SIX[:3]
    qps = [_qps("baseline", n) for n in names]
    spread = {k: float(np.std(np.log([q[k] for q in qps]), ddof=1)) for k in qps[0]}
    # The measured fact behind the rule: a Python loop scatters between recordings by far more than a sleep.
    assert spread[("decode", "thread", 2)] > 5 * spread[("fetch", "thread", 2)]
    report = compare_diagnostic(_group("baseline", names), _group("baseline", SIX[3:]))["baseline_report"]
    half = {(s["stage"], c["executor"], p["concurrency"]): math.log(p["qps_high"] / p["qps"])
            for s in report["stages"] for c in s["curves"] for p in c["points"]}
    # One spread pooled over every level gave every level the same interval; each level's own gives decode's
    # twice fetch's at least (fetch's own spread is under the floor between recordings, decode's far above it).
    assert half[("decode", "thread", 2)] > 2 * half[("fetch", "thread", 2)]
    low, high = (100 * math.expm1(min(spread.values())), 100 * math.expm1(max(spread.values())))
    assert f"{low:.1f} % to {high:.1f} % by level" in report["group"]["note"]


def test_the_gil_share_of_two_groups_of_the_same_code_is_judged_by_the_stage_own_recordings():
    rows, _ = _compare(_group("baseline", GIL_NULL_PAIR[0]), _group("baseline", GIL_NULL_PAIR[1]))
    augment = rows["augment"]
    assert "GIL held 7 % vs 14 %" in augment["change_reason"]
    assert augment["change"] != "changed" and not augment["verdict_changed"], augment["change_reason"]


def test_real_changes_between_groups_are_still_found():
    base = _group("baseline", SIX[:3])
    rows, _ = _compare(base, _group("gil_augment", ("r1", "r2", "r3")))
    assert rows["augment"]["change"] == "changed" and "GIL held" in rows["augment"]["change_reason"]
    assert rows["decode"]["change"] != "changed" and rows["fetch"]["change"] != "changed"
    # fetch sleeps twice as long: its best QPS halves, beyond an interval measured on its own quiet recordings;
    # decode moved from a Python loop to hashlib, which releases the GIL.
    rows, _ = _compare(base, _group("experimental", ("r1", "r2", "r3")))
    for what in ("thread", "process"):
        assert rows["fetch"][f"best_{what}_qps_ratio"] == pytest.approx(0.5, abs=0.03)
        assert rows["fetch"][f"best_{what}_qps_ratio_high"] < 0.7
    assert rows["decode"]["change"] == "changed" and "GIL held" in rows["decode"]["change_reason"]
