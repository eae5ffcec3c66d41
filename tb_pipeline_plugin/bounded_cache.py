"""The one cache type of the package: least recently used values, bounded,
thread-safe, each computed once even when several threads ask at once.

Every cache the reading side keeps is one of these: a trace's memoised views
(unbounded: they live and die with the trace), the plugin's groups and pooled
statistics, discovery's sniffs and manifests, the aligned levels and timeline
matches of a pair of piece trees. Only the artifact store (sources/store.py)
keeps its own book, because an entry there has a load state (loading,
failed, evicted-but-parsed) that a plain value has not.

A leaf: any package may import it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class BoundedCache(Generic[K, V]):
    """At most `max_entries` values (None: no bound), and, with `weigh`, at
    most `max_weight` in total; the least recently used go first. A value
    heavier than `max_weight` on its own is returned but not kept."""

    def __init__(self, max_entries: int | None, *, max_weight: int | None = None,
                 weigh: Callable[[V], int] | None = None):
        if max_entries is not None and max_entries < 1:
            raise ValueError("max_entries must be at least 1 (or None)")
        if (max_weight is None) != (weigh is None):
            raise ValueError("max_weight and weigh go together")
        self._max_entries = max_entries
        self._max_weight = max_weight
        self._weigh = weigh
        self._values: OrderedDict[K, V] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        # Held while a key is computed, so a second asker waits for the first's value.
        self._computing: dict[K, threading.Lock] = {}
        self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    @property
    def weight(self) -> int:
        with self._lock:
            return self._weight

    def get(self, key: K, default=None):
        with self._lock:
            return self._get_locked(key, default)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._put_locked(key, value)

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value of `key`, made by `make()` when absent: once, however
        many threads ask at the same time (another key is made in parallel)."""
        with self._lock:
            hit = self._get_locked(key, _MISSING)
            if hit is not _MISSING:
                return hit
            key_lock = self._computing.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                hit = self._values.get(key, _MISSING)
                if hit is not _MISSING:
                    return hit
            value = make()
            with self._lock:
                self._put_locked(key, value)
                self._computing.pop(key, None)
            return value

    def pop(self, key: K, default=None):
        with self._lock:
            value = self._values.pop(key, _MISSING)
            if value is _MISSING:
                return default
            self._weight -= self._weigh(value) if self._weigh else 0
            return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._weight = 0

    # ---- hold self._lock -------------------------------------------------------

    def _get_locked(self, key: K, default):
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            self.misses += 1
            return default
        self.hits += 1
        self._values.move_to_end(key)
        return value

    def _put_locked(self, key: K, value: V) -> None:
        weight = self._weigh(value) if self._weigh else 0
        if self._max_weight is not None and weight > self._max_weight:
            return
        old = self._values.pop(key, _MISSING)
        if old is not _MISSING and self._weigh:
            self._weight -= self._weigh(old)
        self._values[key] = value
        self._weight += weight
        while ((self._max_entries is not None and len(self._values) > self._max_entries)
               or (self._max_weight is not None and self._weight > self._max_weight)):
            _, evicted = self._values.popitem(last=False)
            self._weight -= self._weigh(evicted) if self._weigh else 0
