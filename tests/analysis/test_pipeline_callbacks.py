"""Callbacks count over the steps every figure counts: a recording's warm-up step, left out of the split,
takes its callbacks with it, so calls and seconds per step are of the same steps (a slow first step of a
sleep-timed loop on a busy CI box once gave 12 `log` calls over 11 steps)."""
from __future__ import annotations

import time

from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.readers.run import PipelineReader
from tb_pipeline_plugin.record import Recorder

STEPS = 10


def _record(logdir, warm_up: bool) -> None:
    with Recorder(str(logdir), "run", host_interval_s=0.05) as rec:
        for i in rec.wrap(range(STEPS)):
            slow = warm_up and i == 0
            time.sleep(0.05 if slow else 0.004)  # ten times the loop's pace: warm-up by any reading
            with rec.callback("log"):
                time.sleep(0.003 if slow else 0.0005)


def test_a_warm_up_steps_callbacks_are_left_out_with_it(tmp_path):
    _record(tmp_path, warm_up=True)
    tables = PipelineReader(str(tmp_path / "run")).read()
    recorded = tables.steps.sort_values("wall_start_s")
    body = report(tables)
    assert body["split"]["steps"] == STEPS - 1
    [log] = [c for c in body["callbacks"] if c["name"] == "log"]
    assert log["calls"] == STEPS - 1
    # Oracle from the recorded steps, by hand: the later steps' callback seconds over their number.
    later = tables.callbacks[tables.callbacks["step"].isin(recorded["step"].iloc[1:])]
    assert abs(log["per_step_s"] - later["time_s"].sum() / (STEPS - 1)) < 1e-12
    # The slowest call is the later steps' slowest, not the warm-up's: by the table, since a 0.5 ms sleep has
    # taken over 3 ms on a busy CI box, so no fixed bound tells the two apart.
    assert abs(log["max_s"] - later["time_s"].max()) < 1e-12


def test_without_warm_up_every_call_counts(tmp_path):
    _record(tmp_path, warm_up=False)
    tables = PipelineReader(str(tmp_path / "run")).read()
    body = report(tables)
    kept = body["split"]["steps"]
    [log] = [c for c in body["callbacks"] if c["name"] == "log"]
    assert log["calls"] == kept
