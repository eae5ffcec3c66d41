"""A run's CUDA memory snapshots: the `*.pickle` files directly in its directory that hold one.

Each file is read with the unpickler that refuses every global
(readers/memory_snapshot.py) and replayed (analysis/memory/snapshot.py),
kept by (path, size, mtime); a refused or unreadable file is a message of
its own, and the run's other data still serves. With several snapshots the
last by name is the run's.
"""
from __future__ import annotations

import os

from ..analysis.memory.snapshot import NO_SNAPSHOT, RunSnapshot, snapshot_memory
from ..bounded_cache import BoundedCache
from ..readers.memory_snapshot import SnapshotError, read_snapshot

SUFFIX = ".pickle"
_CACHE = BoundedCache(16)


def snapshot_files(run_dir: str) -> list[str]:
    try:
        names = sorted(n for n in os.listdir(run_dir) if n.endswith(SUFFIX))
    except OSError:
        return []
    return [os.path.join(run_dir, n) for n in names if os.path.isfile(os.path.join(run_dir, n))]


def _read(path: str, size: int, mtime: float):
    """(devices, None) or (None, message); `size` and `mtime` key the cache."""
    try:
        return tuple(snapshot_memory(read_snapshot(path))), None
    except SnapshotError as exc:
        return None, f"{os.path.basename(path)}: {exc}"
    except (OSError, MemoryError, RecursionError) as exc:
        return None, f"{os.path.basename(path)}: unreadable ({type(exc).__name__}: {exc})"


def run_snapshot(run_dir: str) -> RunSnapshot:
    files = snapshot_files(run_dir)
    if not files:
        return NO_SNAPSHOT
    found, messages, key = None, [], []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        ident = (path, st.st_size, st.st_mtime)
        key.append(ident)
        devices, message = _CACHE.get_or_make(ident, lambda: _read(*ident))
        if message:
            messages.append(message)
        else:
            found = (os.path.basename(path), devices)
    if found is None:
        return RunSnapshot(None, (), tuple(messages), tuple(key))
    return RunSnapshot(found[0], found[1], tuple(messages), tuple(key))
