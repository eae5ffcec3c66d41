"""One step verdict from every recorded step; warm-up and the loop's epilogue
are no steps.

Unmodified DataLoader scripts recorded as the README says,
`tb-pipeline record --repeat 3 --profile wait=5,warmup=2,active=3`: each
recording's statistics hold ~30 steps, its trace 3. A loader slower by a known
amount is called slower and significant from the recorded steps (the three
profiled steps a recording could not tell), and the sentence says which steps
it used; a null pair is not (tests/support/null_verdicts.py). A loop left by
`break` with persistent workers: the epilogue (the workers shutting down at
exit) is recorded on its own and is in no step, rate or verdict; a file
written before loop ends were recorded loads with a warning and its last step
left out.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.null_verdicts import assert_null
from support.recordings import recording
from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.compare import compare
from tb_pipeline_plugin.diff.significance import method as S
from tb_pipeline_plugin.readers import load_pipeline_run

STEPS = 30
SCHEDULE = "wait=5,warmup=2,active=3"

# A loader that sleeps per item (storage), a small model; `delay` from the command line.
SCRIPT = textwrap.dedent(f"""
    import sys, time
    import torch
    from torch.utils.data import DataLoader, Dataset

    delay = float(sys.argv[1])
    torch.manual_seed(0)
    torch.set_num_threads(1)

    class Slow(Dataset):
        def __len__(self):
            return {STEPS} * 4

        def __getitem__(self, i):
            time.sleep(delay)
            return torch.randn(16), torch.randn(1)

    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in DataLoader(Slow(), batch_size=4):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
""")

# Persistent workers, a loop left by `break`, and a slow exit: the epilogue.
BREAK_SCRIPT = textwrap.dedent("""
    import atexit, time
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    atexit.register(time.sleep, 0.8)  # what shutting down persistent workers costs, made visible
    data = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
    loader = DataLoader(data, batch_size=4, num_workers=2, persistent_workers=True)
    model = torch.nn.Linear(8, 1)
    for i, (x, y) in enumerate(loader):
        time.sleep(0.01)
        model(x).sum().backward()
        if i == 24:
            break
    time.sleep(0.5)  # after the loop: no step's time
    print("left the loop")
""")


def _record(logdir: Path, run: str, script: Path, *args: str, repeat: int | None = 3, profile: bool = True):
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", str(logdir), "--run", run]
    if repeat:
        cmd += ["--repeat", str(repeat)]
    if profile:
        cmd += ["--profile", SCHEDULE]
    proc = subprocess.run(cmd + ["--", sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


@recording(one_core=True)
def recorded_groups(root: Path) -> Path:
    """The three groups of SCRIPT, made once (support/recordings.py)."""
    script = root / "train.py"
    script.write_text(SCRIPT)
    logdir = root / "runs"
    # Interleaved, so a machine drifting over the minutes drifts over every group.
    for run, delay in (("base", "0.001"), ("slow", "0.004"), ("same", "0.001")):
        _record(logdir, run, script, delay)
    return logdir


@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    return recorded_groups.copy_to(tmp_path_factory.mktemp("step_verdicts"))


def test_a_slower_loader_is_slower_and_significant_from_the_recorded_steps(groups):
    c = compare(groups / "base", groups / "slow")
    ex = c.explanation
    step = ex["step"]
    assert step["source"] == "recorded"
    sig = step["significance"]
    assert sig["verdict"] == S.SIGNIFICANT and step["delta_us"] > 0, ex["sentence"]
    # Every recorded step of the main loop but warm-up: far more than the 3 x 3 profiled.
    assert sig["baseline_steps"] >= 3 * (STEPS - 4) and sig["experimental_steps"] >= 3 * (STEPS - 4)
    assert step["profiled"]["baseline_steps"] == 9 and step["profiled"]["experimental_steps"] == 9
    # 4 items a step, 3 ms more each: ~12 ms more per step (the oracle: the sleeps the script does).
    assert 8_000 < step["delta_us"] < 20_000, step
    sentence = ex["sentence"]
    assert "slower" in sentence and "recorded steps" in sentence and "9 vs 9 profiled steps" in sentence
    assert "same time per step" not in sentence
    # One verdict per number: the overview's step row and the CLI's gate read the same one.
    assert c.overview.loc["avg_step_time_us", "significance"] == sig
    from tb_pipeline_plugin import cli

    code = cli.main(["diff", str(groups / "base"), str(groups / "slow"), "--fail-if", "avg_step_time_us>1",
                     "--require-significance"])
    assert code == cli.EXIT_REGRESSION


def test_a_null_pair_is_not_called_changed(groups):
    ex = compare(groups / "base", groups / "same").explanation
    assert ex["step"]["source"] == "recorded"
    assert_null([ex["step"]["significance"]], ex["sentence"])


def test_the_recorded_steps_are_the_oracle_of_the_step_time(groups):
    """The step mean is the statistics' own: the main loader's steps, warm-up left out."""
    c = compare(groups / "base", groups / "slow")
    for side, run in (("baseline", "base"), ("experimental", "slow")):
        durations = []
        for r in sorted((groups / run).iterdir()):
            if not r.is_dir():
                continue
            for f in (r / "pipeline").glob("*.jsonl"):
                steps = [json.loads(line) for line in f.read_text().splitlines() if '"type":"step"' in line]
                steps.sort(key=lambda s: s["wall_start_s"])
                durations += [s["duration_s"] for s in steps]
        used = c.explanation["step"]["significance"][f"{side}_steps"]
        left = len(durations) - used
        assert 0 <= left <= 3 * 4  # warm-up: at most 3 steps per recording, plus the step after the profiler start
        mean_all = sum(durations) / len(durations)
        assert c.explanation["step"][f"{side}_us"] <= mean_all * 1e6 + 0.01  # warm-up is slower, never faster (µs rounded to ns)


def test_the_epilogue_after_a_break_is_no_step(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(BREAK_SCRIPT)
    proc = _record(tmp_path / "runs", "brk", script, repeat=None, profile=False)
    assert "left the loop" in proc.stdout
    run = tmp_path / "runs" / "brk"
    records = [json.loads(line) for f in (run / "pipeline").glob("*.jsonl") for line in f.read_text().splitlines()]
    steps = [r for r in records if r["type"] == "step"]
    assert len(steps) == 25
    [loop_end] = [r for r in records if r["type"] == "loop_end"]
    assert loop_end["how"] == "left" and loop_end["steps"] == 25
    [end] = [r for r in records if r["type"] == "end"]
    # After the last step: the 0.5 s sleep after the loop and the 0.8 s at exit.
    assert end["epilogue_s"] > 1.2 and not end.get("last_step_open", False)
    assert max(s["duration_s"] for s in steps) < 1.0  # no step holds it
    rep = report(load_pipeline_run(str(run)))
    assert rep["epilogue"]["epilogue_s"] == pytest.approx(end["epilogue_s"])
    assert rep["split"]["steps"] <= 25
    assert rep["split"]["mean_step_s"] < 0.5
    assert rep["throughput"]["steps_per_s"] > 2


def test_an_old_file_whose_last_step_holds_the_epilogue_loads_and_says_so(tmp_path):
    """Written before loop ends were recorded: no loop_end or end record, a last step of 60 s."""
    run = tmp_path / "old" / "pipeline"
    run.mkdir(parents=True)
    lines = [{"type": "run", "wall_time_s": 1000.0, "command": ["train.py"], "pid": 1, "python": "3.11",
              "cpu_count": 12}]
    t = 1000.0
    for i in range(40):
        d = 60.1 if i == 39 else (1.4 if i == 0 else 0.1)
        lines.append({"type": "step", "step": i, "wall_start_s": t, "duration_s": d, "data_wait_s": 0.01,
                      "compute_s": d - 0.01})
        t += d
    (run / "host_1.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    tables = load_pipeline_run(str(tmp_path / "old"))
    rep = report(tables)
    assert rep["split"]["steps"] == 38  # the warm-up step and the epilogue left out
    assert rep["split"]["mean_step_s"] == pytest.approx(0.1)
    assert rep["throughput"]["steps_per_s"] == pytest.approx(10.0)
    # A loop's end is no reading problem (issue 47): no warning, the epilogue part says where the time went.
    assert not any("epilogue" in w for w in rep["warnings"])
    assert rep["epilogue"]["epilogue_s"] == pytest.approx(60.1) and rep["epilogue"]["from_last_step"]
    assert "still running when the recorder closed" in rep["epilogue"]["note"]
    assert any("warm-up" in n for n in rep["split"]["notes"])
