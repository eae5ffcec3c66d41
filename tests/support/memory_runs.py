"""A pair of runs recorded with torch.profiler(profile_memory=True) where the
experimental model's head keeps a scratch buffer alive for its whole forward.

On CPU (torch 2.x) module calls reach the trace only with `with_stack=True`
(`nn.Module: Head_0` Python events); `with_modules=True` alone records none.
"""
from __future__ import annotations

import glob
import os

SCRATCH_BYTES = 32 << 20


def record(out_dir: str, scratch_bytes: int) -> str:
    import torch
    from torch import nn

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(64, 10)

        def forward(self, x):
            # Held from here to the end of forward, then dropped.
            scratch = torch.empty(scratch_bytes // 4) if scratch_bytes else None
            y = self.lin(x)
            if scratch is not None:
                y = y + scratch[:1].zero_()
            return y

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
            self.head = Head()

        def forward(self, x):
            return self.head(self.body(x))

    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    os.makedirs(out_dir, exist_ok=True)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out_dir),
        profile_memory=True, record_shapes=True, with_stack=True, with_modules=True,
    ) as prof:
        for _ in range(5):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            prof.step()
    (path,) = glob.glob(os.path.join(out_dir, "*.pt.trace.json*"))
    return path


def record_pair(logdir) -> tuple[str, str]:
    """Runs `mem_base` (no scratch) and `mem_scratch` under `logdir`."""
    return (record(os.path.join(str(logdir), "mem_base"), 0),
            record(os.path.join(str(logdir), "mem_scratch"), SCRATCH_BYTES))
