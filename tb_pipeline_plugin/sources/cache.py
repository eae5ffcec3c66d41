"""Parsed traces kept on disk across restarts, keyed by file version.

An entry is a directory written by `trace.persist` (raw columns in one
file, mapped back read-only). Its name is `<hash of path>-<hash of size, mtime, parser
version>`, so a changed file or a new parser simply misses, and publishing an
entry removes the older versions of the same path. Entries are written into
`staging/` and renamed into place, so a reader never sees half an entry, and
a parse of a version already published leaves that entry in place (its
parser's server may be mapping it). One that is corrupt anyway (disk full,
edited, truncated) is deleted and the file parsed again. The total size is capped; the least recently used entries
(hits touch their manifest) go first. Each process scans the whole cache on
its first publish and then only when its own publishing since the last scan
would pass the cap, or reaches a tenth of it (`RESCAN_SHARE`): publishing is
O(1) between scans, and the cap is overshot by at most a tenth of it per
process publishing at the same time.

The cache lives in the user's cache directory, never in the logdir (which may
be read-only, shared or remote). `TB_PIPELINE_CACHE_DIR` moves it, `off`
disables it; `TB_PIPELINE_CACHE_MAX_MB` sets the cap.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from ..trace.link import LinkedTrace
from ..trace.persist import MANIFEST, PARSER_VERSION, CorruptEntry, entry_bytes, load_linked

DEFAULT_MAX_MB = 20 * 1024
_STAGING = "staging"
# The rank roll-ups (sources/rollup.py): beside the entries, not entries, outside the cap.
ROLLUPS = "rollups"
# A staging directory older than this belongs to a parse that died.
_STALE_STAGING_S = 24 * 3600


# Bytes this process may publish between two full scans, as a share of the
# cap: other processes' entries are only seen by a scan, so each publishing
# process can take the cache this far over the cap before it scans again.
RESCAN_SHARE = 0.1


class _Tally:
    """What this process knows of a cache root's size: the total at its last
    full scan plus what it published since. A scan (listing and sizing every
    entry) on every publish made loading N ranks cost N^2 stats."""

    def __init__(self):
        self._lock = threading.Lock()
        self._total: int | None = None  # never scanned in this process
        self._since_scan = 0

    def add(self, nbytes: int, max_bytes: int) -> bool:
        """Counts a published entry; whether a full scan is due now."""
        with self._lock:
            self._since_scan += nbytes
            if self._total is None:
                return True
            return self._total + self._since_scan > max_bytes or self._since_scan > max_bytes * RESCAN_SHARE

    def scanned(self, total: int) -> None:
        with self._lock:
            self._total, self._since_scan = total, 0


_TALLIES: dict[str, _Tally] = {}
_TALLIES_LOCK = threading.Lock()


def _tally(root: str) -> _Tally:
    with _TALLIES_LOCK:
        return _TALLIES.setdefault(root, _Tally())


def default_cache_root() -> str:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "tb_pipeline")


@dataclass(frozen=True)
class CacheConfig:
    root: str | None  # None: no persistent cache
    max_bytes: int

    @classmethod
    def from_env(cls, env=os.environ) -> "CacheConfig":
        raw = env.get("TB_PIPELINE_CACHE_DIR", "").strip()
        root = None if raw.lower() == "off" else os.path.abspath(os.path.expanduser(raw or default_cache_root()))
        max_mb = float(env.get("TB_PIPELINE_CACHE_MAX_MB", DEFAULT_MAX_MB))
        return cls(root, int(max_mb * (1 << 20)))


def path_digest(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def entry_name(path: str, size: int, mtime: float) -> str:
    version = hashlib.sha256(f"{size}\0{mtime!r}\0{PARSER_VERSION}".encode()).hexdigest()[:24]
    return f"{path_digest(path)}-{version}"


def _move_into_place(staged: str, final: str) -> bool:
    """Renames `staged` to `final`; False when a complete entry is there
    already. A directory there without a manifest (left by a crash, or being
    deleted as corrupt) is replaced."""
    for _ in range(3):
        try:
            os.rename(staged, final)  # atomic; refused onto a non-empty directory
            return True
        except OSError:
            if os.path.exists(os.path.join(final, MANIFEST)):
                return False
            shutil.rmtree(final, ignore_errors=True)
    os.rename(staged, final)
    return True


class TraceCache:
    def __init__(self, config: CacheConfig):
        self.config = config
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.config.root is not None

    @property
    def root(self) -> str:
        return self.config.root or ""

    def entry_dir(self, path: str, size: int, mtime: float) -> str:
        return os.path.join(self.root, PARSER_VERSION, entry_name(path, size, mtime))

    def holds(self, path: str, size: int, mtime: float) -> bool:
        """Whether an entry of this file version is published (not read)."""
        return self.enabled and os.path.exists(os.path.join(self.entry_dir(path, size, mtime), MANIFEST))

    def lookup(self, path: str, size: int, mtime: float) -> LinkedTrace | None:
        """The persisted parse of this file version, or None. A corrupt entry
        is deleted (the caller parses again), never returned."""
        if not self.enabled:
            return None
        if not self.holds(path, size, mtime):
            return None
        directory = self.entry_dir(path, size, mtime)
        try:
            linked = load_linked(directory)
        except CorruptEntry:
            shutil.rmtree(directory, ignore_errors=True)
            return None
        try:
            os.utime(os.path.join(directory, MANIFEST))  # LRU: most recently used
        except OSError:
            pass
        return linked

    def publish(self, staged: str, path: str, size: int, mtime: float) -> str:
        """Moves a complete staged entry into place; drops older versions of
        the same file and evicts down to the cap. Returns the entry's directory."""
        final = self.entry_dir(path, size, mtime)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        with self._lock:
            if not _move_into_place(staged, final):
                # Another parse of the same file version (another server, the
                # start's early parse beside a request's) published first, and
                # its parse may be mapping it now: it stays, ours goes.
                shutil.rmtree(staged, ignore_errors=True)
            prefix = path_digest(path) + "-"
            for name in os.listdir(os.path.dirname(final)):
                if name.startswith(prefix) and name != os.path.basename(final):
                    shutil.rmtree(os.path.join(os.path.dirname(final), name), ignore_errors=True)
            if _tally(self.root).add(entry_bytes(final), self.config.max_bytes):
                self._evict(keep=final)
        return final

    def staging_dir(self) -> str:
        """A fresh directory on the cache's filesystem (so publishing is a rename)."""
        base = os.path.join(self.root, _STAGING) if self.enabled else None
        if base:
            os.makedirs(base, exist_ok=True)
        return tempfile.mkdtemp(prefix="parse-", dir=base)

    def entries(self) -> list[tuple[float, int, str]]:
        """(last used, bytes, directory) of every complete entry, every parser version."""
        out = []
        if not self.enabled or not os.path.isdir(self.root):
            return out
        for version in os.listdir(self.root):
            vdir = os.path.join(self.root, version)
            if version in (_STAGING, ROLLUPS) or not os.path.isdir(vdir):
                continue
            for name in os.listdir(vdir):
                d = os.path.join(vdir, name)
                try:
                    used = os.path.getmtime(os.path.join(d, MANIFEST))
                except OSError:
                    continue
                out.append((used, entry_bytes(d), d))
        return out

    def total_bytes(self) -> int:
        return sum(b for _, b, _ in self.entries())

    def _evict(self, keep: str) -> None:
        """A full scan: evicts down to the cap and resets this process's tally."""
        entries = sorted(self.entries())
        total = sum(b for _, b, _ in entries)
        for _, size, directory in entries:
            if total <= self.config.max_bytes:
                break
            if directory == keep:
                continue
            # Another process may still map it: unlinking leaves its pages valid.
            shutil.rmtree(directory, ignore_errors=True)
            total -= size
        _tally(self.root).scanned(total)
        self._sweep_staging()

    def _sweep_staging(self) -> None:
        base = os.path.join(self.root, _STAGING)
        if not os.path.isdir(base):
            return
        now = time.time()
        for name in os.listdir(base):
            d = os.path.join(base, name)
            try:
                if now - os.path.getmtime(d) > _STALE_STAGING_S:
                    shutil.rmtree(d, ignore_errors=True)
            except OSError:
                pass
