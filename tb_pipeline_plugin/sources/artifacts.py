"""One loadable artifact of a run, and how each kind is loaded.

The server's store caches artifacts by `Source` (kind + path) and file
identity (size, mtime), whatever their kind: a trace per worker and span
today; pipeline statistics and diagnostic results register their loader in
`make_loaders` the same way, and get the same loading states, errors,
warnings and eviction for free.
"""
from __future__ import annotations

import os
import shutil
from typing import Any, Callable, NamedTuple

from ..analysis.processor import TraceProcessor
from ..trace.persist import load_linked
from .cache import CacheConfig, TraceCache
from .logdir import stat_file
from .workers import MemoryBudget, ParsePool, WorkerConfig, estimate_parse_bytes, parse_to_entry, shared_pool


class Source(NamedTuple):
    kind: str  # "trace", ...: a key of the loaders
    path: str


class TraceLoader:
    """A trace as a TraceProcessor: mapped from the on-disk cache when this
    file version was parsed before (by this process, an earlier one, or
    `tb-pipeline summarize`), else parsed in a worker process."""

    def __init__(self, cache: TraceCache, pool: ParsePool, budget: MemoryBudget):
        self.cache = cache
        self.pool = pool
        self.budget = budget

    @classmethod
    def from_env(cls, env=os.environ) -> "TraceLoader":
        workers = WorkerConfig.from_env(env)
        return cls(TraceCache(CacheConfig.from_env(env)), shared_pool(workers.processes), MemoryBudget(workers.budget_bytes))

    def __call__(self, path: str) -> TraceProcessor:
        size, mtime = stat_file(path)
        if size is None:
            raise FileNotFoundError(f"{path} is gone")
        linked = self.cache.lookup(path, size, mtime)
        if linked is None:
            need = estimate_parse_bytes(path, size)
            self.budget.check(path, size, need)
            self.budget.acquire(need)
            try:
                directory, ephemeral = self.pool.run(
                    parse_to_entry, path, size, mtime, self.cache.config.root, self.cache.config.max_bytes
                )
            finally:
                self.budget.release(need)
            try:
                # Just written and checked by the worker: skip the checksums.
                linked = load_linked(directory, verify=False)
            finally:
                if ephemeral:
                    shutil.rmtree(directory, ignore_errors=True)
        return TraceProcessor.from_linked(linked, source=path)


class RankSummary:
    """What the distributed view needs of one rank: kept for every rank of a
    run at once, where the full traces of hundreds of ranks would not fit."""

    __slots__ = ("overview", "has_device", "warnings")

    def __init__(self, tp: TraceProcessor):
        self.overview = tp.overview()
        self.has_device = tp.has_device
        self.warnings = list(tp.warnings)


def make_loader(env=os.environ) -> Callable[[Source], Any]:
    """The store's load function, configured from the environment."""
    trace = TraceLoader.from_env(env)
    loaders: dict[str, Callable[[str], Any]] = {
        "trace": trace,
        "rank_summary": lambda path: RankSummary(trace(path)),
    }

    def load(source: Source) -> Any:
        """The parsed artifact; raises with a user-facing reason when it cannot be read."""
        loader = loaders.get(source.kind)
        if loader is None:
            raise ValueError(f"no loader for artifacts of kind {source.kind!r}")
        return loader(source.path)

    load.loaders = loaders  # type: ignore[attr-defined]
    return load
