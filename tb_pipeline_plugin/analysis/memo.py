"""Per-object memoisation that computes each key once, even when several
request threads ask for it at the same time (one lock per key, so two
different views of one trace still compute in parallel)."""
from __future__ import annotations

import threading
from typing import Any, Callable


class Memo:
    def __init__(self):
        self._values: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[Any, threading.Lock] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._values:
                return self._values[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._values:
                    return self._values[key]
            value = compute()
            with self._lock:
                self._values[key] = value
                self._key_locks.pop(key, None)
            return value
