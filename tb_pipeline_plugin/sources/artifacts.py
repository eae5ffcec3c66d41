"""One loadable artifact of a run, and how each kind is loaded.

The server's store caches artifacts by `Source` (kind + path) and file
identity (size, mtime), whatever their kind: a trace per worker and span
(parsed in a worker process, or mapped from the on-disk cache), a rank
record per trace (the distributed view, when the rank roll-up has none), a run's pipeline statistics and
its diagnostic results, each registered in `make_loader`, all with the same
loading states, errors, warnings and eviction.
"""
from __future__ import annotations

import os
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, NamedTuple

from ..analysis.processor import TraceProcessor
from ..readers import PipelineTables, load_pipeline_run
from ..readers.diagnostic import DiagnosticRun, parse_diagnostic
from ..trace.persist import CorruptEntry, entry_bytes
from .budget import MemoryBudget, shared_budget
from .cache import CacheConfig, TraceCache
from .filesystem import open_binary, stat_file
from .rollup import RankRecord, append as append_record, make_record
from .view_file import load_views
from .pool import ParsePool, WorkerConfig, shared_pool
from .workers import (
    FIRST_VIEWS,
    WORKER_BASE_BYTES,
    adopt_views,
    estimate_parse_bytes,
    map_entry,
    parse_to_entry,
    rank_summary_in_worker,
    stored_record,
)


# A published entry can go between the worker's publishing it and this
# process's mapping it: another process's eviction (its cache cap), or its
# publishing a newer version of the file. The load then looks again, once.
_VANISHED_RETRIES = 1


class Source(NamedTuple):
    kind: str  # "trace", "rank_summary", "pipeline", "diagnostic": a key of the loaders
    path: str  # the file; for "pipeline", the run directory


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
        return cls(TraceCache(CacheConfig.from_env(env)), shared_pool(workers.processes), shared_budget(workers.budget_bytes))

    @property
    def concurrency(self) -> int:
        """Loads worth running at once: two per worker process, so that a
        worker starts its next parse while the server maps the last one's
        result (benchmarks/README.md, "Figures behind constants")."""
        return max(1, 2 * self.pool.processes)

    def __call__(self, path: str) -> TraceProcessor:
        size, mtime = _stat(path)
        early = self.pool.take_early(path, size, mtime, self.cache.config.root,
                                     wait=not self.cache.holds(path, size, mtime))
        if early is not None:
            try:
                return self._mapped(path, *early.result())
            except BrokenProcessPool:
                pass  # the worker died: parsed again below, where the pool restarts and says why
            except CorruptEntry:
                pass  # gone before it was mapped (`_VANISHED_RETRIES`): looked up or parsed again below
        for retry in range(_VANISHED_RETRIES + 1):
            linked = self.cache.lookup(path, size, mtime)
            if linked is not None:
                tp = TraceProcessor.from_linked(linked, source=path)
                stored = load_views(self.cache.entry_dir(path, size, mtime), FIRST_VIEWS)
                if stored is not None:  # else built here, on request
                    adopt_views(tp, stored["views"])
                return tp
            try:
                return self._mapped(path, *self._in_worker(
                    parse_to_entry, path, size, mtime, estimate_parse_bytes(path, size), views=FIRST_VIEWS,
                    decode_processes=self.pool.decode_share()))
            except CorruptEntry:
                if retry == _VANISHED_RETRIES:
                    raise

    @staticmethod
    def _mapped(path: str, directory: str, ephemeral: bool, views: list | None) -> TraceProcessor:
        """The TraceProcessor of what `parse_to_entry` returned."""
        tp = TraceProcessor.from_linked(map_entry(directory, ephemeral), source=path)
        if views is not None:  # None: too deep to send back (workers._sendable); built here, on request
            adopt_views(tp, views)
        return tp

    def rank_summary(self, path: str) -> RankRecord:
        """One rank's record (the distributed view; usually read from the rank
        roll-up before anyone asks this): from its cache entry's views when it
        has them, else computed in a worker process (mapped from the cache
        there, or parsed): the server builds nothing per rank. Either way
        the roll-up learns it."""
        size, mtime = _stat(path)
        # An entry with its views answers at once: no worker, no mapping.
        record = stored_record(self.cache, path, size, mtime)
        if record is not None:
            append_record(self.cache.config.root, path, record)
            return record
        cached = entry_bytes(self.cache.entry_dir(path, size, mtime)) if self.cache.enabled else 0
        need = cached + WORKER_BASE_BYTES if cached else estimate_parse_bytes(path, size)
        return self._in_worker(rank_summary_in_worker, path, size, mtime, need)

    def _in_worker(self, fn, path: str, size: int, mtime: float, need_bytes: int, **kwargs):
        """fn(path, size, mtime, cache root, cache cap, **kwargs) on a worker, within the memory budget."""
        self.budget.check(path, size, need_bytes)
        self.budget.acquire(need_bytes)
        try:
            return self.pool.run(fn, path, size, mtime, self.cache.config.root, self.cache.config.max_bytes, **kwargs)
        finally:
            self.budget.release(need_bytes)


def _load_diagnostic(path: str) -> DiagnosticRun:
    """Diagnostic-mode results; a file still being appended to is read as far
    as it goes (the store reads it again when its size or mtime changes)."""
    with open_binary(path) as f:
        data = f.read()
    run = parse_diagnostic(data, path)
    if not run.records:
        why = run.warnings[0] if run.warnings and "line" in run.warnings[0] else (
            "the file is empty: the sweep has not written anything yet" if not data.strip() else
            "no line is a complete record")
        raise ValueError(f"no diagnostic record could be read: {why}")
    return run


def load_statistics(run_dir: str) -> PipelineTables | None:
    """A run directory's recorded pipeline statistics, or None without any
    (for the notebook API and the CLI, which read without the store)."""
    return load_pipeline_run(run_dir)


def _load_pipeline(run_dir: str) -> PipelineTables:
    tables = load_pipeline_run(run_dir)
    if tables is None:  # the files went away between discovery and the load
        raise ValueError(f"no pipeline statistics left in {run_dir}")
    return tables



def _stat(path: str) -> tuple[int, float]:
    size, mtime = stat_file(path)
    if size is None:
        raise FileNotFoundError(f"{path} is gone")
    return size, mtime


class InProcessTraceLoader:
    """A trace parsed in the calling thread, nothing written to the on-disk
    cache: the notebook API and the CLI, which read a pair once."""

    concurrency = 1

    def __call__(self, path: str) -> TraceProcessor:
        return TraceProcessor.load(path)

    def rank_summary(self, path: str) -> RankRecord:
        size, mtime = _stat(path)
        tp = self(path)
        return make_record(path, size, mtime, tp.overview(), tp.has_device, tp.warnings)


def make_loader(env=os.environ, in_process: bool = False) -> Callable[[Source], Any]:
    """The store's load function, configured from the environment;
    `in_process`: traces parsed by the caller's threads, not cached on disk."""
    trace = InProcessTraceLoader() if in_process else TraceLoader.from_env(env)
    loaders: dict[str, Callable[[str], Any]] = {
        "trace": trace,
        "rank_summary": trace.rank_summary,
        "pipeline": _load_pipeline,
        "diagnostic": _load_diagnostic,
    }

    def load(source: Source) -> Any:
        """The parsed artifact; raises with a user-facing reason when it cannot be read."""
        loader = loaders.get(source.kind)
        if loader is None:
            raise ValueError(f"no loader for artifacts of kind {source.kind!r}")
        return loader(source.path)

    load.loaders = loaders  # type: ignore[attr-defined]
    return load
