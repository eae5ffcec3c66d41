"""Launch health (analysis/launch.py) on HTA's real GPU pair, against an
oracle computed straight from the trace JSON, and its diff rows."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from support.json_oracle import category, launches_by_correlation, load_events
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.compare import compare


def _oracle(path) -> list[dict]:
    """Per ProfilerStep (kernels by the step window holding their launch):
    launch delays, idle time / gaps between kernels per device, and the gaps
    whose next kernel was launched after the gap began."""
    _, events = load_events(path)
    steps = sorted((e for e in events if e.get("ph") == "X" and category(e) == "user_annotation"
                    and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    launches = launches_by_correlation(events)
    per_step = collections.defaultdict(list)
    for k in events:
        if k.get("ph") != "X" or category(k) != "kernel":
            continue
        launch = launches.get((k.get("args") or {}).get("correlation"))
        if launch is None:
            continue
        for i, s in enumerate(steps):
            if s["ts"] <= launch["ts"] < s["ts"] + s["dur"]:
                per_step[i].append((k, launch))
                break
    out = []
    for i in range(len(steps)):
        pairs = per_step[i]
        delays = [k["ts"] - launch["ts"] for k, launch in pairs]
        idle = hb_idle = 0.0
        gaps = hb_gaps = 0
        by_device = collections.defaultdict(list)
        for k, launch in pairs:
            by_device[k["args"].get("device")].append((k["ts"], k["ts"] + k["dur"], launch["ts"]))
        for kernels in by_device.values():
            kernels.sort()
            reach = kernels[0][1]
            for start, end, launched in kernels[1:]:
                if start > reach:
                    idle += start - reach
                    gaps += 1
                    if launched > reach:
                        hb_gaps += 1
                        hb_idle += launched - reach
                reach = max(reach, end)
        out.append({"kernels": len(pairs), "launch_delay_mean_us": float(np.mean(delays)) if delays else None,
                    "launch_delay_p90_us": float(np.percentile(delays, 90)) if delays else None,
                    "idle_us": idle, "gaps": gaps, "host_bound_gaps": hb_gaps, "host_bound_idle_us": hb_idle})
    return out


@pytest.mark.parametrize("side", ["control", "test"])
def test_launch_health_matches_trace_json(shared_traces, side):
    path = shared_traces / "trace_diff" / f"{side}.json.gz"
    frame = TraceProcessor.load(str(path)).launch_health()
    oracle = _oracle(path)
    assert len(frame) == len(oracle) == 6
    for row, want in zip(frame.to_dict("records"), oracle):
        assert want["kernels"] > 1000
        for key, value in want.items():
            assert row[key] == pytest.approx(value, rel=1e-9, abs=1e-6), key


def test_launch_rows_of_the_pair(shared_traces):
    """Control is host-bound (its device waits for launches), test queues
    work far ahead: both are significant, in the right direction."""
    c = compare(shared_traces / "trace_diff" / "control.json.gz", shared_traces / "trace_diff" / "test.json.gz")
    rows = {r["metric"]: r for r in c.explanation["launch"]}
    assert rows["launch_delay_mean_us"]["delta"] > 0
    assert rows["host_bound_idle_us"]["delta"] < 0
    for metric in ("launch_delay_mean_us", "host_bound_idle_us", "host_bound_gaps"):
        sig = rows[metric]["significance"]
        assert sig["verdict"] == "significant" and sig["baseline_steps"] == sig["experimental_steps"] == 6


def test_cpu_only_runs_have_no_launch_rows(recorded_logdir):
    c = compare(recorded_logdir / "baseline", recorded_logdir / "experimental")
    assert c.explanation["launch"] == []
    assert c.baseline.launch_health()["kernels"].sum() == 0
