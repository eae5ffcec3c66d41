"""Per-step samples of operators and kernels (analysis/per_step.py) against
the trace JSON, and the significance they give the diff table rows."""
from __future__ import annotations

import collections

import pytest

from support.json_oracle import category, launches_by_correlation, load_events
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.compare import compare
from tb_pipeline_plugin.diff.impls import plain
from tb_pipeline_plugin.diff.impls.tables import diff_kernels_impl, diff_operators_impl
from tb_pipeline_plugin.diff.pair import pair_of
from tb_pipeline_plugin.diff.tables import TableQuery


def _steps(events):
    return sorted((e for e in events if e.get("ph") == "X" and category(e) == "user_annotation"
                   and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])


def _step_index(steps, ts):
    return next((i for i, s in enumerate(steps) if s["ts"] <= ts < s["ts"] + s["dur"]), None)


def test_kernel_steps_match_trace_json(shared_traces):
    path = shared_traces / "trace_diff" / "control.json.gz"
    _, events = load_events(path)
    steps = _steps(events)
    launches = launches_by_correlation(events)
    want = collections.defaultdict(float)
    for k in events:
        if k.get("ph") == "X" and category(k) == "kernel":
            launch = launches.get((k.get("args") or {}).get("correlation"))
            i = _step_index(steps, launch["ts"]) if launch else None
            if i is not None:
                want[(k["name"], i)] += k["dur"]
    got = TraceProcessor.load(str(path)).kernel_steps()
    got = {(n, s): v for n, s, v in got.itertuples(index=False)}
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9)


def test_operator_steps_match_trace_json(recorded_logdir):
    import glob

    (path,) = glob.glob(str(recorded_logdir / "baseline" / "*.pt.trace.json*"))
    _, events = load_events(path)
    steps = _steps(events)
    want = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and category(e) == "cpu_op":
            i = _step_index(steps, e["ts"])
            if i is not None:
                want[(e["name"], i)] += e["dur"]
    got = TraceProcessor.load(path).operator_steps("name", "host_total_us")
    got = {(n, s): v for n, _, s, v in got.itertuples(index=False)}
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-6)


def test_table_rows_carry_significance(shared_traces):
    c = compare(shared_traces / "trace_diff" / "control.json.gz", shared_traces / "trace_diff" / "test.json.gz")
    out = plain(diff_kernels_impl(pair_of(c.baseline, c.experimental), TableQuery(limit=20)))
    verdicts = [r["significance"]["verdict"] for r in out["rows"]]
    assert "significant" in verdicts
    # The delta judged is that of the per-step means (checked against the JSON above).
    b_sum = c.baseline.kernel_steps().groupby("name")["total_us"].sum()
    e_sum = c.experimental.kernel_steps().groupby("name")["total_us"].sum()
    for r in out["rows"]:
        sig = r["significance"]
        assert sig["baseline_steps"] == sig["experimental_steps"] == 6
        want = (e_sum.get(r["name"], 0.0) - b_sum.get(r["name"], 0.0)) / 6
        assert sig["delta"] == pytest.approx(want, abs=1e-3)
    # The same run on both sides: every row within noise.
    same = plain(diff_operators_impl(pair_of(c.baseline, c.baseline), TableQuery(limit=50)))
    assert {r["significance"]["verdict"] for r in same["rows"]} == {"within_noise"}
    # Inside a piece (one step's part) there is no spread to judge by.
    inside = plain(diff_kernels_impl(pair_of(c.baseline, c.experimental), TableQuery(limit=5, path="0")))
    assert all(r["significance"] is None for r in inside["rows"])
