"""Background loading of artifacts (`sources.artifacts.Source`), cached by (source, size, mtime).

HTTP handlers must never wait for a parse (a large trace takes seconds and
TensorBoard serves every plugin from the same threads), so `request` only
reports where a load stands and starts one when needed. A file whose size or
mtime changed (still being written, or rewritten) is loaded again and the
stale result dropped. At most `max_ready` parsed values are kept, least
recently used evicted first, which bounds memory however many runs the logdir
holds; an evicted entry still remembers that it parsed (see `summary`).

Loads wait in a priority queue served by `max_workers` threads. A load some
caller wants the value of (`request`, `wait`) goes before every background
prefetch (`summary`) that has not started yet, including one queued earlier
for the same file, which is promoted; a parse that has started is never
interrupted. `summary` prefetches only while fewer than `max_ready` values
are parsed, queued or being parsed, so a listing of many runs never parses
more than the cache keeps and does not push out values to make room.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from ..errors import Conflict, Unprocessable
from .artifacts import Source

Status = Literal["loading", "ready", "failed", "unloaded"]
_MAX_ERROR_CHARS = 1000
# Queue priorities: lower is served first.
_REQUESTED = 0
_PREFETCH = 1


@dataclass(frozen=True)
class LoadState:
    """A snapshot of one load; safe to hand to another thread.

    `unloaded` (from `summary` only): not parsed, not queued; a `request`
    loads it."""

    status: Status
    value: Any = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    # While loading: set when this load has finished (a request may wait on it).
    done: threading.Event | None = field(default=None, compare=False, repr=False)


_UNLOADED = LoadState("unloaded")


@dataclass(frozen=True)
class Pending:
    """An artifact a request asked the store for: where its load stood then,
    and its value when the handler reads it. Asking for every artifact a
    route needs before reading any queues them all before the first 409.

    `subject` names it in messages ("run 'a' (worker 'w')"); `derive`, when
    set, computes what the route reads from the loaded value."""

    state: LoadState
    subject: str
    plural: bool = False
    derive: Callable[[Any], Any] | None = None

    def value(self) -> Any:
        if self.state.status == "loading":
            raise Conflict(f"{self.subject} {'are' if self.plural else 'is'} still loading", ready=self.state.done)
        if self.state.status == "failed":
            raise Unprocessable(f"{self.subject} could not be read: {self.state.error}")
        return self.state.value if self.derive is None else self.derive(self.state.value)

    def then(self, derive: Callable[[Any], Any]) -> "Pending":
        return Pending(self.state, self.subject, self.plural, derive)


@dataclass(frozen=True)
class PendingAll:
    """Several artifacts read as one (a group's recordings): their values,
    or the first 409 / 422 among them, combined by `combine`."""

    parts: tuple[Pending, ...]
    combine: Callable[[list], Any]

    def value(self) -> Any:
        return self.combine([p.value() for p in self.parts])


class _Entry:
    __slots__ = ("key", "token", "status", "value", "error", "warnings", "evicted", "done", "priority", "started")

    def __init__(self, key: tuple, token: int, priority: int):
        self.key = key
        self.token = token
        self.status: Status = "loading"
        self.value: Any = None
        self.error: str | None = None
        self.warnings: list[str] = []
        self.evicted = False
        self.done = threading.Event()
        self.priority = priority
        self.started = False

    def snapshot(self) -> LoadState:
        return LoadState(self.status, self.value, self.error, list(self.warnings),
                         self.done if self.status == "loading" else None)


def describe_exception(exc: BaseException) -> str:
    """`Type: message`, without a traceback: what a user can act on."""
    text = str(exc).strip()
    msg = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return msg if len(msg) <= _MAX_ERROR_CHARS else msg[: _MAX_ERROR_CHARS - 1] + "…"


class LoadStore:
    def __init__(self, load_fn: Callable[[Source], Any], max_workers: int = 1, max_ready: int = 8):
        if max_ready < 1:
            raise ValueError("max_ready must be at least 1")
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._load_fn = load_fn
        self._max_ready = max_ready
        self._max_workers = max_workers
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._entries: dict[str, _Entry] = {}
        self._ready_lru: OrderedDict[str, None] = OrderedDict()
        # Sources whose current entry is queued or parsing.
        self._in_flight: set[str] = set()
        # (priority, seq, source, entry). Stale items (promoted, dropped or
        # superseded entries) stay until popped and are skipped then.
        self._queue: list[tuple[int, int, str, _Entry]] = []
        self._seq = itertools.count()
        self._tokens = itertools.count()
        self._threads: list[threading.Thread] = []
        self._closed = False

    # ---- public API ------------------------------------------------------------

    def request(self, source: Source, size: int, mtime: float) -> LoadState:
        """The current state; starts a load if none is cached for this version,
        ahead of every queued prefetch.

        An evicted value is loaded again (the caller wants the value).
        """
        with self._lock:
            return self._wanted(source, (source, size, mtime)).snapshot()

    def summary(self, source: Source, size: int, mtime: float, prefetch: bool = True) -> LoadState:
        """The state for a status listing, which must not make runs thrash in
        and out of the cache: an evicted value counts as ready (with `value`
        None) instead of being reloaded. A version never asked for is queued
        as a background prefetch (behind every `request`) when `prefetch` is
        true and fewer than `max_ready` values are parsed or being parsed;
        otherwise it is reported `unloaded` and nothing starts."""
        key = (source, size, mtime)
        with self._lock:
            entry = self._entries.get(source)
            if entry is not None and entry.key != key:
                self._drop(source)
                entry = None
            if entry is not None:
                if entry.status == "ready" and not entry.evicted:
                    self._ready_lru.move_to_end(source)
                return entry.snapshot()
            if prefetch and len(self._ready_lru) + len(self._in_flight) < self._max_ready:
                return self._start(source, key, _PREFETCH).snapshot()
            return _UNLOADED

    def wait(self, source: Source, size: int, mtime: float, timeout: float) -> LoadState:
        """Block until this version is loaded or failed, or `timeout` seconds
        pass. Loads it like `request` does."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                entry = self._wanted(source, (source, size, mtime))
                if entry.status != "loading":
                    return entry.snapshot()
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not entry.done.wait(remaining):
                with self._lock:
                    return entry.snapshot()
            # Loop: the result may have been superseded or evicted meanwhile.

    def any_loading(self) -> bool:
        with self._lock:
            return bool(self._in_flight)

    def discard(self, source: Source) -> None:
        """Forget an artifact (deleted from the logdir)."""
        with self._lock:
            self._drop(source)

    def retain_only(self, sources) -> None:
        """Forget every artifact not in `sources` (after a logdir rescan)."""
        keep = set(sources)
        self.retain_where(keep.__contains__)

    def retain_where(self, keep: Callable[[Source], bool]) -> None:
        """Forget every artifact for which `keep` is false: asked of the
        entries only (a few), not of every file of a 10,000-rank logdir."""
        with self._lock:
            for source in [p for p in self._entries if not keep(p)]:
                self._drop(source)

    def close(self) -> None:
        """Stop the workers; loads not started yet fail ("shutting down"), a
        running parse finishes in the background and is discarded."""
        with self._lock:
            self._closed = True
            for _, _, source, entry in self._queue:
                if not entry.started and self._entries.get(source) is entry and entry.status == "loading":
                    entry.status, entry.error = "failed", "the plugin is shutting down"
                    self._in_flight.discard(source)
                    entry.done.set()
            self._queue.clear()
            self._wake.notify_all()

    # ---- internals (hold self._lock) -------------------------------------------

    def _wanted(self, source: Source, key: tuple) -> _Entry:
        """The entry for this version, loading it (or again, if evicted) at
        request priority; a queued prefetch of it is promoted."""
        entry = self._entries.get(source)
        if entry is not None and entry.key != key:
            self._drop(source)
            entry = None
        if entry is None or entry.evicted:
            return self._start(source, key, _REQUESTED)
        if entry.status == "ready":
            self._ready_lru.move_to_end(source)
        elif entry.status == "loading" and not entry.started and entry.priority > _REQUESTED:
            entry.priority = _REQUESTED
            heapq.heappush(self._queue, (_REQUESTED, next(self._seq), source, entry))
            # The prefetch's own queue item is skipped when popped (started).
        return entry

    def _start(self, source: Source, key: tuple, priority: int) -> _Entry:
        self._drop(source)
        entry = _Entry(key, next(self._tokens), priority)
        self._entries[source] = entry
        if self._closed:
            entry.status, entry.error = "failed", "the plugin is shutting down"
            entry.done.set()
            return entry
        self._in_flight.add(source)
        heapq.heappush(self._queue, (priority, next(self._seq), source, entry))
        if len(self._threads) < self._max_workers:
            for i in range(len(self._threads), self._max_workers):
                # Daemon: a parse in progress must not keep TensorBoard from exiting.
                t = threading.Thread(target=self._worker, name=f"tb_pipeline_load_{i}", daemon=True)
                t.start()
                self._threads.append(t)
        self._wake.notify()
        return entry

    def _drop(self, source: Source) -> None:
        entry = self._entries.pop(source, None)
        self._ready_lru.pop(source, None)
        self._in_flight.discard(source)
        if entry is not None:
            # A queued load is skipped when popped; a running one finishes and
            # its result is discarded in `_run`.
            entry.value = None
            entry.done.set()

    def _evict_over_limit(self) -> None:
        while len(self._ready_lru) > self._max_ready:
            source, _ = self._ready_lru.popitem(last=False)
            old = self._entries[source]
            old.value = None
            old.evicted = True

    # ---- worker threads ------------------------------------------------------------

    def _worker(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                _, _, source, entry = heapq.heappop(self._queue)
                if entry.started or self._entries.get(source) is not entry:
                    continue  # promoted (already served), dropped or superseded
                entry.started = True
            self._run(source, entry)

    def _run(self, source: Source, entry: _Entry) -> None:
        value, error, warnings = None, None, []
        try:
            value = self._load_fn(source)
            found = getattr(value, "warnings", None)
            if isinstance(found, (list, tuple)):
                warnings = [str(w) for w in found]
        except BaseException as exc:  # noqa: BLE001 - the worker thread must survive any loader failure
            value, error = None, describe_exception(exc)
        with self._lock:
            if self._entries.get(source) is entry:
                entry.warnings = warnings
                self._in_flight.discard(source)
                if error is None:
                    entry.status, entry.value = "ready", value
                    self._ready_lru[source] = None
                    if entry.priority != _REQUESTED:
                        # Nobody asked for it yet: it is the first to go when
                        # the cache is full, never a run the user has open.
                        self._ready_lru.move_to_end(source, last=False)
                    self._evict_over_limit()
                else:
                    entry.status, entry.error = "failed", error
            entry.done.set()
