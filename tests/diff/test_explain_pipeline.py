"""Pipeline statistics in the explanation: runs recorded with
a trace (torch.profiler) and pipeline statistics (the Recorder, an SPDL
pipeline feeding the loop) in one run directory; a pair whose loading stage
is slowed must get a significant data-wait clause, a pair without recorded
statistics no pipeline part (the runs: support/pipeline_runs.py). Numbers against an independent read of the
JSON lines; through the real TensorBoard app, the notebook API and the CLI."""
from __future__ import annotations

import glob
import io
import json
import os
import time

import numpy as np
import pytest

from support.pipeline_runs import STEPS, recorded_runs
from support.json_oracle import settled_steps
from conftest import PLUGIN_PREFIX
from tb_pipeline_plugin.cli import build_parser, run_diff
from tb_pipeline_plugin.compare import compare
from tb_pipeline_plugin.diff.delta import delta_pct


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return recorded_runs.copy_to(tmp_path_factory.mktemp("explain_pipeline"))


def _steps(run_dir) -> list[dict]:
    out = []
    for path in sorted(glob.glob(os.path.join(run_dir, "pipeline", "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            out += [r for r in map(json.loads, filter(str.strip, f)) if r["type"] == "step"]
    return out


def _get_ready(client, route: str, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    deadline = time.monotonic() + 120
    while True:
        resp = client.get(f"{PLUGIN_PREFIX}/{route}?{query}")
        if resp.status_code != 409 or time.monotonic() > deadline:
            return resp.status_code, resp.get_json()
        time.sleep(0.05)


def test_slowed_loader_gives_a_significant_data_wait_clause(logdir, make_tb_client):
    client = make_tb_client(str(logdir))
    status, body = _get_ready(client, "diff/explain", baseline="fast", experimental="slow")
    assert status == 200, body
    part = body["pipeline"]
    assert part is not None
    w = part["data_wait"]
    # Oracle: the step records as written, read with json.loads, warm-up left out by the documented rule.
    for side, run in (("baseline", "fast"), ("experimental", "slow")):
        steps = settled_steps(_steps(logdir / run))
        assert w["significance"][f"{side}_steps"] == len(steps) >= STEPS - 3
        assert w[f"{side}_us"] == pytest.approx(1e6 * np.mean([s["data_wait_s"] for s in steps]), abs=0.01)
        assert w[f"{side}_step_us"] == pytest.approx(1e6 * np.mean([s["duration_s"] for s in steps]), abs=0.01)
    assert w["delta_us"] == pytest.approx(w["experimental_us"] - w["baseline_us"], abs=0.01)
    assert w["significance"]["verdict"] == "significant", w
    # Loading 30 ms per item behind one worker: most of a ~10 ms step waits.
    assert w["delta_us"] > 10_000
    assert part["input_bound"]["experimental"] == "yes" and part["input_bound"]["baseline"] != "yes"
    assert part["input_bound"]["changed"] is True
    stage = part["stage"]
    # The slowed stage, not its neighbours whose throughput follows it.
    assert stage is not None and stage["stage"] == "load"
    assert stage["experimental_task_mean_s"] - stage["baseline_task_mean_s"] > 0.02
    assert stage["delta_qps_pct"] < -10  # slower loading: fewer items per second
    # The delta % of every other table (diff/delta.py), with its 2 decimals.
    for field, b, e in (("delta_task_mean_pct", stage["baseline_task_mean_s"], stage["experimental_task_mean_s"]),
                        ("delta_qps_pct", stage["baseline_qps"], stage["experimental_qps"])):
        assert stage[field] == delta_pct(b, e - b)
    assert "the pipeline's data wait grew from" in body["sentence"]
    assert "(significant) and the run became input-bound" in body["sentence"]
    assert part["clause"] in body["sentence"] and body["sentence"].endswith(part["clause"] + ".")
    assert "stage load's task time grew from" in part["clause"] and "its throughput fell" in part["clause"]


def test_pair_without_pipeline_statistics_has_no_pipeline_part(logdir, make_tb_client):
    client = make_tb_client(str(logdir))
    for b, e in (("plain_a", "plain_b"), ("fast", "plain_b")):
        status, body = _get_ready(client, "diff/explain", baseline=b, experimental=e)
        assert status == 200, body
        assert body["pipeline"] is None
        assert "pipeline" not in body["sentence"]


def test_notebook_api_and_cli_carry_the_clause(logdir, make_tb_client):
    c = compare(logdir / "fast", logdir / "slow")
    part = c.explanation["pipeline"]
    assert part is not None and part["data_wait"]["significance"]["verdict"] == "significant"
    # The same numbers as the route.
    client = make_tb_client(str(logdir))
    _, body = _get_ready(client, "diff/explain", baseline="fast", experimental="slow")
    assert part == body["pipeline"] and c.explanation["sentence"] == body["sentence"]
    # A trace file selects its run directory's statistics too.
    [trace] = glob.glob(str(logdir / "slow" / "*.pt.trace.json*"))
    assert compare(logdir / "fast", trace).explanation["pipeline"] == part
    assert compare(logdir / "plain_a", logdir / "slow").explanation["pipeline"] is None

    out = io.StringIO()
    assert run_diff(build_parser().parse_args(["diff", str(logdir / "fast"), str(logdir / "slow")]), out) == 0
    text = out.getvalue()
    assert part["clause"] in text
    assert "Pipeline statistics (recorded steps)" in text and "Data wait per step" in text
