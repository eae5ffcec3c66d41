"""What the recording scripts beside this file (composer/, lightning/, transformers/) share: the Dataset they
train on (random features whose items take `sleep_s` each to "decode", read in the training process), the model,
and the closing listing. Only torch: each script runs in its framework's own venv."""
from __future__ import annotations

import os
import sys
import time

import torch
from torch.utils.data import Dataset

FEATURES, CLASSES = 32, 4


class SlowDataset(Dataset):
    def __init__(self, sleep_s: float, n: int, as_dict: bool = False):
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, FEATURES, generator=gen)
        self.y = torch.randint(0, CLASSES, (n,), generator=gen)
        self.sleep_s = sleep_s
        self.as_dict = as_dict  # Hugging Face's Trainer collates dicts

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(self.sleep_s)
        return {"x": self.x[i], "labels": self.y[i]} if self.as_dict else (self.x[i], self.y[i])


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES))


def list_outputs(here: str, package: str, version: str) -> None:
    """What was recorded, with the versions that recorded it."""
    print(f"{package} {version}, torch {torch.__version__}, python {sys.version.split()[0]}")
    for root, _, files in sorted(os.walk(here)):
        for f in sorted(files):
            p = os.path.join(root, f)
            print(f"{os.path.relpath(p, here)}  {os.path.getsize(p):,} bytes")
