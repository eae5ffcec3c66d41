"""A run with only a Kineto trace still gets a data-wait split, from the
profiler's DataLoader annotations; checked against torch's own
key_averages() for those annotations."""
from __future__ import annotations

import glob

import pytest

from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.analysis.statistics.from_trace import steps_from_trace
from tb_pipeline_plugin.readers import PipelineTables, load_pipeline_run
from tb_pipeline_plugin.trace import load_trace
from tb_pipeline_plugin.trace.link import link


def test_trace_only_run_gets_a_data_wait_split(recorded_logdir, recorded_profiles):
    run = recorded_logdir / "slow_loader"  # DataLoader 20 ms per batch
    assert load_pipeline_run(str(run)) is None  # no statistics recorded
    [path] = glob.glob(str(run / "*.pt.trace.json*"))
    steps = steps_from_trace(link(load_trace(path)))
    r = report(PipelineTables(source="trace", steps=steps))
    loader = [e for e in recorded_profiles["slow_loader"].key_averages() if e.key.startswith("enumerate(DataLoader)")]
    oracle_us = sum(e.cpu_time_total for e in loader) / sum(e.count for e in loader)
    assert r["split"]["steps"] == len(steps) > 0
    assert r["split"]["data_wait_s"] * 1e6 == pytest.approx(oracle_us, rel=0.05)
    assert r["input_bound"]["verdict"] == "yes"
    assert (steps["data_wait_s"] + steps["compute_s"] + steps["other_s"] - steps["duration_s"]).abs().max() < 1e-9
