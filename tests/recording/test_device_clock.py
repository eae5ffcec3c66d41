"""The device's clock at step boundaries (record/device_clock.py, issue 44):
CUDA events at each step's start and the loop's end, read once the device
finished, written as `device_step` records and judged on when both runs
have them.

On a machine without CUDA the recorder writes nothing of it and changes
nothing (checked here on every machine); the CUDA path itself runs where a
device is at hand (skipped otherwise; the note of issue 44 says where it
last ran).
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from tb_pipeline_plugin.compare import compare
from tb_pipeline_plugin.formats.pipeline import DeviceStep, LoopEnd, RunMeta, StepRecord
from tb_pipeline_plugin.readers import load_pipeline_run
from tb_pipeline_plugin.record import Recorder
from tb_pipeline_plugin.record.writer import StatsWriter, stats_path

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200"
BATCHES = 12


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(run_dir.glob("pipeline/*.jsonl")) for line in f.open() if line.strip()]


def _loop(rec: Recorder, device: str, work) -> None:
    data = DataLoader(TensorDataset(torch.randn(BATCHES * 4, 256)), batch_size=4)
    for (x,) in rec.wrap(data):
        work(x.to(device))


def test_without_cuda_nothing_is_recorded_and_nothing_changes(tmp_path):
    rec = Recorder(str(tmp_path), "cpu", host_interval_s=None, gil_contention=False)
    _loop(rec, "cpu", lambda x: (x @ x.T).sum().item())
    rec.close()
    records = _records(tmp_path / "cpu")
    assert not any(r["type"] == "device_step" for r in records)
    assert sum(r["type"] == "step" for r in records) == BATCHES
    steps = load_pipeline_run(str(tmp_path / "cpu")).steps
    assert len(steps) == BATCHES and steps["device_s"].isna().all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_cuda_events_time_each_step_of_a_loop_that_runs_ahead(tmp_path):
    torch.cuda.init()
    cycles = int(torch.cuda.get_device_properties(0).clock_rate * 1e3 * 0.02)  # about 20 ms of device time
    rec = Recorder(str(tmp_path), "gpu", host_interval_s=None, gil_contention=False)
    t0 = time.perf_counter()
    _loop(rec, "cuda", lambda x: torch.cuda._sleep(cycles))  # launches and returns: the host runs ahead
    rec.close()
    wall_s = time.perf_counter() - t0
    records = _records(tmp_path / "gpu")
    host = {r["step"]: r["duration_s"] for r in records if r["type"] == "step"}
    device = {r["step"]: r["device_s"] for r in records if r["type"] == "device_step"}
    assert sorted(device) == sorted(host) == list(range(BATCHES))
    # Each step is its ~20 ms of device work, the drain included; the host only launched it.
    assert np.median(list(device.values())) == pytest.approx(0.02, rel=0.25)
    assert np.median(list(host.values())) < 0.5 * np.median(list(device.values()))
    assert sum(device.values()) <= wall_s
    steps = load_pipeline_run(str(tmp_path / "gpu")).steps
    assert np.isfinite(steps["device_s"]).all()


def _statistics(run_dir: Path, host_s: list[float], device_s: list[float]) -> None:
    """Pipeline statistics as the recorder writes them on a CUDA machine, for steps of these durations."""
    writer = StatsWriter(stats_path(str(run_dir.parent), run_dir.name), 0)
    t = 1.8e9
    writer.write(RunMeta(wall_time_s=t, command=["train.py"], pid=1, python="3.12", cpu_count=16, hostname="gpu",
                         source="recorder"))
    for i, (h, d) in enumerate(zip(map(float, host_s), map(float, device_s))):
        writer.write(StepRecord(step=i, wall_start_s=t, duration_s=h, data_wait_s=0.0001, compute_s=h - 0.0001))
        writer.write(DeviceStep(step=i, device_s=d))
        t += h
    writer.write(LoopEnd(wall_time_s=t, steps=len(host_s), how="exhausted"))
    writer.close()


@pytest.mark.skipif(not H200.is_dir(), reason=f"H200 traces not found at {H200}")
def test_recorded_device_steps_give_the_step_verdict(tmp_path):
    """CUDA graphs' shape: 5 ms host steps launching 152 and 147 ms of device work per step. With the
    device's clock recorded on both sides, the verdict is on it and says so (the traces: the shared
    compile pair's, for the parts)."""
    rng = np.random.default_rng(0)
    dirs = {}
    for side, device_ms in (("baseline", 152.0), ("experimental", 147.0)):
        run = tmp_path / side
        shutil.copytree(H200 / "compile" / side, run, ignore=shutil.ignore_patterns("pipeline"))
        n = 20
        _statistics(run, list(0.005 + rng.normal(0, 0.0002, n)), list(device_ms / 1e3 + rng.normal(0, 0.0005, n)))
        dirs[side] = run
    c = compare(dirs["baseline"], dirs["experimental"])
    assert c.pair.basis.recorded_clock == "device" and c.pair.basis.recorded
    step = c.explanation["step"]
    assert step["source"] == "recorded" and "CUDA events" in step["basis"], step
    device = {side: [r["device_s"] for r in _records(d) if r["type"] == "device_step"] for side, d in dirs.items()}
    for side in ("baseline", "experimental"):
        kept = load_pipeline_run(str(dirs[side])).steps
        assert step[f"{side}_us"] == pytest.approx(1e6 * np.mean(device[side][:len(kept)]), rel=0.01)
    assert step["delta_pct"] == pytest.approx(100 * (147 - 152) / 152, abs=0.5)
