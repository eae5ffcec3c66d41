"""`--profile ...,memory=1` on CUDA: the allocator's history over the profiled window, dumped as a snapshot.

`start()` when the launcher's profiler starts: `torch.cuda.memory._record_memory_history`
(Python stacks, `MAX_ENTRIES` actions); `dump()` when it stops: after a
`torch.cuda.synchronize()`, `torch.cuda.memory._dump_snapshot` into the run's
directory (`memory_snapshot.<pid>.pickle`, which the plugin reads:
sources/snapshots.py), then the history is switched off. Without CUDA (or
without `memory=1`) neither calls anything: CPU runs are unchanged.
"""
from __future__ import annotations

import os
import sys

MAX_ENTRIES = 100_000


class MemoryHistory:
    def __init__(self, run_dir: str, wanted: bool):
        self.run_dir = run_dir
        self.wanted = wanted
        self.recording = False
        self.path: str | None = None

    def start(self) -> None:
        if not self.wanted:
            return
        import torch

        if not torch.cuda.is_available():
            return
        torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES, stacks="python")
        self.recording = True

    def dump(self) -> None:
        if not self.recording:
            return
        import torch

        self.recording = False
        path = os.path.join(self.run_dir, f"memory_snapshot.{os.getpid()}.pickle")
        try:
            torch.cuda.synchronize()
            torch.cuda.memory._dump_snapshot(path)
            self.path = path
            print(f"tb-pipeline: CUDA memory snapshot of the profiled window in {path}", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - the run goes on without it
            print(f"tb-pipeline: no CUDA memory snapshot: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
