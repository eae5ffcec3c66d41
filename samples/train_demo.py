"""The demo's training script: an ordinary PyTorch loop that knows nothing of
tb_pipeline_plugin. `samples/record_demo.py` records it the way users record
theirs, through `tb-pipeline record --profile` (traces, pipeline statistics)
and `TB_PIPELINE_DIAGNOSTIC_MODE=1` (diagnostic results):

    python samples/train_demo.py [--variant baseline|experimental] [--steps N]

`experimental` (or TB_DEMO_VARIANT=experimental) changes two things a user
would: block 1's MLP is four times wider (a slower module, in the trace), and
the examples are read from slow storage instead of memory and augmented with
more pure-Python work (data wait, in the statistics; changed stages, in the
diagnostic sweep).
"""
from __future__ import annotations

import argparse
import os
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 64
CLASSES = 10
BATCH = 32
# Per variant: the MLP expansion of each block, an example's read time (0: in
# memory; else a storage read: sleeps, GIL released) and its augmentation's
# Python work.
VARIANTS = {
    "baseline": dict(expansions=(2, 2, 2), read_s=0.0, augment_rounds=100),
    "experimental": dict(expansions=(2, 8, 2), read_s=0.0005, augment_rounds=1500),
}


class Augment:
    """Jitter computed in pure Python, as many real transforms do (holds the
    GIL). Takes and returns a whole (features, label) example."""

    def __init__(self, rounds: int):
        self.rounds = rounds

    def __call__(self, example):
        features, label = example
        jitter = 0.0
        for i in range(self.rounds):
            jitter += ((i * 7919) % 13 - 6) * 1e-4
        return features + jitter, label


class SensorDataset(Dataset):
    """Examples read one by one (from memory or slow storage), then augmented: `transform`
    applied to the whole example in __getitem__ (as a Hugging Face dataset's
    `set_transform` does)."""

    def __init__(self, size: int, read_s: float, transform=None):
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(size, FEATURES, generator=gen)
        self.y = torch.randint(0, CLASSES, (size,), generator=gen)
        self.read_s = read_s
        self.transform = transform

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.read_s > 0:
            time.sleep(self.read_s)
        example = self.x[i], self.y[i]
        return self.transform(example) if self.transform is not None else example


class Mlp(nn.Module):
    def __init__(self, width: int, expansion: int):
        super().__init__()
        self.fc1 = nn.Linear(width, width * expansion)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(width * expansion, width)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, width: int, expansion: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = Mlp(width, expansion)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Classifier(nn.Module):
    def __init__(self, expansions, width: int = 512):
        super().__init__()
        self.embed = nn.Linear(FEATURES, width)
        self.blocks = nn.Sequential(*[Block(width, e) for e in expansions])
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=sorted(VARIANTS), default=os.environ.get("TB_DEMO_VARIANT", "baseline"))
    parser.add_argument("--steps", type=int, default=40, help="training steps (batches)")
    args = parser.parse_args(argv)
    config = VARIANTS[args.variant]
    # One intra-op thread: steady step times on a small, shared machine.
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Classifier(config["expansions"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    dataset = SensorDataset(args.steps * BATCH, config["read_s"], Augment(config["augment_rounds"]))
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=False, num_workers=0)
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"trained {args.variant}: {args.steps} steps, last loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
