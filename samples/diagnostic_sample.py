"""A tiny three-stage pipeline for diagnostic mode, in two variants.

`baseline`: `decode` is a pure-Python loop (holds the GIL), `fetch` sleeps
(waits like I/O), `augment` reduces a numpy array (releases the GIL).
`experimental`: `decode` hashes bytes with hashlib instead (which releases the
GIL on large buffers) and `fetch` waits twice as long; `augment` is the same
in both, so its comparison is noise only. `gil_augment`: the baseline with
`augment` rewritten as a Python loop (holds the GIL), a pair in which one
stage really changed. `record_diagnostic`
runs the real diagnose engine on them with small levels and short levels, so
the demo logdir and the tests get a real results pair in seconds.
"""
from __future__ import annotations

import hashlib
import os
import time

import numpy as np

ARRAY = np.random.default_rng(0).random(400_000)  # 3.2 MB
BLOB = bytes(range(256)) * 4096  # 1 MiB


def decode_python(x: int) -> int:
    s = 0
    for i in range(20_000):
        s += i * i
    return x


def decode_hashlib(x: int) -> int:
    hashlib.sha256(BLOB).digest()
    return x


def fetch(x: int) -> int:
    time.sleep(0.004)
    return x


def fetch_slower(x: int) -> int:
    time.sleep(0.008)
    return x


def augment(x: int) -> int:
    ARRAY.sum()
    return x


def augment_python(x: int) -> int:
    s = 0.0
    for i in range(5_000):
        s += i * 0.5
    return x


VARIANTS = {
    "baseline": [("decode", decode_python), ("fetch", fetch), ("augment", augment)],
    "experimental": [("decode", decode_hashlib), ("fetch", fetch_slower), ("augment", augment)],
    "gil_augment": [("decode", decode_python), ("fetch", fetch), ("augment", augment_python)],
}


def record_diagnostic(logdir: str, run: str, variant: str = "baseline", *, levels=(1, 2, 4),
                      duration_s: float = 0.3, warmup_s: float = 0.05, gil: bool = True,
                      gil_duration_s: float = 0.5, num_inputs: int = 64):
    """Sweep VARIANTS[variant] into {logdir}/{run}/diagnostic/diagnostic.jsonl; returns the engine's Result."""
    from tb_pipeline_plugin.diagnose import diagnose

    return diagnose(VARIANTS[variant], range(1000), out_dir=os.path.join(logdir, run, "diagnostic"),
                    levels=levels, executors=("thread", "process"), duration_s=duration_s, warmup_s=warmup_s,
                    gil=gil, gil_duration_s=gil_duration_s, num_inputs=num_inputs, progress=None, summary=False)
