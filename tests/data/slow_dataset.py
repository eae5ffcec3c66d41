"""The Dataset the recording scripts beside this file (composer/, lightning/, transformers/) train on: random
features whose items take `sleep_s` each to "decode", read in the training process. Only torch: each script runs
in its framework's own venv."""
from __future__ import annotations

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
