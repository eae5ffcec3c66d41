"""Why the device waits (analysis/device_idle.py) and what a run asks of
its GPU each step (analysis/gpu_work.py), issue 45, on the shared H200
traces against oracles computed straight from the trace JSON: a step's idle
time is its window (support/json_oracle.py:step_windows) minus the union of
its kernels, memcpys and memsets; counts are of the events whose launch
(by `correlation`) or start lies in a step's ProfilerStep annotation.
"""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest

from support.json_oracle import DEVICE_WORK_CATEGORIES, category, launches_by_correlation, load_events, step_windows
from tb_pipeline_plugin.analysis.device_idle import CAUSES
from tb_pipeline_plugin.analysis.gpu_work import work_per_step
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.compare import compare

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200"
RUNS = [(p, s) for p in ("amp", "compile") for s in ("baseline", "experimental")]
pytestmark = pytest.mark.skipif(not H200.is_dir(), reason=f"H200 traces not found at {H200}")


def _trace(pair: str, side: str) -> str:
    return glob.glob(str(H200 / pair / side / "*.pt.trace.json.gz"))[0]


@pytest.fixture(scope="module")
def loaded():
    return {run: (TraceProcessor.load(_trace(*run)), load_events(_trace(*run))[1]) for run in RUNS}


def _idle_oracle(events: list[dict]) -> list[float]:
    intervals = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                       if e.get("ph") == "X" and category(e) in DEVICE_WORK_CATEGORIES)
    out = []
    for _, start, end in step_windows(events):
        busy, cursor = 0.0, start
        for s, e in intervals:
            s, e = max(s, cursor), min(e, end)
            if e > s:
                busy += e - s
                cursor = e
        out.append(end - start - busy)
    return out


@pytest.mark.parametrize("run", RUNS)
def test_idle_time_by_cause_adds_up_to_the_traces_idle_time(loaded, run):
    tp, events = loaded[run]
    ov = tp.overview()
    want = _idle_oracle(events)
    assert len(ov["steps"]) == len(want)
    for step, idle in zip(ov["steps"], want):
        causes = step["device_idle_us"]
        assert set(causes) == set(CAUSES) and all(v >= 0 for v in causes.values())
        assert sum(causes.values()) == pytest.approx(idle, rel=1e-6, abs=0.5), step["name"]
    assert sum(ov["device_idle_us"].values()) == pytest.approx(np.mean(want), rel=1e-6, abs=0.5)


def test_the_bound_of_each_amp_run(loaded):
    fp32, bf16 = loaded["amp", "baseline"][0].overview(), loaded["amp", "experimental"][0].overview()
    assert fp32["bound"]["bound"] == "device" and fp32["bound"]["idle_pct"] < 20
    assert bf16["bound"]["bound"] == "launch" and bf16["bound"]["idle_pct"] > 50
    assert bf16["bound"]["cause_pct"]["launch"] > 50


@pytest.mark.parametrize("run", RUNS)
def test_work_per_step_is_the_traces(loaded, run):
    tp, events = loaded[run]
    steps = [e for e in events if e.get("ph") == "X" and category(e) == "user_annotation"
             and str(e.get("name", "")).startswith("ProfilerStep#")]

    def inside(ts: float) -> bool:
        return any(s["ts"] <= ts < s["ts"] + s["dur"] for s in steps)

    launches = launches_by_correlation(events)
    kernels = sum(1 for e in events if e.get("ph") == "X" and category(e) == "kernel"
                  and (launch := launches.get((e.get("args") or {}).get("correlation"))) is not None
                  and inside(launch["ts"]))
    casts = sum(1 for e in events if e.get("ph") == "X" and category(e) == "cpu_op" and e["name"] == "aten::_to_copy"
                and inside(e["ts"]))
    got = work_per_step(tp.linked)
    assert got["kernels"] == round(kernels / len(steps), 1)
    assert got["casts"] == round(casts / len(steps), 1)
    assert got["graph_launches"] == 0  # no CUDA graphs in these runs


def test_what_changed_on_the_gpu_is_named():
    amp = compare(H200 / "amp" / "baseline", H200 / "amp" / "experimental").explanation
    keys = {d["key"]: d for d in amp["comparability"]}
    assert "precision" in keys and "autocast" in keys["precision"]["text"] and "casts_per_step" not in keys
    assert "fp32 → bf16" in amp["sentence"] and "autocast" in amp["sentence"] and "host-bound: launches" in amp["sentence"], amp["sentence"]
    comp = compare(H200 / "compile" / "baseline", H200 / "compile" / "experimental").explanation
    kernels = next(d for d in comp["comparability"] if d["key"] == "kernels_per_step")
    assert (kernels["baseline"], kernels["experimental"]) == ("474", "381") and "fuses" in kernels["text"]
    assert "fused kernels (474 → 381 kernels a step)" in comp["sentence"]
