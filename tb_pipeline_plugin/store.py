"""Background loading of parsed traces, cached by (path, size, mtime).

HTTP handlers must never wait for a parse (a large trace takes seconds and
TensorBoard serves every plugin from the same threads), so `request` only
reports where a load stands and starts one when needed. A file whose size or
mtime changed (still being written, or rewritten) is loaded again and the
stale result dropped. At most `max_ready` parsed values are kept, least
recently used evicted first, which bounds memory however many runs the logdir
holds; an evicted entry still remembers that it parsed (see `summary`).
"""
from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

Status = Literal["loading", "ready", "failed"]
_MAX_ERROR_CHARS = 1000


@dataclass(frozen=True)
class LoadState:
    """A snapshot of one load; safe to hand to another thread."""

    status: Status
    value: Any = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)


class _Entry:
    __slots__ = ("key", "token", "status", "value", "error", "warnings", "evicted", "done", "future")

    def __init__(self, key: tuple, token: int):
        self.key = key
        self.token = token
        self.status: Status = "loading"
        self.value: Any = None
        self.error: str | None = None
        self.warnings: list[str] = []
        self.evicted = False
        self.done = threading.Event()
        self.future: Future | None = None

    def snapshot(self) -> LoadState:
        return LoadState(self.status, self.value, self.error, list(self.warnings))


def describe_exception(exc: BaseException) -> str:
    """`Type: message`, without a traceback: what a user can act on."""
    text = str(exc).strip()
    msg = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return msg if len(msg) <= _MAX_ERROR_CHARS else msg[: _MAX_ERROR_CHARS - 1] + "…"


class LoadStore:
    def __init__(self, load_fn: Callable[[str], Any], max_workers: int = 1, max_ready: int = 8):
        if max_ready < 1:
            raise ValueError("max_ready must be at least 1")
        self._load_fn = load_fn
        self._max_ready = max_ready
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="tb_pipeline_load")
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._ready_lru: OrderedDict[str, None] = OrderedDict()
        self._tokens = itertools.count()
        self._closed = False

    # ---- public API ------------------------------------------------------------

    def request(self, path: str, size: int, mtime: float) -> LoadState:
        """The current state; starts a load if none is cached for this version.

        An evicted value is loaded again (the caller wants the value).
        """
        with self._lock:
            return self._current(path, (path, size, mtime), reload_evicted=True).snapshot()

    def summary(self, path: str, size: int, mtime: float) -> LoadState:
        """Like `request`, but an evicted value counts as ready (with `value`
        None) instead of being reloaded: for status listings that must not
        make runs thrash in and out of the cache."""
        with self._lock:
            return self._current(path, (path, size, mtime), reload_evicted=False).snapshot()

    def wait(self, path: str, size: int, mtime: float, timeout: float) -> LoadState:
        """Block until this version is loaded or failed, or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                entry = self._current(path, (path, size, mtime), reload_evicted=True)
                if entry.status != "loading":
                    return entry.snapshot()
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not entry.done.wait(remaining):
                with self._lock:
                    return entry.snapshot()
            # Loop: the result may have been superseded or evicted meanwhile.

    def any_loading(self) -> bool:
        with self._lock:
            return any(e.status == "loading" for e in self._entries.values())

    def discard(self, path: str) -> None:
        """Forget a file (deleted from the logdir)."""
        with self._lock:
            self._drop(path)

    def retain_only(self, paths) -> None:
        """Forget every file not in `paths` (after a logdir rescan)."""
        keep = set(paths)
        with self._lock:
            for path in [p for p in self._entries if p not in keep]:
                self._drop(path)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ---- internals (hold self._lock) -------------------------------------------

    def _current(self, path: str, key: tuple, reload_evicted: bool) -> _Entry:
        entry = self._entries.get(path)
        if entry is not None and entry.key != key:
            self._drop(path)
            entry = None
        if entry is None or (reload_evicted and entry.evicted):
            entry = self._start(path, key)
        elif entry.status == "ready" and not entry.evicted:
            self._ready_lru.move_to_end(path)
        return entry

    def _start(self, path: str, key: tuple) -> _Entry:
        self._drop(path)
        entry = _Entry(key, next(self._tokens))
        self._entries[path] = entry
        if self._closed:
            entry.status, entry.error = "failed", "the plugin is shutting down"
            entry.done.set()
            return entry
        entry.future = self._executor.submit(self._run, path, entry)
        return entry

    def _drop(self, path: str) -> None:
        entry = self._entries.pop(path, None)
        self._ready_lru.pop(path, None)
        if entry is not None:
            entry.value = None
            if entry.future is not None:
                # Only a queued load can be cancelled; a running one finishes
                # and its result is discarded in `_run`.
                entry.future.cancel()
            entry.done.set()

    def _evict_over_limit(self) -> None:
        while len(self._ready_lru) > self._max_ready:
            path, _ = self._ready_lru.popitem(last=False)
            old = self._entries[path]
            old.value = None
            old.evicted = True

    # ---- worker thread -----------------------------------------------------------

    def _run(self, path: str, entry: _Entry) -> None:
        value, error, warnings = None, None, []
        try:
            value = self._load_fn(path)
            found = getattr(value, "warnings", None)
            if isinstance(found, (list, tuple)):
                warnings = [str(w) for w in found]
        except Exception as exc:  # reported to the user as the run's failure reason
            value, error = None, describe_exception(exc)
        with self._lock:
            if self._entries.get(path) is entry:
                entry.warnings = warnings
                if error is None:
                    entry.status, entry.value = "ready", value
                    self._ready_lru[path] = None
                    self._evict_over_limit()
                else:
                    entry.status, entry.error = "failed", error
            entry.done.set()
