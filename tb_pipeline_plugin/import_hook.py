"""Run a function when a module is first imported, without importing it
ourselves (importing torch up front would cost seconds for every script).

A leaf both writing-side packages share: the recorder's auto-hook
(record/autohook.py) and diagnostic mode (diagnose/hooks.py) patch
DataLoader and SPDL through it. It imports nothing of ours.
"""
from __future__ import annotations

import importlib.abc
import sys
import threading

_pending: dict[str, list] = {}
_lock = threading.Lock()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in _pending:
            return None
        # Let the other finders locate it, then wrap its loader.
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, name: str):
        self._inner = inner
        self._name = name

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        with _lock:
            callbacks = _pending.pop(self._name, [])
        for fn in callbacks:
            fn(module)

    def __getattr__(self, name):
        return getattr(self._inner, name)


_finder = _Finder()


def when_imported(name: str, fn) -> None:
    """`fn(module)` now if `name` is imported, else right after its import."""
    module = sys.modules.get(name)
    if module is not None:
        fn(module)
        return
    with _lock:
        _pending.setdefault(name, []).append(fn)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
