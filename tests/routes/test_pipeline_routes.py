"""`pipeline` and `diff/pipeline` through the real TensorBoard app, on
statistics recorded here with the real Recorder; numbers checked against an
independent read of the JSON lines (json.loads, sums by hand)."""
from __future__ import annotations

import glob
import json
import shutil
from pathlib import Path
import time

import pytest

from conftest import PLUGIN_PREFIX, wait_ready
from support.json_oracle import settled_steps
from support.recordings import recording
from support.route_answers import answer as _get, answer_when_ready as _get_ready
from tb_pipeline_plugin.record import Recorder

STEPS = 12
WAIT_S = {"slow": 0.012, "fast": 0.001}
COMPUTE_S = 0.004


def _record(logdir, run: str, wait_s: float, every_other_checkpoint: bool) -> None:
    def batches():
        for i in range(STEPS):
            time.sleep(wait_s)  # the loader's work, seen by the step as data wait
            yield i

    with Recorder(str(logdir), run, host_interval_s=0.05) as rec:
        for i in rec.wrap(batches()):
            time.sleep(COMPUTE_S)
            with rec.callback("log"):
                time.sleep(0.0005)
            if every_other_checkpoint and i % 2 == 0:
                with rec.callback("checkpoint"):
                    time.sleep(0.003)


@recording()
def recorded_runs(root: Path) -> None:
    """The slow and fast Recorder runs, made once (support/recordings.py)."""
    _record(root, "slow", WAIT_S["slow"], every_other_checkpoint=True)
    _record(root, "fast", WAIT_S["fast"], every_other_checkpoint=False)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory, recorded_logdir):
    root = recorded_runs.copy_to(tmp_path_factory.mktemp("pipeline_routes"))
    # A trace-only run (DataLoader annotations, 20 ms per batch).
    shutil.copytree(recorded_logdir / "slow_loader", root / "trace_only")
    return root


def _lines(run_dir) -> list[dict]:
    out = []
    for path in sorted(glob.glob(str(run_dir / "pipeline" / "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def _oracle(run_dir) -> dict:
    recorded = [r for r in _lines(run_dir) if r["type"] == "step"]
    assert len(recorded) == STEPS
    # The steps every figure counts, by docs/pipeline_format.md's warm-up rule, coded from the JSON lines (a step
    # of these sleep-timed loops takes 5-17 ms; on a busy box the first can take twice that).
    steps = settled_steps(recorded)
    total = sum(s["duration_s"] for s in steps)
    cb: dict[str, list[float]] = {}
    for s in steps:
        for name, t in s.get("callbacks_s", {}).items():
            cb.setdefault(name, []).append(t)
    return {
        "steps": len(steps),
        "data_wait_pct": 100 * sum(s["data_wait_s"] for s in steps) / total,
        "compute_pct": 100 * sum(s["compute_s"] for s in steps) / total,
        "callbacks_pct": 100 * sum(sum(s.get("callbacks_s", {}).values()) for s in steps) / total,
        "mean_step_s": total / len(steps),
        "steps_per_s": len(steps) / total,
        "callback_per_step_s": {k: sum(v) / len(steps) for k, v in cb.items()},
        "callback_calls": {k: len(v) for k, v in cb.items()},
    }


def test_runs_list_pipeline_kind(logdir, make_tb_client):
    client = make_tb_client(str(logdir))
    runs = {r["name"]: r for r in client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]}
    assert runs["slow"]["kinds"] == ["pipeline"] and runs["slow"]["workers"] == []
    assert runs["slow"]["status"] == "ready"  # pickable though it has no trace
    assert runs["trace_only"]["kinds"] == ["trace"]


@pytest.mark.parametrize("run", ["slow", "fast"])
def test_pipeline_numbers_match_the_json_lines(logdir, make_tb_client, run):
    client = make_tb_client(str(logdir))
    status, body = _get_ready(client, "pipeline", run=run)
    assert status == 200, body
    oracle = _oracle(logdir / run)
    split = body["split"]
    assert body["run"] == run and body["source"] == "recorder"
    assert split["steps"] == oracle["steps"] >= STEPS - 3
    for key in ("data_wait_pct", "compute_pct", "callbacks_pct", "mean_step_s"):
        assert split[key] == pytest.approx(oracle[key], rel=1e-9), key
    assert sum(split[k] for k in ("data_wait_pct", "compute_pct", "callbacks_pct", "other_pct")) == pytest.approx(100)
    assert body["throughput"]["steps_per_s"] == pytest.approx(oracle["steps_per_s"], rel=1e-9)
    assert sum(p["steps"] for p in body["throughput"]["series"]) == oracle["steps"]
    got = {c["name"]: c for c in body["callbacks"]}
    assert {k: got[k]["calls"] for k in got} == oracle["callback_calls"]
    for name, per_step in oracle["callback_per_step_s"].items():
        assert got[name]["per_step_s"] == pytest.approx(per_step, rel=1e-9)
    assert body["host"]["summary"]["samples"] == len(body["host"]["series"]) > 0
    assert body["meta"][0]["source"] == "recorder" and body["meta"][0]["pid"] > 0
    # The slow loader waits 12 ms per step against ~5 ms of work: input-bound.
    assert body["input_bound"]["verdict"] == ("yes" if run == "slow" else body["input_bound"]["verdict"])
    assert body["input_bound"]["next_step"]


def test_diff_pipeline_deltas_and_order(logdir, make_tb_client):
    client = make_tb_client(str(logdir))
    status, body = _get_ready(client, "diff/pipeline", baseline="slow", experimental="fast")
    assert status == 200, body
    b, e = _oracle(logdir / "slow"), _oracle(logdir / "fast")
    rows = {r["metric"]: r for r in body["summary"]}
    wait = rows["split.data_wait_pct"]
    assert wait["baseline"] == pytest.approx(b["data_wait_pct"], rel=1e-9)
    assert wait["delta"] == pytest.approx(e["data_wait_pct"] - b["data_wait_pct"], rel=1e-9)
    assert wait["delta"] < 0  # the fast loader waits less
    assert body["baseline_report"]["input_bound"]["verdict"] == "yes"
    # Callbacks joined on (name, kind): checkpoint only in the baseline; largest |delta per step| first.
    cbs = body["callbacks"]
    deltas = [abs(r["delta_per_step_s"]) for r in cbs]
    assert deltas == sorted(deltas, reverse=True)
    by = {r["name"]: r for r in cbs}
    assert by["checkpoint"]["experimental_calls"] == 0
    assert by["checkpoint"]["delta_per_step_s"] == pytest.approx(-b["callback_per_step_s"]["checkpoint"], rel=1e-9)
    assert by["log"]["delta_per_step_s"] == pytest.approx(
        e["callback_per_step_s"]["log"] - b["callback_per_step_s"]["log"], rel=1e-9, abs=1e-12)
    assert cbs[0]["name"] == "checkpoint"
    assert body["stages"] == []  # no SPDL pipeline in these runs


def test_trace_only_run_gets_its_split_from_the_trace(logdir, make_tb_client, recorded_profiles):
    client = make_tb_client(str(logdir))
    status, body = _get_ready(client, "pipeline", run="trace_only")
    assert status == 200, body
    assert body["source"] == "trace"
    loader = [a for a in recorded_profiles["slow_loader"].key_averages() if a.key.startswith("enumerate(DataLoader)")]
    oracle_us = sum(a.cpu_time_total for a in loader) / sum(a.count for a in loader)
    assert body["split"]["data_wait_s"] * 1e6 == pytest.approx(oracle_us, rel=0.05)
    assert body["input_bound"]["verdict"] == "yes"
    # A pair of a trace-only run and a recorded one compares too.
    status, diff = _get_ready(client, "diff/pipeline", baseline="trace_only", experimental="fast")
    assert status == 200, diff
    assert diff["baseline_report"]["source"] == "trace" and diff["experimental_report"]["source"] == "recorder"


def test_malformed_lines_become_warnings_with_line_numbers(logdir, tmp_path, make_tb_client):
    shutil.copytree(logdir / "slow", tmp_path / "damaged")
    kept = _oracle(tmp_path / "damaged")["steps"]
    [path] = glob.glob(str(tmp_path / "damaged" / "pipeline" / "*.jsonl"))
    with open(path, encoding="utf-8") as f:
        n = sum(1 for _ in f)
    with open(path, "a", encoding="utf-8") as f:
        f.write("{not json at all\n")
        f.write('{"type": "step", "step": "x"}\n')
    client = make_tb_client(str(tmp_path))
    status, body = _get_ready(client, "pipeline", run="damaged")
    assert status == 200, body
    assert body["split"]["steps"] == kept  # the good lines still count
    text = " ".join(body["warnings"])
    assert f"line {n + 1}" in text and f"line {n + 2}" in text, body["warnings"]


def test_appended_while_served_reloads_and_never_errors(logdir, tmp_path, make_tb_client):
    shutil.copytree(logdir / "fast", tmp_path / "growing")
    [path] = glob.glob(str(tmp_path / "growing" / "pipeline" / "*.jsonl"))
    steps = [r for r in _lines(tmp_path / "growing") if r["type"] == "step"]
    client = make_tb_client(str(tmp_path))
    kept = _oracle(tmp_path / "growing")["steps"]
    assert _get_ready(client, "pipeline", run="growing")[1]["split"]["steps"] == kept
    last = steps[-1]
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({**last, "step": last["step"] + 1, "wall_start_s": last["wall_start_s"] + 1}) + "\n")
        f.write(json.dumps({**last, "step": last["step"] + 2})[:40])  # a line still being written
        f.flush()
        status, body = _get_ready(client, "pipeline", run="growing")
    assert status == 200, body
    assert body["split"]["steps"] == kept + 1


def test_undecodable_composer_trace_is_422_with_the_reason(tmp_path, make_tb_client):
    run = tmp_path / "composer_run"
    run.mkdir()
    # Composer's event names, but the JSON breaks off inside the event list.
    (run / "composer_trace.json").write_text('{"traceEvents": [{"name": "event/batch", "ph": "X", "ts": [}')
    client = make_tb_client(str(tmp_path))
    runs = {r["name"]: r for r in client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]}
    assert "pipeline" in runs["composer_run"]["kinds"]
    status, body = _get_ready(client, "pipeline", run="composer_run")
    assert status == 422, body
    assert "composer_trace.json" in body["error"] and body["status"] == 422


@pytest.mark.parametrize("query,status", [
    ("", 400), ("run=", 400), ("run=..%2Fx", 400), ("run=nope", 404), ("run=slow&worker=x", 400),
])
def test_pipeline_bad_requests(logdir, make_tb_client, query, status):
    client = make_tb_client(str(logdir))
    resp = client.get(f"{PLUGIN_PREFIX}/pipeline?{query}")
    assert resp.status_code == status, resp.get_data(as_text=True)
    assert resp.get_json()["status"] == status


def test_diff_pipeline_unknown_side_is_404(logdir, make_tb_client):
    client = make_tb_client(str(logdir))
    status, body = _get(client, "diff/pipeline", baseline="slow", experimental="nope")
    assert status == 404 and "nope" in body["error"]
