"""Oracles straight from CUDA memory snapshot pickles, and a hostile pickle (helpers, no tests)."""
from __future__ import annotations

import os
import pickle
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "h200" / "snapshots"
AMP = SNAPSHOTS.parent / "amp"


class _Plain(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"{module}.{name}")


def oracle(path) -> dict:
    """Peak allocated: the level before the history (the end's allocated blocks less the history's allocs
    plus its completed frees) walked through every alloc / free_completed; reserved: the segments' sizes."""
    with open(path, "rb") as f:
        d = _Plain(f).load()
    trace = d["device_traces"][0]
    end = sum(b["size"] for s in d["segments"] for b in s["blocks"]
              if b["state"] in ("active_allocated", "active_pending_free"))
    level = end - sum(e["size"] for e in trace if e["action"] == "alloc") \
        + sum(e["size"] for e in trace if e["action"] == "free_completed")
    peak = level
    for e in trace:
        level += e["size"] if e["action"] == "alloc" else -e["size"] if e["action"] == "free_completed" else 0
        peak = max(peak, level)
    return {"peak_allocated_bytes": peak, "reserved_bytes": sum(s["total_size"] for s in d["segments"])}


class _Hostile:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def hostile_pickle(path, marker) -> None:
    """A pickle shaped like a snapshot whose loading with pickle.load would run `touch MARKER`."""
    with open(path, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [[]], "x": _Hostile(marker)}, f)
