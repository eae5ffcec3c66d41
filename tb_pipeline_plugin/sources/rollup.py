"""The rank roll-up: what the distributed view needs of every rank of a
directory of traces, in a few small files of the cache directory.

A rank's record (`RankRecord`: its step time split, steps, rank, world size,
backend) is a line of JSON, some 200 bytes, where its cache entry is 1.5 MB
of columns and views: 10,000 ranks read back in one file read, not 10,000.
Whoever computes a rank's overview appends its record: `tb-pipeline
summarize` (a local pool or Dask workers, on many machines at once), the
plugin's parse workers as ranks load, and the server when it reads a rank
from the views kept with an older cache entry.

Layout, under `<cache>/rollups/<hash of the traces' directory>/`:

* `part-<host>-<pid>-<token>.jsonl`: one writer process's appends, a line
  each, under an exclusive `flock` (so a compaction never loses a line);
* `merging-*`: parts a compaction has taken (read like parts, in case it died);
* `rollup.json`: the compacted records, replaced by rename.

A record names its file (basename), size and mtime, and the parser and
analysis versions that made it: a rewritten file, a new parser or a changed
analysis simply finds no record and the rank is read again. Compaction
(`compact`, by `summarize` at its end and by the server when parts pile up)
keeps only the records of the files as they are now.

Without `fcntl` (Windows) writers append without the lock and nothing
compacts: still correct, the parts only grow.
"""
from __future__ import annotations

import hashlib
import os
import socket
import threading
import uuid
from typing import Iterable

import msgspec

from ..analysis.distributed import rank_record
from ..analysis.overview import step_range
from ..trace.persist import PARSER_VERSION
from .cache import ROLLUPS
from .view_file import ANALYSIS_VERSION

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

COMPACTED = "rollup.json"
_PART = "part-"
_MERGING = "merging-"
_LOCK = "compact.lock"
# 2: a span's label (start_unix_s, first_step, last_step, profiler_steps) for the run picker.
_FORMAT = 2
# Records made by other code are stale: the split is the analysis' and the parser's.
VERSION = f"{_FORMAT}-{PARSER_VERSION}-{ANALYSIS_VERSION}"
# A rank's warnings kept in its record (the first few: enough to say what was lost).
MAX_WARNINGS = 3
_MAX_WARNING_CHARS = 300


class RankRecord(msgspec.Struct, array_like=True, gc=False, frozen=True):
    """One rank's numbers (`analysis.distributed.rank_record`) and the file version they are of."""

    file: str  # basename, within the roll-up's directory
    size: int
    mtime: float
    version: str
    rank: int | None  # distributedInfo.rank
    world_size: int | None
    backend: str | None
    steps: int
    step_time_us: float
    computation_us: float
    communication_us: float
    idle_us: float
    has_device: bool
    warnings: list[str] = []
    # What the run picker names the span by (sources/spans.py:span_label).
    start_unix_s: float | None = None
    first_step: int | None = None
    last_step: int | None = None
    profiler_steps: int = 0


_ENCODER = msgspec.json.Encoder()
# A file name JSON cannot hold (undecodable bytes: lone surrogates on POSIX)
# is kept as this mark and the hex of its bytes.
_ESCAPED = "\0"


def _storable(record: RankRecord) -> RankRecord:
    try:
        record.file.encode("utf-8")
        return record
    except UnicodeEncodeError:
        return msgspec.structs.replace(record, file=_ESCAPED + os.fsencode(record.file).hex())


def _restored(record: RankRecord) -> RankRecord:
    if not record.file.startswith(_ESCAPED):
        return record
    try:
        return msgspec.structs.replace(record, file=os.fsdecode(bytes.fromhex(record.file[1:])))
    except ValueError:  # a damaged record: it names no file, so it matches none
        return record


_LINE_DECODER = msgspec.json.Decoder(RankRecord)
_FILE_DECODER = msgspec.json.Decoder(list[RankRecord])


def split_path(path: str) -> tuple[str, str]:
    """(directory, file name) of a trace path, local or remote (`gs://...`):
    the roll-up's key, the same for its writers and readers. rpartition:
    os.path.split costs more than a record lookup, 10,000 times a request."""
    directory, _, name = path.rpartition("/" if "://" in path else os.sep)
    return directory, name


def make_record(path: str, size: int, mtime: float, overview: dict, has_device: bool,
                warnings: Iterable[str]) -> RankRecord:
    """The record of one trace file version from its overview."""
    kept = [str(w)[:_MAX_WARNING_CHARS] for w in list(warnings)[:MAX_WARNINGS]]
    steps = step_range(overview) or {}
    start = overview.get("start_unix_s")
    return RankRecord(file=split_path(path)[1], size=size, mtime=mtime, version=VERSION,
                      warnings=kept, **rank_record(overview, has_device),
                      start_unix_s=None if start is None else float(start), first_step=steps.get("first"),
                      last_step=steps.get("last"), profiler_steps=steps.get("count", 0))


def rollup_dir(cache_root: str, directory: str) -> str:
    """Where the records of the traces in `directory` go."""
    digest = hashlib.sha256(directory.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return os.path.join(cache_root, ROLLUPS, digest)


# ---- writing -----------------------------------------------------------------------

_write_lock = threading.Lock()
_token: tuple[int, str] | None = None


def _part_name() -> str:
    """This process's part: one writer per file, so lines never interleave
    across processes (a pid can repeat on another host or container)."""
    global _token
    if _token is None or _token[0] != os.getpid():  # a forked child gets its own
        _token = (os.getpid(), uuid.uuid4().hex[:8])
    return f"{_PART}{socket.gethostname()}-{_token[0]}-{_token[1]}.jsonl"


def append(cache_root: str | None, path: str, record: RankRecord) -> bool:
    """Appends `record` (of trace `path`) to its directory's roll-up; False
    when there is no cache to write to or the write failed (the rank is then
    read again next time: a roll-up is an optimisation, never the truth)."""
    if not cache_root:
        return False
    directory = rollup_dir(cache_root, split_path(path)[0])
    line = _ENCODER.encode(_storable(record)) + b"\n"
    try:
        os.makedirs(directory, exist_ok=True)
        part = os.path.join(directory, _part_name())
        with _write_lock:
            for _ in range(8):
                if _append_locked(part, line):
                    return True
    except OSError:
        pass
    return False


def _append_locked(part: str, line: bytes) -> bool:
    """One append under the part's lock; False when a compaction renamed the
    part after it was opened (the line would land in a file already read)."""
    fd = os.open(part, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.stat(part).st_ino != os.fstat(fd).st_ino:
                    return False
            except FileNotFoundError:
                return False
        os.write(fd, line)
        return True
    finally:
        os.close(fd)  # releases the lock


# ---- reading -----------------------------------------------------------------------

def decode_lines(data: bytes) -> tuple[list[RankRecord], int]:
    """The complete lines of `data` as records of this version (others, and
    damaged lines, skipped) and the bytes they took: a line being appended
    is read next time."""
    end = data.rfind(b"\n") + 1
    out = []
    for line in data[:end].splitlines():
        try:
            record = _LINE_DECODER.decode(line)
        except msgspec.DecodeError:
            continue
        if record.version == VERSION:
            out.append(_restored(record))
    return out, end


def decode_compacted(data: bytes) -> list[RankRecord]:
    try:
        return [_restored(r) for r in _FILE_DECODER.decode(data) if r.version == VERSION]
    except msgspec.DecodeError:
        return []


def read_all(directory: str) -> list[RankRecord]:
    """Every record of this version in a roll-up directory (compacted and parts)."""
    out: list[RankRecord] = []
    for name in _listdir(directory):
        try:
            with open(os.path.join(directory, name), "rb") as f:
                data = f.read()
        except OSError:
            continue
        if name == COMPACTED:
            out += decode_compacted(data)
        elif is_part(name):
            out += decode_lines(data)[0]
    return out


def is_part(name: str) -> bool:
    return name.startswith((_PART, _MERGING)) and name.endswith(".jsonl")


def _listdir(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


# ---- compaction --------------------------------------------------------------------

def compact(directory: str, current: dict[str, tuple[int, float]]) -> int | None:
    """Merges the parts into `rollup.json`, keeping the records of the files
    of `current` (basename -> (size, mtime) now) only. Returns the records
    kept, or None when another process is compacting (or no `fcntl`)."""
    if fcntl is None or not os.path.isdir(directory):
        return None
    lock_fd = os.open(os.path.join(directory, _LOCK), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        for name in _listdir(directory):
            if name.startswith(_PART):
                _take(directory, name)
        merged: dict[str, RankRecord] = {}
        for record in read_all(directory):  # the compacted file, leftover merging-*, and what was just taken
            if current.get(record.file) == (record.size, record.mtime):
                merged[record.file] = record
        tmp = os.path.join(directory, f".{COMPACTED}.{uuid.uuid4().hex[:8]}")
        with open(tmp, "wb") as f:
            f.write(_ENCODER.encode([_storable(r) for r in sorted(merged.values(), key=lambda r: r.file)]))
        os.replace(tmp, os.path.join(directory, COMPACTED))
        # Every merging-* was read above: taken now, or left by a compaction that died.
        for name in _listdir(directory):
            if name.startswith(_MERGING):
                _unlink(os.path.join(directory, name))
        return len(merged)
    finally:
        os.close(lock_fd)


def _take(directory: str, name: str) -> None:
    """Renames a part out of its writer's way, then waits for an append in
    progress (its lock) so every line written to it is there to read."""
    merging = f"{_MERGING}{name[len(_PART):-len('.jsonl')]}-{uuid.uuid4().hex[:8]}.jsonl"
    try:
        os.rename(os.path.join(directory, name), os.path.join(directory, merging))
        # Read-write: over NFS an exclusive flock is a write lock.
        fd = os.open(os.path.join(directory, merging), os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
