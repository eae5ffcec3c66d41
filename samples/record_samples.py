"""Record small, deterministic PyTorch profiler runs on the CPU, in process.

The runs are real Kineto traces written by `tensorboard_trace_handler`, so the
plugin and its tests exercise the format PyTorch actually emits rather than a
hand-written imitation. `record_run` returns the profiler, whose
`key_averages()` the tests use as an oracle; tests and benchmarks record into
temporary directories with it. (The demo is recorded as users record:
samples/record_demo.py.)
"""
from __future__ import annotations

import os
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

IN_FEATURES = 32
NUM_CLASSES = 10
BATCHES_PER_EPOCH = 16


def _through_python(depth: int, fn, x):
    """fn(x) called `depth` Python frames down: with `with_stack=True` every
    frame is a `python_function` event (a Python-heavy training step)."""
    return fn(x) if depth <= 0 else _through_python(depth - 1, fn, x)


class Block(nn.Module):
    def __init__(self, hidden: int, python_depth: int = 0):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        self.act = nn.ReLU()
        self.python_depth = python_depth

    def forward(self, x):
        if self.python_depth:
            return _through_python(self.python_depth, lambda v: self.act(self.linear(v)), x)
        return self.act(self.linear(x))


class Net(nn.Module):
    def __init__(self, layers: int, hidden: int, python_depth: int = 0):
        super().__init__()
        self.stem = nn.Linear(IN_FEATURES, hidden)
        # Identical blocks: inserting one shifts instance names (Block_2 -> Block_3),
        # which is exactly what the diff alignment has to survive.
        self.blocks = nn.Sequential(*[Block(hidden, python_depth) for _ in range(layers)])
        self.head = nn.Linear(hidden, NUM_CLASSES)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


class SyntheticBatches(Dataset):
    """Whole batches as items, so `loader_delay_s` is a per-batch cost."""

    def __init__(self, num_batches: int, batch: int, loader_delay_s: float, seed: int):
        gen = torch.Generator().manual_seed(seed)
        self.x = torch.randn(num_batches, batch, IN_FEATURES, generator=gen)
        self.y = torch.randint(0, NUM_CLASSES, (num_batches, batch), generator=gen)
        self.loader_delay_s = loader_delay_s

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.loader_delay_s > 0:
            time.sleep(self.loader_delay_s)
        return self.x[i], self.y[i]


def record_run(
    out_dir: str,
    *,
    layers: int = 4,
    hidden: int = 64,
    batch: int = 32,
    active_steps: int = 3,
    loader_delay_s: float = 0.0,
    with_stack: bool = True,
    seed: int = 0,
    python_depth: int = 0,
) -> torch.profiler.profile:
    """Train a few steps under the profiler; the trace lands in `out_dir`.

    Returns the profiler so callers can use `prof.key_averages()` as an
    independent oracle for what the plugin computes from the trace file.
    `python_depth` calls each block's layers that many Python frames down
    (a stack-heavy trace: most events `python_function`).
    """
    torch.manual_seed(seed)
    os.makedirs(out_dir, exist_ok=True)
    # One intra-op thread: on a busy 2-core box OpenMP workers spinning
    # against other processes turn a 50 µs matmul into 20 ms spikes, and
    # tests compare run timings. Restored so callers keep their setting.
    threads_before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_profiled(out_dir, layers, hidden, batch, active_steps, loader_delay_s, with_stack, seed,
                               python_depth)
    finally:
        torch.set_num_threads(threads_before)


def _train_profiled(out_dir, layers, hidden, batch, active_steps, loader_delay_s, with_stack, seed, python_depth=0):
    model = Net(layers, hidden, python_depth)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    steps_total = 2 + active_steps  # wait + warmup + active
    loader = DataLoader(
        SyntheticBatches(max(steps_total, BATCHES_PER_EPOCH), batch, loader_delay_s, seed),
        batch_size=None,  # items already are batches
        shuffle=False,
        num_workers=0,
    )
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(
        activities=activities,
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=active_steps, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out_dir),
        record_shapes=True,
        profile_memory=True,
        with_modules=True,
        with_stack=with_stack,
        # key_averages() then covers every profiled cycle, not just the last;
        # identical with repeat=1 (checked on torch 2.13), robust if it changes.
        acc_events=True,
    ) as prof:
        for step, (x, y) in enumerate(loader):
            if step >= steps_total:
                break
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            prof.step()
    return prof
