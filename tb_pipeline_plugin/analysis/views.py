"""A run's memoised views: each computed once per run and arguments, however
many requests ask at once, and seedable with a value computed elsewhere (a
parse worker computes a trace's first views while the columns are in memory).

A view's key is its method's name and its arguments with the defaults filled
in, so `tp.overview()` and `tp.overview(False)` meet on one key, and so does
a value seeded with `tp.seed("overview", (), value)`.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ..bounded_cache import BoundedCache


def view(method: Callable) -> Callable:
    """Memoises a method of a class holding `self._views` (a `BoundedCache`)."""
    params = list(inspect.signature(method).parameters.values())[1:]
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD,) for p in params):
        raise TypeError(f"{method.__name__}: a view takes plain arguments")
    names = [p.name for p in params]
    defaults = tuple(p.default for p in params)
    name = method.__name__

    def key_of(args: tuple, kwargs: dict) -> tuple:
        if kwargs:
            unknown = set(kwargs) - set(names[len(args):])
            if unknown:
                raise TypeError(f"{name}() got unexpected arguments {sorted(unknown)}")
            args = args + tuple(kwargs.get(n, d) for n, d in zip(names[len(args):], defaults[len(args):]))
        if len(args) > len(names):
            raise TypeError(f"{name}() takes {len(names)} arguments, got {len(args)}")
        missing = [n for n, d in zip(names[len(args):], defaults[len(args):]) if d is inspect.Parameter.empty]
        if missing:
            raise TypeError(f"{name}() missing arguments {missing}")
        return (name, *args, *defaults[len(args):])

    @functools.wraps(method)
    def memoised(self, *args, **kwargs):
        key = key_of(args, kwargs)
        return self._views.get_or_make(key, lambda: method(self, *key[1:]))

    memoised.view_key = key_of  # type: ignore[attr-defined]
    return memoised


class Views:
    """The memo behind `@view` methods, `memo` for ad-hoc keys and `seed`."""

    def __init__(self):
        self._views: BoundedCache = BoundedCache(None)

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """compute() once per key for this run (views, diff pieces), even
        when several requests ask for it at the same time."""
        return self._views.get_or_make(("memo", key), compute)

    def seed(self, method: str, args: tuple, value: Any) -> None:
        """The value `getattr(self, method)(*args)` would compute: later calls return it."""
        self._views.put(getattr(type(self), method).view_key(tuple(args), {}), value)
