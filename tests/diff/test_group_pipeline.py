"""A group of recordings as one run for pipeline statistics: `tb-pipeline
record --repeat 3` of an unmodified DataLoader + SPDL script (each recording
its own process), read through the real TensorBoard app and the CLI.

Oracles are the recordings' own JSONL records, read here with json alone:
the pooled split is every recording's steps, the pooled stage is SPDL's
final numbers added up. A null pair (3 + 3 of one configuration) shows no
significant change, measured across the recordings; an input-bound group
against a compute-bound one reads the verdicts and a significant data wait.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from support.group_runs import get_ready, groups_in_the_browser, tb_client
from support.recordings import recording
from support.json_oracle import settled_steps
from support.null_verdicts import assert_null
from support.browser import browser, page  # noqa: F401 - fixtures
from tb_pipeline_plugin.cli import main as cli_main
from tb_pipeline_plugin.compare import compare
from tb_pipeline_plugin.diff.significance import method as S

REPO = Path(__file__).resolve().parents[2]
N = 3
BATCHES = 16
SPDL_ITEMS = 12  # iterating the SPDL pipeline is a loader too: fewer items than batches keep the DataLoader main

# Reads its data-loading delay from the environment: one script, two configurations.
SCRIPT = textwrap.dedent(f"""
    import os, time, torch
    from spdl.pipeline import PipelineBuilder
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
    from torch.utils.data import DataLoader, Dataset

    DELAY_S = float(os.environ["LOAD_DELAY_S"])
    SPDL_ITEMS = {SPDL_ITEMS}

    def decode(x):
        time.sleep(0.002)
        return x

    pipeline = PipelineBuilder().add_source(range(SPDL_ITEMS)).pipe(decode, concurrency=2, name="decode").add_sink(4).build(
        num_threads=2)
    with pipeline.auto_stop():
        assert sum(1 for _ in pipeline) == SPDL_ITEMS

    class Batches(Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(0)
            self.x, self.y = torch.randn({BATCHES}, 64, 8, generator=g), torch.randn({BATCHES}, 64, 1, generator=g)
        def __len__(self):
            return {BATCHES}
        def __getitem__(self, i):
            time.sleep(DELAY_S)
            return self.x[i], self.y[i]

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 256), nn.ReLU(), nn.Linear(256, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active={BATCHES - 4}, repeat=1),
                 on_trace_ready=tensorboard_trace_handler("traces")) as prof:
        for x, y in DataLoader(Batches(), batch_size=None, num_workers=0):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            time.sleep(0.1)  # a steady compute floor: loading's own 1.5-3 ms (loaded box) stays below 5 % of the step
            opt.step()
            prof.step()
""")
# Input-bound: the step waits ~100 ms for data beside ~100 ms of compute; the others: no wait to speak of.
DELAYS = {"base": 0.0, "same": 0.0, "slow": 0.1}


def _record_group(cwd: Path, run: str, delay_s: float) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), LOAD_DELAY_S=str(delay_s))
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", "logs", "--run", run,
           "--repeat", str(N), "--host-interval", "0.05", "--", sys.executable, "train.py"]
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@recording(one_core=True)
def recorded_groups(cwd: Path) -> Path:
    """`tb-pipeline record --repeat N` of SCRIPT for each of DELAYS, made once (support/recordings.py)."""
    (cwd / "train.py").write_text(SCRIPT)
    for run, delay in DELAYS.items():
        _record_group(cwd, run, delay)
    return cwd / "logs"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    return recorded_groups.copy_to(tmp_path_factory.mktemp("group_pipeline"))


def _records(run_dir: Path) -> list[dict]:
    out = []
    for path in sorted((run_dir / "pipeline").glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


@pytest.fixture(scope="module")
def client(logdir):
    with tb_client(logdir) as c:
        yield c


def test_a_group_is_listed_with_the_pipeline_its_recordings_have(client):
    runs = {r["name"]: r for r in get_ready(client, "runs")["runs"]}
    assert runs["base"]["recordings"] == ["base/r1", "base/r2", "base/r3"]
    assert runs["base"]["kinds"] == ["pipeline", "group"]


def test_pipeline_of_a_group_pools_its_recordings(logdir, client):
    """Split over every recording's steps; SPDL's stage figures added up;
    host samples from the recording named representative."""
    answer = get_ready(client, "pipeline", run="base")
    per_recording = [[r for r in _records(logdir / "base" / m) if r["type"] == "step"] for m in ("r1", "r2", "r3")]
    loaders = [r.get("loader", 0) for steps in per_recording for r in steps]
    main = max(set(loaders), key=loaders.count)  # the split's steps: the loader that fed most
    recorded = [[r for r in steps if r.get("loader", 0) == main] for steps in per_recording]
    assert sum(map(len, recorded)) == N * BATCHES
    # Each recording's warm-up left out by the documented rule (docs/pipeline_format.md).
    steps = [r for each in recorded for r in settled_steps(each)]
    assert answer["split"]["steps"] == len(steps)
    assert answer["split"]["steps"] + answer["split"]["warmup_steps"] == N * BATCHES
    duration = sum(r["duration_s"] for r in steps)
    assert answer["split"]["mean_step_s"] == pytest.approx(duration / len(steps), rel=1e-9)
    assert answer["split"]["data_wait_s"] == pytest.approx(sum(r["data_wait_s"] for r in steps) / len(steps), rel=1e-9)
    assert answer["split"]["compute_pct"] == pytest.approx(100 * sum(r["compute_s"] for r in steps) / duration,
                                                           rel=1e-9)
    assert answer["throughput"]["steps_per_s"] == pytest.approx(len(steps) / duration, rel=1e-9)
    assert answer["input_bound"]["verdict"] == "no"

    # The decode stage: each recording's final SPDL queue and task records, pooled.
    finals = {m: [r for r in _records(logdir / "base" / m) if r.get("final") and r.get("stage_name") == "decode"]
              for m in ("r1", "r2", "r3")}
    queues = [next(r for r in rs if r["type"] == "stage_queue") for rs in finals.values()]
    tasks = [next(r for r in rs if r["type"] == "stage_tasks") for rs in finals.values()]
    decode = next(s for s in answer["stages"] if s["stage_name"] == "decode")
    assert decode["items"] == sum(q["items"] for q in queues) >= N * SPDL_ITEMS
    assert decode["qps"] == pytest.approx(sum(q["items"] for q in queues) / sum(q["interval_s"] for q in queues))
    assert decode["tasks"] == sum(t["tasks"] for t in tasks)
    assert decode["task_mean_s"] == pytest.approx(
        sum(t["task_mean_s"] * t["tasks"] for t in tasks) / sum(t["tasks"] for t in tasks))

    group = answer["group"]
    assert [r["name"] for r in group["recordings"]] == ["base/r1", "base/r2", "base/r3"]
    for row in group["recordings"]:
        own = [r for r in _records(logdir / row["name"]) if r["type"] == "step" and r.get("loader", 0) == main]
        assert row["steps"] == BATCHES
        assert row["mean_step_s"] == pytest.approx(np.mean([r["duration_s"] for r in own]), rel=1e-9)
    means = {r["name"]: r["mean_step_s"] for r in group["recordings"]}
    assert group["representative"] == sorted(means, key=means.get)[1]  # the median recording
    rep_samples = [r for r in _records(logdir / group["representative"]) if r["type"] == "host"]
    assert answer["host"]["summary"]["samples"] == len(rep_samples) > 0
    assert group["representative"] in group["note"]


def test_null_groups_show_no_significant_pipeline_change(client):
    d = get_ready(client, "diff/pipeline", baseline="base", experimental="same")
    assert d["noise"]["source"] == "measured" and "measured across 3 + 3 recordings" in d["noise"]["note"]
    judged = [r for r in d["summary"] if r["significance"] is not None]
    assert {r["metric"] for r in judged} == {"split.mean_step_s", "split.data_wait_s", "split.compute_s",
                                            "split.callbacks_s", "split.other_s"}
    for row in judged:
        assert row["significance"]["baseline_recordings"] == N and row["significance"]["noise"] == "measured"
    decode = next(r for r in d["stages"] if r["stage_name"] == "decode")
    assert decode["significance"]["baseline_steps"] == N  # one sample per recording
    # At most one near miss among them: the 1 in 20 of a 95 % interval (null_verdicts.py).
    assert_null([r["significance"] for r in judged] + [decode["significance"]], str(d["summary"]))
    assert d["baseline_report"]["input_bound"]["verdict"] == d["experimental_report"]["input_bound"]["verdict"] == "no"


def test_an_input_bound_group_reads_input_bound_and_its_data_wait_significant(client):
    d = get_ready(client, "diff/pipeline", baseline="base", experimental="slow")
    assert d["baseline_report"]["input_bound"]["verdict"] == "no"
    assert d["experimental_report"]["input_bound"]["verdict"] == "yes"
    wait = next(r for r in d["summary"] if r["metric"] == "split.data_wait_s")
    assert wait["significance"]["verdict"] == S.SIGNIFICANT and wait["significance"]["noise"] == "measured"
    # One verdict for one number: the explanation's pipeline part shows this one.
    explained = get_ready(client, "diff/explain", baseline="base", experimental="slow")["pipeline"]["data_wait"]
    assert explained["significance"] == wait["significance"]
    assert wait["significance"]["delta"] == pytest.approx(wait["delta"] * 1e6, abs=2e-3)  # in µs, as everywhere
    # Each recording's own verdict agrees with the pooled one here (a clear case).
    assert {r["input_bound"] for r in d["experimental_report"]["group"]["recordings"]} == {"yes"}


def test_the_explanation_of_two_groups_has_its_pipeline_part(logdir, client):
    """Routes and CLI: the pipeline part pooled, its data wait judged across
    the recordings, the one step verdict everywhere."""
    ex = get_ready(client, "diff/explain", baseline="base", experimental="slow")
    part = ex["pipeline"]
    assert part is not None, ex["sentence"]
    assert part["input_bound"] == {"baseline": "no", "experimental": "yes", "changed": True,
                                   "baseline_data_wait_pct": pytest.approx(part["input_bound"]["baseline_data_wait_pct"]),
                                   "experimental_data_wait_pct": pytest.approx(
                                       part["input_bound"]["experimental_data_wait_pct"])}
    sig = part["data_wait"]["significance"]
    assert sig["verdict"] == S.SIGNIFICANT and sig["baseline_recordings"] == N and sig["noise"] == "measured"
    assert "the run became input-bound" in ex["sentence"]
    pipeline = get_ready(client, "diff/pipeline", baseline="base", experimental="slow")
    assert part["input_bound"]["experimental_data_wait_pct"] == pytest.approx(
        pipeline["experimental_report"]["split"]["data_wait_pct"])

    step = ex["step"]["significance"]
    row = next(r for r in get_ready(client, "diff/overview", baseline="base", experimental="slow")["rows"]
               if r["metric"] == "avg_step_time_us")
    assert row["significance"] == step
    c = compare(logdir / "base", logdir / "slow")
    assert c.explanation["step"]["significance"] == step
    assert c.explanation["pipeline"]["data_wait"] == part["data_wait"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli_main(["diff", str(logdir / "base"), str(logdir / "slow"), "--fail-if", "avg_step_time_us>5",
                           "--require-significance"])
    text = out.getvalue()
    assert ex["sentence"] in text
    assert ("REGRESSION" in text) == (step["verdict"] == S.SIGNIFICANT) and status == (1 if "REGRESSION" in text else 0)


def test_a_group_and_a_single_recording_compare_with_one_side_measured(client):
    d = get_ready(client, "diff/pipeline", baseline="base", experimental="slow/r1")
    assert d["noise"]["baseline_recordings"] == N and d["noise"]["experimental_recordings"] == 1
    assert "one side's spread" in d["noise"]["note"]
    assert all(r["significance"] is None for r in d["stages"])  # a single recording has no stage spread
    assert d["experimental_report"]["group"] is None


def test_pipeline_tab_on_groups_in_the_browser(logdir, tmp_path, page):
    """Picked by name, two groups fill the Pipeline tab: pooled verdicts, the
    recordings behind them, and significance measured across them."""
    from support.browser import _shot
    from support.tb_cli import get as tb_get

    with groups_in_the_browser(page, logdir, tmp_path / "tensorboard.log", "base", "slow", "pipeline") as (frame, port):
        frame.wait_for_selector("[data-testid=pipeline-noise]", timeout=180_000)
        api = tb_get(port, "diff/pipeline", baseline="base", experimental="slow")
        for side in ("baseline", "experimental"):
            card = f"[data-testid=pipeline-verdict][data-side={side}]"
            assert frame.get_attribute(card, "data-verdict") == api[f"{side}_report"]["input_bound"]["verdict"]
            items = frame.eval_on_selector_all(f"{card} [data-testid=pipeline-group] li",
                                               "lis => lis.map(li => li.dataset.recording)")
            assert items == [r["name"] for r in api[f"{side}_report"]["group"]["recordings"]]
            assert api[f"{side}_report"]["group"]["note"] in frame.inner_text(f"{card} [data-testid=pipeline-group]")
        assert frame.get_attribute("[data-testid=pipeline-noise]", "data-noise") == "measured"
        assert "3 + 3 recordings" in frame.inner_text("[data-testid=pipeline-noise]")
        wait = next(r for r in api["summary"] if r["metric"] == "split.data_wait_s")
        mark = frame.get_attribute("tr[data-metric='split.data_wait_s'] .sigmark", "data-verdict")
        assert mark == wait["significance"]["verdict"] == S.SIGNIFICANT
        _shot(page, "groups_pipeline")
    assert page.problems == []
