"""Records the Lightning pair beside this file with the real `lightning` package, the way a Lightning user
does: `Trainer(profiler=PyTorchProfiler(...), default_root_dir=HERE)`, one training job per
`lightning_logs/version_N/` (version_0: baseline, version_1: experimental). Run once, in a venv of its own:

    python3 -m venv /tmp/pl-venv && /tmp/pl-venv/bin/pip install lightning torch==2.7.0
    /tmp/pl-venv/bin/python tests/data/lightning/record_lightning.py

Both read a Dataset that sleeps per item in the training process: 4 ms (baseline), 0.5 ms (experimental).
The tests read the output; nothing here is edited by hand afterwards.
"""
from __future__ import annotations

import os
import shutil
import sys

import lightning
import torch
from lightning.pytorch.profilers import PyTorchProfiler
from torch.utils.data import DataLoader

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from recording import SlowDataset, list_outputs, mlp  # noqa: E402

BATCH = 8
SLEEP_S = (0.004, 0.0005)  # version_0, version_1
STEPS = 8


class Classifier(lightning.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def record(sleep_s: float) -> None:
    torch.manual_seed(0)
    trainer = lightning.Trainer(
        default_root_dir=HERE, max_steps=STEPS, accelerator="cpu", devices=1, enable_progress_bar=False,
        enable_checkpointing=False, enable_model_summary=False,
        # Lightning's default schedule: wait 1, warm up 1, record 3.
        profiler=PyTorchProfiler(filename="profile"),
    )
    trainer.fit(Classifier(), DataLoader(SlowDataset(sleep_s, BATCH * STEPS), batch_size=BATCH, num_workers=0))


if __name__ == "__main__":
    shutil.rmtree(os.path.join(HERE, "lightning_logs"), ignore_errors=True)
    for sleep_s in SLEEP_S:
        record(sleep_s)
    list_outputs(HERE, "lightning", lightning.__version__)
