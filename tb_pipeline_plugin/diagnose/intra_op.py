"""The intra-op threads a stage runs under, as its executor gives them.

torch's DataLoader calls `torch.set_num_threads(1)` in every worker process,
before the user's `worker_init_fn` (which may set its own); a thread pool in
the main process runs the stage with whatever the main process has. torch's
setting also caps the OpenMP and MKL pools torch's own operators use; no
executor we model sets another library's (NumPy's OpenBLAS keeps its own), so
neither do we. torch is never imported here: a stage that does not use it
has no such threads, and its levels record 0 (unknown).
"""
from __future__ import annotations

import os
import sys

# Variables that size native thread pools, recorded as the user set them (a stage's threading is theirs).
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
              "NUMEXPR_NUM_THREADS")


def torch_threads() -> int:
    """torch's intra-op threads in this process; 0 when torch is not loaded."""
    torch = sys.modules.get("torch")
    try:
        return int(torch.get_num_threads()) if torch is not None else 0
    except Exception:  # a half-imported or broken torch: unknown, not fatal
        return 0


def set_torch_threads(count: int) -> None:
    """What torch's DataLoader worker loop does first: its intra-op pool (and the OpenMP / MKL pools its
    operators use) down to `count` threads."""
    import torch

    torch.set_num_threads(count)


def thread_env(environ=os.environ) -> dict[str, str]:
    return {name: environ[name] for name in THREAD_ENV if environ.get(name)}
