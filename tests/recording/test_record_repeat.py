"""`tb-pipeline record --repeat N`: an unmodified torch.profiler script
recorded N times through the real CLI ends as a group of N runs, each with
its own trace and statistics, that discovery and the real TensorBoard app's
`runs` route list as a group; a failing recording is left out."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import pytest

from conftest import PLUGIN_PREFIX, as_in_a_terminal, wait_ready
from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.cli import main
from tb_pipeline_plugin.formats.group import decode_manifest
from tb_pipeline_plugin.readers import load_pipeline_run
from tb_pipeline_plugin.record import gil_contention, trace_dir
from tb_pipeline_plugin.sources.logdir import discover_runs

from support.recordings import recording

REPO = Path(__file__).resolve().parents[2]
BATCHES = 4
SCRIPT_TRACE_DIR = "some/dir"

# What a user writes: traces into a directory of its own choosing.
PROFILED_SCRIPT = textwrap.dedent(f"""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    data = TensorDataset(torch.randn({BATCHES * 4}, 8), torch.randn({BATCHES * 4}, 1))
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                 on_trace_ready=tensorboard_trace_handler({SCRIPT_TRACE_DIR!r})) as prof:
        for x, y in DataLoader(data, batch_size=4):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            prof.step()
    print("same handler", torch.profiler.profiler.tensorboard_trace_handler is torch.profiler.tensorboard_trace_handler)
""")

# What a user writes without a profiler of its own: `--profile` brings one.
PLAIN_SCRIPT = textwrap.dedent(f"""
    import time
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn({BATCHES * 4}, 8), torch.randn({BATCHES * 4}, 1))
    model = torch.nn.Linear(8, 1)
    for x, y in DataLoader(data, batch_size=4):
        torch.nn.functional.mse_loss(model(x), y).backward()
        time.sleep(0.1)  # a few host samples per recording
""")

# Fails on its second run only: a counter file beside it.
SECOND_RUN_FAILS = textwrap.dedent("""
    import pathlib, sys
    counter = pathlib.Path(__file__).with_name("runs.txt")
    n = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(n))
    sys.exit(3 if n == 2 else 0)
""")


def record(cwd: Path, script: str, *args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    (cwd / "train.py").write_text(script)
    env = dict(os.environ, PYTHONPATH=str(REPO), **(env_extra or {}))
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", "logs", "--host-interval", "0",
           *args, "--", sys.executable, "train.py"]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def manifest(group_dir: Path):
    return decode_manifest((group_dir / "recordings.json").read_bytes())


@recording()
def repeated_runs(out: Path) -> dict:
    """`tb-pipeline record --run baseline --repeat 3` of PROFILED_SCRIPT in `out`: its exit status and output."""
    done = record(out, PROFILED_SCRIPT, "--run", "baseline", "--repeat", "3")
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="module")
def repeated(tmp_path_factory):
    """(the folder it ran in, what it said), the recording copied (`repeated_runs`, made before the tests)."""
    cwd = tmp_path_factory.mktemp("repeat")
    done = types.SimpleNamespace(**repeated_runs.copy_to(cwd))
    assert done.returncode == 0, done.stderr[-3000:]
    return cwd, done


def test_three_recordings_each_with_its_trace_and_statistics(repeated):
    cwd, done = repeated
    group = cwd / "logs" / "baseline"
    m = manifest(group)
    assert m.recordings == ["r1", "r2", "r3"]
    assert m.exit_status == {"r1": 0, "r2": 0, "r3": 0} and m.repeat == 3
    assert m.command[-1] == "train.py" and m.start_time_s > 0
    for name in m.recordings:
        traces = list((group / name).glob("*.pt.trace.json"))
        assert len(traces) == 1, sorted(p.name for p in (group / name).iterdir())
        stats = load_pipeline_run(str(group / name))
        split = report(stats)["split"]
        assert split["steps"] + split["warmup_steps"] + split["epilogue_steps"] == BATCHES and stats.warnings == []
    # Redirected, under both names torch exports the handler by.
    assert not (cwd / SCRIPT_TRACE_DIR).exists()
    assert done.stdout.count("same handler True") == 3
    assert done.stderr.count(f"traces for {SCRIPT_TRACE_DIR!r} go to") == 3


def test_discovery_makes_the_directory_a_group(repeated):
    runs = discover_runs(str(repeated[0] / "logs"))
    assert sorted(runs) == ["baseline", "baseline/r1", "baseline/r2", "baseline/r3"]
    assert runs["baseline"].kinds == ["pipeline", "group"] and runs["baseline"].notes == []
    assert runs["baseline"].recordings == ["baseline/r1", "baseline/r2", "baseline/r3"]
    for member in runs["baseline"].recordings:
        assert runs[member].kinds == ["trace", "pipeline"] and runs[member].recordings == []


def test_runs_route_lists_the_group(repeated, make_tb_client):
    client = make_tb_client(repeated[0] / "logs")
    for member in ("baseline/r1", "baseline/r2", "baseline/r3"):
        assert wait_ready(client, member)["status"] == "ready"
    runs = {r["name"]: r for r in client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]}
    group = runs["baseline"]
    assert group["recordings"] == ["baseline/r1", "baseline/r2", "baseline/r3"]
    assert "group" in group["kinds"] and group["workers"] == [] and group["warnings"] == []
    assert runs["baseline/r2"]["recordings"] == [] and runs["baseline/r2"]["kinds"] == ["trace", "pipeline"]


def test_plain_record_leaves_traces_where_the_script_puts_them(tmp_path):
    # Even under an enclosing recording's redirect (a launcher inside a recorded command).
    done = record(tmp_path, PROFILED_SCRIPT, "--run", "plain",
                  env_extra={"TB_PIPELINE_TRACE_DIR": str(tmp_path / "elsewhere")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (tmp_path / "elsewhere").exists()
    assert len(list((tmp_path / SCRIPT_TRACE_DIR).glob("*.pt.trace.json"))) == 1
    assert not list((tmp_path / "logs" / "plain").glob("*.pt.trace.json"))
    assert not (tmp_path / "logs" / "plain" / "recordings.json").exists()
    assert "go to" not in done.stderr


def test_a_failing_recording_is_left_out_and_record_fails(tmp_path):
    done = record(tmp_path, SECOND_RUN_FAILS, "--run", "flaky", "--repeat", "3")
    assert done.returncode == 3, done.stderr[-3000:]
    assert "recording r2 failed (exit status 3)" in done.stderr
    assert "2 of 3 recordings kept" in done.stderr
    m = manifest(tmp_path / "logs" / "flaky")
    assert m.recordings == ["r1", "r3"] and m.exit_status == {"r1": 0, "r2": 3, "r3": 0}
    runs = discover_runs(str(tmp_path / "logs"))
    assert runs["flaky"].recordings == ["flaky/r1", "flaky/r3"]
    # The failed recording's data is kept, as a run of its own outside the group.
    assert "flaky/r2" in runs and runs["flaky/r2"].kinds == ["pipeline"]


# The first run ends at once; the second waits to be interrupted.
SECOND_RUN_WAITS = textwrap.dedent("""
    import pathlib, time
    marker = pathlib.Path(__file__).with_name("first_done")
    if marker.exists():
        pathlib.Path(__file__).with_name("second_started").write_text("")
        time.sleep(60)
    marker.write_text("")
""")


def test_ctrl_c_ends_the_group_and_keeps_what_finished(tmp_path):
    (tmp_path / "train.py").write_text(SECOND_RUN_WAITS)
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", "logs", "--host-interval", "0",
           "--run", "g", "--repeat", "3", "--", sys.executable, "train.py"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)), start_new_session=True,
                            stderr=subprocess.PIPE, text=True, preexec_fn=as_in_a_terminal)
    deadline = time.monotonic() + 60
    while not (tmp_path / "second_started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted: recording r2 left out; 1 of 3 recordings kept" in err
    m = manifest(tmp_path / "logs" / "g")
    assert m.recordings == ["r1"] and m.exit_status == {"r1": 0, "r2": 130}


def test_repeat_usage_errors(tmp_path, capsys):
    logdir = str(tmp_path / "logs")
    assert main(["record", "--logdir", logdir, "--run", "g", "--repeat", "0", "--", sys.executable, "-V"]) == 2
    assert "--repeat must be >= 1" in capsys.readouterr().err
    assert main(["record", "--logdir", logdir, "--run", "g", "--repeat", "2", "--", str(tmp_path / "nope")]) == 2
    assert "cannot run" in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()  # nothing written for a command that cannot run
    (tmp_path / "logs" / "g" / "r2").mkdir(parents=True)
    assert main(["record", "--logdir", logdir, "--run", "g", "--repeat", "2", "--", sys.executable, "-V"]) == 2
    assert "already holds r2: pick another --run" in capsys.readouterr().err
    assert not (tmp_path / "logs" / "g" / "recordings.json").exists()


@recording()
def notice_runs(out: Path) -> dict:
    """`tb-pipeline record --repeat 3 --profile` of PLAIN_SCRIPT in `out`, with a Python that lacks gilknocker
    (its import fails, as it does where the package is not installed) and TMPDIR in `out`: its exit status and
    output."""
    missing = out / "without_gilknocker"
    missing.mkdir()
    (missing / "gilknocker.py").write_text("raise ImportError(\"No module named 'gilknocker'\")\n")
    (out / "train.py").write_text(PLAIN_SCRIPT)
    (out / "tmp").mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(missing)]), TMPDIR=str(out / "tmp"))
    # warmup=0: torch.profiler warns that the results may be skewed (its own warning, each recording).
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", "logs", "--host-interval", "0.05",
           "--run", "g", "--repeat", "3", "--profile", "wait=0,warmup=0,active=2", "--", sys.executable, "train.py"]
    done = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True, timeout=600)
    return {"returncode": done.returncode, "stderr": done.stderr}


def test_notices_are_said_once_per_command_and_torchs_own_pass_through(tmp_path):
    done = types.SimpleNamespace(**notice_runs.copy_to(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    # Ours: the missing package said once for the three recordings, on one line.
    said = [line for line in lines if "gilknocker" in line]
    assert said == [gil_contention.missing_message()], said
    assert sum("recording 3 of 3" in line for line in lines) == 1  # all three ran
    assert not any(gil_contention.missing_message() in line for line in lines[lines.index(said[0]) + 1:])
    # torch.profiler's own warning reaches the terminal from every recording.
    assert done.stderr.count("Profiler won't be using warmup") == 3, done.stderr[-3000:]
    # Every recording has its host samples all the same, just no GIL series.
    for name in ("r1", "r2", "r3"):
        assert len(load_pipeline_run(str(tmp_path / "logs" / "g" / name)).host) > 0
    # The file the recordings shared to say so is gone.
    assert not list((tmp_path / "tmp").glob("tb-pipeline-said-*"))


def test_manifest_is_plain_json(repeated):
    """What docs/pipeline_format.md shows: a hand-written manifest looks like this."""
    doc = json.loads((repeated[0] / "logs" / "baseline" / "recordings.json").read_text())
    assert set(doc) == {"version", "recordings", "command", "start_time_s", "exit_status", "repeat"}
    assert doc["version"] == 1


def test_the_redirect_keeps_the_handlers_other_arguments(monkeypatch, tmp_path, capsys):
    calls = []

    def handler(dir_name, worker_name=None, use_gzip=False):
        calls.append((dir_name, worker_name, use_gzip))
        return "on_trace_ready"

    inner, outer = types.ModuleType("torch.profiler.profiler"), types.ModuleType("torch.profiler")
    inner.tensorboard_trace_handler = outer.tensorboard_trace_handler = handler
    monkeypatch.setitem(sys.modules, "torch.profiler.profiler", inner)
    monkeypatch.setitem(sys.modules, "torch.profiler", outer)
    target = str(tmp_path / "r1")
    trace_dir._patch(target)
    trace_dir._patch(target)  # a second install wraps nothing twice
    assert outer.tensorboard_trace_handler is inner.tensorboard_trace_handler is not handler
    assert outer.tensorboard_trace_handler(dir_name="x", worker_name="w", use_gzip=True) == "on_trace_ready"
    inner.tensorboard_trace_handler("x", "w2")
    assert calls == [(target, "w", True), (target, "w2", False)]
    assert capsys.readouterr().err.count("traces for 'x' go to") == 1
