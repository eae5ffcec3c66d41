"""One small facade over a loaded trace: decode once, link once, memoise views.

    tp = TraceProcessor.load("run/worker.123.pt.trace.json.gz")
    tp.overview(); tp.operators("name"); tp.kernels(); tp.modules()
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from .trace import EventTable, load_trace
from .trace.link import LinkedTrace, link


class TraceProcessor:
    def __init__(self, table: EventTable, source: str = ""):
        self.source = source
        self.table = table
        self.linked: LinkedTrace = link(table)
        self._memo: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[Any, threading.Lock] = {}

    @classmethod
    def load(cls, path: str) -> "TraceProcessor":
        return cls(load_trace(path), source=path)

    @property
    def warnings(self) -> list[str]:
        return self.table.warnings

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """compute() once per key for this trace (views, diff pieces), even
        when several requests ask for it at the same time."""
        with self._lock:
            if key in self._memo:
                return self._memo[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._memo:
                    return self._memo[key]
            value = compute()
            with self._lock:
                self._memo[key] = value
                self._key_locks.pop(key, None)
            return value

    def overview(self, whole_window: bool = False) -> dict:
        """`whole_window=True`: every step taken as one window."""
        from .analysis.overview import overview

        return self.memo(("overview", whole_window), lambda: overview(self.linked, whole_window))

    def operators(self, group_by: str = "name"):
        from .analysis.operators import operators

        return self.memo(("operators", group_by), lambda: operators(self.linked, group_by))

    def kernels(self):
        from .analysis.kernels import kernels

        return self.memo("kernels", lambda: kernels(self.linked))

    def modules(self) -> list[dict]:
        from .analysis.modules import module_tree

        return self.memo("modules", lambda: module_tree(self.linked))
