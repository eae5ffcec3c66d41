"""`diff/memory`: where the memory peak went, in the traces and in the CUDA memory snapshots."""
from __future__ import annotations

from ...analysis.memory.snapshot import NO_SNAPSHOT, RunSnapshot
from ..memory.compare import diff_memory
from ..memory.snapshot import diff_snapshots


def diff_memory_impl(pair, snapshots: tuple[RunSnapshot, RunSnapshot] = (NO_SNAPSHOT, NO_SNAPSHOT)) -> dict:
    """Where the peak went (diff/memory/compare.py) and both runs' snapshots
    compared (diff/memory/snapshot.py), computed once per pair and snapshot files."""
    b, e = snapshots
    return pair.view(("diff/memory", b.key, e.key), lambda: _answer(pair, b, e))


def _answer(pair, b: RunSnapshot, e: RunSnapshot) -> dict:
    out = diff_memory(pair.b.memory(), pair.e.memory())
    messages = [f"baseline: {m}" for m in b.messages] + [f"experimental: {m}" for m in e.messages]
    snap = diff_snapshots(list(b.devices), list(e.devices), (b.file, e.file), messages)
    out["snapshot"] = snap
    if snap and snap["sentence"]:
        out["sentence"] = f"{out['sentence']} {snap['sentence']}".strip()
    return out
