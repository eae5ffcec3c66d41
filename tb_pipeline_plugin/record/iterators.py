"""Iterator wrappers that time each next() of a data loader."""
from __future__ import annotations

import sys
import time

_perf = time.perf_counter
# Our own attributes of a wrapper; any other is the real iterator's.
_OWN = frozenset({"_rec", "_source", "_make_iter", "_it", "_loader", "_cache", "_n", "_length", "_pos", "_yielded",
                  "_ended"})
_LOADER_CLASSES: dict[tuple[type, type], type] = {}


class TimedIter:
    """Yields the loader's batches; the time inside next() is data wait."""

    def __init__(self, rec, iterable, loader: int, make_iter=None):
        self._rec = rec
        self._source = iterable
        self._make_iter = make_iter
        self._it = None
        self._loader = loader
        self._yielded = False
        self._ended = False

    def _end(self, how: str) -> None:
        """Once: the loop is done with this iterator (recorder._loop_end)."""
        if not self._ended and self._yielded:
            self._ended = True
            self._rec._loop_end(how, self._loader)

    def __del__(self):
        # The loop dropped the iterator: `break`, an exception, its frame gone.
        try:
            self._end("left")
        except Exception:  # noqa: BLE001 - a finalizer must not raise (interpreter shutdown, a closed writer)
            pass

    def _real(self):
        # Created on first use: a headspace replay never starts the real
        # loader's workers once its cache is full.
        if self._it is None:
            self._it = iter(self._source) if self._make_iter is None else self._make_iter()
        return self._it

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._source)

    def __getattr__(self, name):
        # DataLoader iterators expose attributes some loops read (_num_yielded, ...).
        return getattr(self._real(), name)

    def __next__(self):
        rec = self._rec
        start = rec._begin_request(_perf())
        # After the profiler's step (and any trace export) in _begin_request.
        t_req = _perf()
        try:
            batch = next(self._it if self._it is not None else self._real())
        except StopIteration:
            self._end("exhausted")
            raise
        rec._open_step(start, t_req, _perf(), batch, self._loader, False)
        self._yielded = True
        return batch


class HeadspaceIter(TimedIter):
    """Caches the first `n` batches of `iterable` (across epochs) and replays
    them for the rest of each epoch: the step rate with data loading taken
    out, SPDL's headspace analysis without touching the script."""

    def __init__(self, rec, iterable, loader: int, cache: list, n: int, length: int, make_iter=None):
        super().__init__(rec, iterable, loader, make_iter)
        self._cache = cache
        self._n = n
        self._length = length
        self._pos = 0

    def __next__(self):
        rec = self._rec
        start = rec._begin_request(_perf())
        t_req = _perf()
        pos = self._pos
        if pos >= self._length:
            self._end("exhausted")
            raise StopIteration
        cache = self._cache
        cached = pos >= self._n or pos < len(cache)
        if cached and cache:
            batch = cache[pos % len(cache)]
        else:
            batch = next(self._real())
            cache.append(batch)
        self._pos = pos + 1
        rec._open_step(start, t_req, _perf(), batch, self._loader, cached and bool(cache))
        self._yielded = True
        return batch


def for_loader(wrapper: type, iterable) -> type:
    """`wrapper` itself, or for a torch DataLoader a subclass that is also a
    `torch.utils.data.dataloader._BaseDataLoaderIter`: code that checks the
    iterator's type (Lightning, Accelerate, resumable loaders) takes the
    wrapper for the loader's own iterator. Its attributes (`_num_yielded`,
    `_dataset`, ...) and methods are the real iterator's, read and written."""
    module = sys.modules.get("torch.utils.data.dataloader")
    base = getattr(module, "_BaseDataLoaderIter", None)
    if base is None or not isinstance(iterable, module.DataLoader):
        return wrapper
    cls = _LOADER_CLASSES.get((wrapper, base))
    if cls is None:
        cls = _LOADER_CLASSES[(wrapper, base)] = type(wrapper.__name__, (wrapper, base), _forwarding(wrapper, base))
    return cls


def _forwarding(wrapper: type, base: type) -> dict:
    """The class body of `for_loader`'s subclass: the base's methods that the
    wrapper does not define (`_reset`, `_next_data`, ...) call the real iterator's."""
    body: dict = {"__setattr__": _set_on_real}
    defined = set(vars(wrapper)) | set(vars(TimedIter))
    for name, value in vars(base).items():
        if callable(value) and name not in defined and name not in body and not name.startswith("__"):
            body[name] = _forward(name)
    return body


def _forward(name: str):
    def method(self, *args, **kwargs):
        return getattr(self._real(), name)(*args, **kwargs)

    method.__name__ = name
    return method


def _set_on_real(self, name: str, value) -> None:
    if name in _OWN:
        object.__setattr__(self, name, value)
    else:
        setattr(self._real(), name, value)

