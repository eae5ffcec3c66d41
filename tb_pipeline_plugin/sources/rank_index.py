"""The server's view of the rank roll-up (sources/rollup.py): every record
of a directory of traces, read once and then only what was appended since,
plus the records this process's own loads return; and `RunRanks`, where a
run's ranks stand for the distributed route.

The route asks for each rank file's record at the version discovery saw
(size, mtime); a file without one is loaded (store), and its record lands
here when the load returns. Nothing here bounds how many ranks a run has
but `TB_PIPELINE_MAX_RANKS`, which the answer names: a directory's records
are small (about 200 bytes each), and the directories kept are bounded
(`MAX_DIRECTORIES`, least recently used first; one dropped is read back
from the cache directory).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from functools import cached_property

from ..bounded_cache import BoundedCache
from .runs import TraceFile
from .rollup import COMPACTED, RankRecord, compact, decode_compacted, decode_lines, is_part, rollup_dir, split_path

# The most ranks the distributed route reads of one run (the first, in the
# workers' natural order); the answer says how many it left out and names
# the variable. 10,000 ranks are about 2 MB of records and an answer of
# about 4 MB per run.
MAX_RANKS_VARIABLE = "TB_PIPELINE_MAX_RANKS"
DEFAULT_MAX_RANKS = 20_000
# Directories of traces whose records are kept in memory (a run's ranks are
# usually in one directory; a Composer or Lightning job in a few).
MAX_DIRECTORIES = 64
# Compaction is due when a directory's appended parts are this many files, or
# hold more than this share of the compacted file's bytes (stale versions,
# duplicates, one file per worker process that ever wrote).
COMPACT_PARTS = 16
COMPACT_PART_SHARE = 0.5
_COMPACT_MIN_BYTES = 256 << 10


def max_ranks_from_env(env=os.environ) -> int:
    raw = env.get(MAX_RANKS_VARIABLE, "").strip()
    value = int(raw) if raw else DEFAULT_MAX_RANKS
    if value < 1:
        raise ValueError(f"{MAX_RANKS_VARIABLE} must be at least 1, got {raw!r}")
    return value


@dataclass
class RunRanks:
    """Where the ranks of one run stand: the records ready (each worker's last
    span, in the workers' natural order) and what is still missing."""

    run: str
    ready: list[tuple[str, RankRecord]]  # (worker, record)
    total: int  # rank files of the run, the left-out ones included
    loading: int  # asked for, not read yet
    failures: list[tuple[str, str]] = field(default_factory=list)  # (worker, why)
    left_out: int = 0  # past `limit`, never asked for
    limit: int = DEFAULT_MAX_RANKS

    @cached_property
    def key(self) -> tuple:
        """What an answer over these ranks is computed from: the very records
        (by identity: whoever keys on it holds them) and where the others stand."""
        return (self.run, self.total, self.loading, self.left_out, self.limit, tuple(self.failures),
                tuple(id(record) for _, record in self.ready))


class DirRollup:
    """One directory's records as this process knows them, by (trace path, size, mtime)."""

    def __init__(self, cache_root: str | None, directory: str, sep: str):
        self.path = rollup_dir(cache_root, directory) if cache_root else None
        self._prefix = directory + sep
        self._records: dict[tuple[str, int, float], RankRecord] = {}
        self._parts: dict[str, tuple[int, int]] = {}  # part name -> (inode, bytes read)
        self._compacted: tuple[int, int, int] | None = None  # (inode, size, mtime_ns) read
        self._compacted_bytes = 0
        self._lock = threading.Lock()

    def get(self, path: str, size: int, mtime: float) -> RankRecord | None:
        return self._records.get((path, size, mtime))

    def learn(self, record: RankRecord) -> None:
        self._records[(self._prefix + record.file, record.size, record.mtime)] = record

    def _learn_all(self, records: list[RankRecord]) -> None:
        prefix = self._prefix
        self._records.update(((prefix + r.file, r.size, r.mtime), r) for r in records)

    def refresh(self) -> None:
        """Reads what was written since the last refresh: the compacted file
        when it was replaced, and each part's new complete lines."""
        if self.path is None:
            return
        with self._lock:
            try:
                names = os.listdir(self.path)
            except OSError:
                return
            for name in names:
                if name == COMPACTED:
                    self._read_compacted()
                elif is_part(name):
                    self._read_part(name)
            for gone in self._parts.keys() - set(names):
                del self._parts[gone]

    def _read_compacted(self) -> None:
        full = os.path.join(self.path, COMPACTED)
        try:
            st = os.stat(full)
            ident = (st.st_ino, st.st_size, st.st_mtime_ns)
            if ident == self._compacted:
                return
            with open(full, "rb") as f:
                data = f.read()
        except OSError:
            return
        self._learn_all(decode_compacted(data))
        self._compacted, self._compacted_bytes = ident, len(data)

    def _read_part(self, name: str) -> None:
        full = os.path.join(self.path, name)
        try:
            st = os.stat(full)
            inode, done = self._parts.get(name, (st.st_ino, 0))
            if inode != st.st_ino:  # a new file under the name: from its start
                done = 0
            if st.st_size > done:
                with open(full, "rb") as f:
                    f.seek(done)
                    records, used = decode_lines(f.read(st.st_size - done))
                self._learn_all(records)
                done += used
            self._parts[name] = (st.st_ino, done)
        except OSError:
            pass

    def compaction_due(self) -> bool:
        """The parts pile up (see `COMPACT_PARTS`): cheap, asked on every complete answer."""
        part_bytes = sum(done for _, done in self._parts.values())
        return self.path is not None and (len(self._parts) >= COMPACT_PARTS or part_bytes > max(
            _COMPACT_MIN_BYTES, COMPACT_PART_SHARE * self._compacted_bytes))

    def compact(self, current: dict[str, tuple[int, float]]) -> None:
        """Merges the parts into the compacted file; `current`: every trace
        file of the directory now (basename -> (size, mtime))."""
        with self._lock:
            if self.path is None or compact(self.path, current) is None:
                return
            # What is left in memory: the current versions only (the stale ones went with the parts).
            self._records = {k: r for k, r in self._records.items() if current.get(r.file) == k[1:]}
            self._parts.clear()
            self._compacted = None
        self.refresh()


class RankIndex:
    """Every directory's `DirRollup`, for the provider."""

    def __init__(self, cache_root: str | None):
        self._root = cache_root
        self._dirs: BoundedCache[str, DirRollup] = BoundedCache(MAX_DIRECTORIES)

    def _dir(self, directory: str, sep: str) -> DirRollup:
        return self._dirs.get_or_make(directory, lambda: DirRollup(self._root, directory, sep))

    def lookup(self, files: list[TraceFile]) -> tuple[list[RankRecord | None], list[str]]:
        """Each file's record at the version discovery saw (None when there is
        none yet), and the directories they are in. Inlined: it runs over
        every rank of a run (10,000) on an answer's cold path."""
        dirs: dict[str, DirRollup] = {}
        out = []
        for tf in files:
            path = tf.path
            directory, sep, _ = path.rpartition("/" if "://" in path else os.sep)
            dr = dirs.get(directory)
            if dr is None:
                dr = dirs[directory] = self._dir(directory, sep)
                dr.refresh()
            out.append(dr.get(path, tf.size, tf.mtime))
        return out, list(dirs)

    def learn(self, path: str, record: RankRecord) -> None:
        directory, _ = split_path(path)
        self._dir(directory, path[len(directory)]).learn(record)

    def compact_if_due(self, directories: list[str], files: list[TraceFile]) -> None:
        """Compacts those of `directories` whose parts pile up; `files`: every
        trace file of their run, as discovery saw them now."""
        due = [d for d in directories if (dr := self._dirs.get(d)) is not None and dr.compaction_due()]
        if not due:
            return
        current: dict[str, dict[str, tuple[int, float]]] = {d: {} for d in due}
        for tf in files:
            directory, name = split_path(tf.path)
            if directory in current:
                current[directory][name] = (tf.size, tf.mtime)
        for directory in due:
            dr = self._dirs.get(directory)
            if dr is not None:
                dr.compact(current[directory])
