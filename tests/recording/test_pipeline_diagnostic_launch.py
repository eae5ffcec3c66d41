"""The two writing-side halves together: `tb-pipeline record` (the launcher)
with TB_PIPELINE_DIAGNOSTIC_MODE=1 hands the unmodified script over to
diagnostic mode instead of training, writes the results under the run and
exits with status 1 (the RFC: profile, then stop)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tb_pipeline_plugin.readers.diagnostic import read_diagnostic

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import time
import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.full((4,), float(i))


model = torch.nn.Linear(4, 1)
for batch in DataLoader(Slow(), batch_size=8, num_workers=0):
    model(batch).sum().backward()
print("TRAINED")
"""


def test_record_in_diagnostic_mode_profiles_instead_of_training(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    logdir = tmp_path / "logs"
    exe = Path(sys.executable).parent / "tb-pipeline"
    launcher = [str(exe)] if exe.exists() else [sys.executable, "-m", "tb_pipeline_plugin.cli"]
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", TB_PIPELINE_DIAGNOSTIC_MODE="1",
               # A short sweep: two levels, brief measurements.
               TB_PIPELINE_DIAGNOSTIC_LEVELS="1,2", TB_PIPELINE_DIAGNOSTIC_EXECUTORS="thread", TB_PIPELINE_DIAGNOSTIC_DURATION_S="0.5",
               TB_PIPELINE_DIAGNOSTIC_WARMUP_S="0.1", TB_PIPELINE_DIAGNOSTIC_GIL_DURATION_S="0.5")
    done = subprocess.run([*launcher, "record", "--logdir", str(logdir), "--run", "R", "--",
                           sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "TRAINED" not in out, "the script trained instead of being profiled"
    results = logdir / "R" / "diagnostic" / "diagnostic.jsonl"
    assert results.is_file() and results.stat().st_size > 0, out[-3000:]
    data = read_diagnostic(logdir / "R")
    assert data.complete, data.warnings
    assert data.records[0].source == "dataloader"
    # Diagnostic mode replaced training: the recorder wrote no step statistics.
    assert not list((logdir / "R").glob("pipeline/*.jsonl"))
