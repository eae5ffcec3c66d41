"""`tb-pipeline record` runs unmodified scripts with the recording hooks: a
DataLoader script gets the same kind of statistics as the in-loop recorder, `--headspace` gives its upper bound, and
a real SPDL pipeline's stage table agrees with SPDL's own log lines.

The scripts' runs are one recording (`launcher_runs`, tests/support/recordings.py), made alone before the tests:
the tests read what they wrote and printed, and measure nothing while they run."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tb_pipeline_plugin.analysis.statistics.report import report, stage_table
from tb_pipeline_plugin.readers import load_pipeline_run

from support.recordings import recording

REPO = Path(__file__).resolve().parents[2]
DELAY_S = 0.03
BATCHES = 20

TRAIN_SCRIPT = textwrap.dedent(f"""
    import time, torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    class SlowBatches(Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(0)
            self.x, self.y = torch.randn({BATCHES}, 64, 8, generator=g), torch.randn({BATCHES}, 64, 1, generator=g)
        def __len__(self):
            return {BATCHES}
        def __getitem__(self, i):
            t0 = time.perf_counter()
            time.sleep({DELAY_S})
            SLEPT.append(time.perf_counter() - t0)
            return self.x[i], self.y[i]

    SLEPT = []

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in DataLoader(SlowBatches(), batch_size=None, num_workers=0):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print("trained; slept_mean_s", sum(SLEPT) / max(len(SLEPT), 1))
""")

SPDL_SCRIPT = textwrap.dedent("""
    import logging, time
    from spdl.pipeline import PipelineBuilder
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname).1s] %(name)s: %(message)s")

    def gil_bound(x):  # pure Python: holds the GIL throughout
        s = 0
        for i in range(30_000):
            s += i * i
        return x

    def sleep_io(x):  # releases the GIL, like I/O
        time.sleep(0.004)
        return x

    pipeline = (PipelineBuilder().add_source(range(300))
                .pipe(gil_bound, concurrency=1, name="gil_bound")
                .pipe(sleep_io, concurrency=8, name="sleep_io")
                .add_sink(8).build(num_threads=10))
    with pipeline.auto_stop():
        n = sum(1 for _ in pipeline)
    print("consumed", n)
""")

# SPDL 0.8's queue report, e.g.
# [0:1:gil_bound_queue]	Processed   300 items in    1.3 [sec] (QPS:  228.3) Ave wait time: ...
SPDL_QUEUE_LINE = re.compile(r"\[(?P<stage>\S+?)_queue\]\s+Processed\s+(?P<items>\d+) items in .*?\(QPS:\s*(?P<qps>[\d.]+)\)")


def launch(tmp_path: Path, script: str, run: str, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / f"train_{run}.py"  # not "spdl.py": it would shadow the package
    path.write_text(script)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", str(tmp_path / "logs"),
           "--run", run, "--host-interval", "0.2", *extra, "--", sys.executable, str(path)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@recording()
def launcher_runs(out: Path) -> dict:
    """TRAIN_SCRIPT plain and with `--headspace 2`, then SPDL_SCRIPT, each through `tb-pipeline record` into
    `out/logs`; what each printed (stdout, stderr)."""
    runs = {"plain": (TRAIN_SCRIPT,), "headspace": (TRAIN_SCRIPT, "--headspace", "2"),
            "spdl": (SPDL_SCRIPT, "--spdl-interval", "0.5")}
    printed = {}
    for run, (script, *extra) in runs.items():
        done = launch(out, script, run, *extra)
        printed[run] = [done.stdout, done.stderr]
    return printed


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("launched")
    return tmp / "logs", launcher_runs.copy_to(tmp)


@pytest.fixture(scope="module")
def launched(recorded):
    logs, printed = recorded
    out, hs = printed["plain"][0], printed["headspace"][0]
    assert "trained" in out and "trained" in hs
    slept_s = float(out.split("slept_mean_s")[1])
    return load_pipeline_run(str(logs / "plain")), load_pipeline_run(str(logs / "headspace")), slept_s


def test_launcher_records_an_unmodified_script(launched):
    plain = report(launched[0])
    assert plain["source"] == "launcher"
    assert plain["meta"][0]["command"][-1].endswith("train_plain.py")
    # Every batch is a step; a slow first one (warm-up) is counted apart.
    assert plain["split"]["steps"] + plain["split"]["warmup_steps"] + plain["split"]["epilogue_steps"] == BATCHES
    assert plain["input_bound"]["verdict"] == "yes"
    # The oracle: the delay as the script's Dataset timed it (an oversubscribed
    # machine oversleeps DELAY_S).
    assert plain["split"]["data_wait_s"] == pytest.approx(launched[2], rel=0.10)
    assert plain["host"]["summary"]["samples"] >= 2
    assert launched[0].warnings == []


def test_headspace_takes_data_loading_out(launched):
    plain, hs = (report(t) for t in launched[:2])
    assert hs["meta"][0]["headspace_batches"] == 2
    # The two cache-filling steps are left out; a slow replayed first step is warm-up.
    assert hs["split"]["steps"] + hs["split"]["warmup_steps"] + hs["split"]["epilogue_steps"] == BATCHES - 2
    assert hs["split"]["data_wait_s"] < 0.001
    assert hs["input_bound"]["verdict"] == "no"
    assert hs["throughput"]["steps_per_s"] > 1.5 * plain["throughput"]["steps_per_s"]
    # Upper bound: the plain run's step rate with its data wait removed.
    # Medians, and a factor of 2: the two runs are separate processes on a
    # shared box whose load moves compute time by that much between them.
    plain_steps, hs_steps = launched[0].steps, launched[1].steps
    ceiling = 1.0 / float((plain_steps["duration_s"] - plain_steps["data_wait_s"]).median())
    hs_rate = 1.0 / float(hs_steps[hs_steps["cached"]]["duration_s"].median())
    assert hs_rate >= 0.5 * ceiling


def test_spdl_pipeline_stage_table_matches_spdl_logs(recorded):
    logs, printed = recorded
    stdout, stderr = printed["spdl"]
    assert "consumed 300" in stdout
    tables = load_pipeline_run(str(logs / "spdl"))
    stages = stage_table(tables.stage_tasks, tables.stage_queues).set_index("stage")
    slowest = stages.index[stages["is_slowest"]].tolist()
    assert slowest == ["0:1:gil_bound"]
    # Its output queue runs dry (when a queue is named starving at all: a
    # preempted consumer on an oversubscribed box can leave every queue full).
    starving = stages.index[stages["is_starving"]].tolist()
    assert starving in ([], ["0:1:gil_bound"]), stages[["occupancy_pct", "busy_pct"]].to_string()

    logged: dict[str, list[float]] = {}
    for m in SPDL_QUEUE_LINE.finditer(stderr):
        logged.setdefault(m.group("stage"), []).append(float(m.group("qps")))
    assert set(logged) == set(stages.index)
    queues = tables.stage_queues
    for stage, qps in logged.items():
        # SPDL logs each interval, then the whole run last.
        assert stages.loc[stage, "qps"] == pytest.approx(qps[-1], rel=0.10)
        ours = queues[(queues["stage"] == stage) & ~queues["final"].astype(bool)]["qps"].tolist()
        assert len(ours) == len(qps) - 1
        for a, b in zip(ours, qps[:-1]):
            assert a == pytest.approx(b, rel=0.10, abs=0.1)


def test_record_exit_status_and_usage_errors(tmp_path, capsys):
    from tb_pipeline_plugin.cli import main

    env_before = dict(os.environ)
    os.environ["PYTHONPATH"] = str(REPO)
    try:
        status = main(["record", "--logdir", str(tmp_path), "--run", "r", "--host-interval", "0", "--",
                       sys.executable, "-c", "import sys; sys.exit(3)"])
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    assert status == 3  # the command's own status
    assert load_pipeline_run(str(tmp_path / "r")).meta[0]["source"] == "launcher"
    assert main(["record", "--logdir", str(tmp_path)]) == 2
    assert "no command to run" in capsys.readouterr().err
    assert main(["record", "--logdir", str(tmp_path), "--headspace", "-1", "--", "true"]) == 2
