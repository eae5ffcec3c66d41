"""Each profiled step on the device's clock (analysis/device_steps.py),
against an oracle computed straight from the trace JSON: a step's device
work is every kernel, memcpy and memset whose launching runtime or driver
call (by `correlation`) lies inside the step's ProfilerStep annotation.

The H200 pairs run ahead of the device (no synchronization in the loop):
their first profiled step also runs work launched before the window, which
belongs to no step. The steady state of each run, from its pipeline
statistics (the last 8 recorded steps before the loop's end,
`../shared/traces/h200/`), is what a device-bound run's device step times
must match: amp fp32 152.3 ms, compile eager 152.4 ms, compiled 146.7 ms.
"""
from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest

from support.json_oracle import category, device_step_intervals, launches_by_correlation, load_events
from tb_pipeline_plugin.analysis.processor import TraceProcessor

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
H200 = SHARED / "h200"
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
TRACES = {
    f"{pair}/{side}": glob.glob(str(H200 / pair / side / "*.pt.trace.json.gz"))[0]
    for pair in ("amp", "compile") for side in ("baseline", "experimental")
} | {
    "kineto/resnet50_num_workers_0": sorted(glob.glob(str(SHARED / "kineto" / "resnet50_num_workers_0" / "*.gz")))[0],
    "hta/single_rank": glob.glob(str(SHARED / "hta" / "single_rank" / "*.gz"))[0],
}


@pytest.fixture(scope="module")
def loaded():
    return {name: TraceProcessor.load(path) for name, path in TRACES.items()}


@pytest.mark.parametrize("name", list(TRACES))
def test_device_steps_are_the_traces(loaded, name):
    got = loaded[name].device_steps()
    want = device_step_intervals(TRACES[name])
    assert list(got["name"]) == [o["name"] for o in want]
    assert got["activities"].tolist() == [o["count"] for o in want]
    for row, o in zip(got.itertuples(), want):
        if not o["count"]:
            assert np.isnan(row.device_step_us)
            continue
        assert row.device_start_us == pytest.approx(o["first"], abs=0.01)
        assert row.device_end_us == pytest.approx(o["last"], abs=0.01)
        assert row.work_us == pytest.approx(o["work"], rel=1e-9, abs=0.01)
        assert row.device_step_us == pytest.approx(o["step_us"], abs=0.02)


# (run, steady-state step time from the run's pipeline statistics, ms)
DEVICE_BOUND = [("amp/baseline", 152.3), ("compile/baseline", 152.4), ("compile/experimental", 146.7)]


@pytest.mark.parametrize("name,steady_ms", DEVICE_BOUND)
def test_a_device_bound_runs_steps_are_its_steady_state(loaded, name, steady_ms):
    tp = loaded[name]
    device_ms = tp.device_steps()["device_step_us"].to_numpy() / 1000.0
    assert device_ms == pytest.approx(np.full(len(device_ms), steady_ms), rel=0.02)
    # The first profiled step also ran work launched before the window: its
    # annotation is several steps long, but that work is no step's, so the
    # step's window starts where that work ended (trace/link.py) and on the
    # device's clock the step is one step long.
    window_ms = np.array([s["duration_us"] for s in tp.overview()["steps"]]) / 1000.0
    if name == "amp/baseline":
        _, events = load_events(TRACES[name])
        first = min((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                     and category(e) == "user_annotation"), key=lambda e: e["ts"])
        launches = launches_by_correlation(events)
        earlier_end = max(e["ts"] + e["dur"] for e in events if e.get("ph") == "X" and category(e) in DEVICE_CATS
                          and launches.get((e.get("args") or {}).get("correlation")) is None)
        assert first["dur"] / 1000.0 > 2 * steady_ms
        assert window_ms[0] == pytest.approx((first["ts"] + first["dur"] - earlier_end) / 1000.0, abs=0.01)
        assert window_ms[0] < 1.2 * steady_ms
        assert device_ms[0] == pytest.approx(steady_ms, rel=0.02)


def test_a_trace_without_device_work_has_no_device_steps():
    tp = TraceProcessor.load(glob.glob(str(SHARED / "hta" / "cpu_only" / "*.gz"))[0])
    steps = tp.device_steps()
    assert len(steps) == len(tp.overview()["steps"])
    assert (steps["activities"] == 0).all() and steps["device_step_us"].isna().all()
