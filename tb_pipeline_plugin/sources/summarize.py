"""`tb-pipeline summarize LOGDIR`: write what the plugin would otherwise parse.

A map over the logdir's trace files: each task parses one file and publishes
its cache entry (`sources/cache.py`: columns and first views) and its rank
record (`sources/rollup.py`), exactly what the plugin's own worker processes
do, so TensorBoard started afterwards on the same logdir and cache serves
every run without parsing, and the distributed view of a 10,000-rank job
from one roll-up file. Files whose current version is already there are
skipped.

`summaries_only`: the rank records alone, no cache entry (about 200 bytes a
rank where an entry is 1.5 MB of a 254 KB trace): for jobs that only need
the distributed view; the other tabs then parse a rank on request. Without
it, the job's entries are kept within the cache cap: once they would pass
it (`CAP_SHARE` of `TB_PIPELINE_CACHE_MAX_MB`, estimated from the entries
written so far), the remaining files are summarised only and the report
says so, rather than the job's own entries evicting each other.

The map runs on Dask distributed when given a scheduler address (a
10,000-rank job summarised across a cluster: the workers must see the
logdir, local or remote through TensorBoard's filesystem layer, and the
cache directory, e.g. a shared filesystem), else on a local process pool.
At the end the driver merges each directory's roll-up into one file.
"""
from __future__ import annotations

import multiprocessing
import os
import shutil
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass

from ..errors import MissingExtra
from ..trace.persist import entry_bytes
from .cache import CacheConfig, TraceCache
from .budget import MemoryBudget, TraceTooLarge
from .logdir import discover_runs
from .runs import TraceFile
from .pool import WorkerConfig
from .rollup import compact, read_all, rollup_dir, split_path
from .workers import (
    FIRST_VIEWS,
    decoded_bytes,
    estimate_parse_bytes,
    parse_to_entry,
    rank_summary_in_worker,
)

# The share of the cache cap one job's entries may fill: the rest is headroom
# for the estimate's error and the entries in flight.
CAP_SHARE = 0.9
# Entry bytes per decoded JSON byte assumed before the first entry is written.
_PRIOR_ENTRY_RATIO = 1.0
# Tasks in flight per worker process (or Dask thread): enough to keep each busy.
_IN_FLIGHT_PER_WORKER = 2


@dataclass(frozen=True)
class FileResult:
    path: str
    # "parsed": entry and record written; "summarised": record only; "cached": both were there; "failed"
    status: str
    error: str | None = None
    entry_bytes: int = 0


class Results(list):
    """The FileResults, and `cap_note`: why files were summarised only when
    the cache cap was reached (None when it was not)."""

    cap_note: str | None = None


def summarize_file(path: str, size: int, mtime: float, cache_root: str, cache_max_bytes: int, budget_bytes: int,
                   entry: bool = True) -> FileResult:
    """One task (runs on a worker): parse and publish the entry (`entry`) or
    only the rank record, or say why not."""
    try:
        MemoryBudget(budget_bytes).check(path, size, estimate_parse_bytes(path, size))
        if not entry:
            rank_summary_in_worker(path, size, mtime, cache_root, cache_max_bytes, keep_entry=False)
            return FileResult(path, "summarised")
        # With the first views (the overview among them: the record), so the plugin builds none of them either.
        directory, ephemeral, _ = parse_to_entry(path, size, mtime, cache_root, cache_max_bytes, views=FIRST_VIEWS)
        if ephemeral:  # the file changed while it was read: not cacheable now
            shutil.rmtree(directory, ignore_errors=True)
            return FileResult(path, "failed", "the file changed while it was read; run summarize again")
        return FileResult(path, "parsed", entry_bytes=entry_bytes(directory))
    except (TraceTooLarge, OSError, ValueError, RuntimeError, MemoryError) as exc:
        return FileResult(path, "failed", f"{type(exc).__name__}: {exc}")


def trace_files(logdir: str) -> list[str]:
    return [tf.path for tf in _trace_files(logdir)]


def _trace_files(logdir: str) -> list[TraceFile]:
    return [tf for info in discover_runs(logdir).values() for tf in info.trace_files()]


def _recorded(root: str, files: list[TraceFile]) -> set[str]:
    """The files whose current version has a rank record."""
    keys = set()
    for directory in {split_path(tf.path)[0] for tf in files}:
        keys |= {(directory, r.file, r.size, r.mtime) for r in read_all(rollup_dir(root, directory))}
    return {tf.path for tf in files if (*split_path(tf.path), tf.size, tf.mtime) in keys}


class _CapBook:
    """This job's entry bytes against its share of the cap: whether the
    next file's entry still fits, estimated from the entries written so far."""

    def __init__(self, cap_bytes: int):
        self.budget = int(cap_bytes * CAP_SHARE)
        self.used = 0
        self.written = self.decoded = 0
        self.pending: dict[str, int] = {}

    def estimate(self, path: str, size: int) -> int:
        ratio = self.written / self.decoded if self.decoded else _PRIOR_ENTRY_RATIO
        return int(decoded_bytes(path, size) * ratio)

    def admit(self, path: str, size: int) -> bool:
        need = self.estimate(path, size)
        if self.used + sum(self.pending.values()) + need > self.budget:
            return False
        self.pending[path] = need
        return True

    def done(self, result: FileResult, size: int) -> None:
        self.pending.pop(result.path, None)
        if result.entry_bytes:
            self.used += result.entry_bytes
            self.written += result.entry_bytes
            self.decoded += decoded_bytes(result.path, size)


def summarize(logdir: str, scheduler: str | None = None, processes: int | None = None,
              cache: CacheConfig | None = None, budget_bytes: int | None = None,
              summaries_only: bool = False) -> Results:
    cache = cache or CacheConfig.from_env()
    if cache.root is None:
        raise ValueError("the cache is off (TB_PIPELINE_CACHE_DIR=off): summarize has nowhere to write")
    workers = WorkerConfig.from_env()
    budget = budget_bytes if budget_bytes is not None else workers.budget_bytes
    store = TraceCache(cache)
    files = _trace_files(logdir)
    recorded = _recorded(cache.root, files)
    book = _CapBook(cache.max_bytes)
    results, todo = Results(), []
    for tf in files:
        has_entry = not summaries_only and store.lookup(tf.path, tf.size, tf.mtime) is not None
        if has_entry:
            book.used += entry_bytes(store.entry_dir(tf.path, tf.size, tf.mtime))
        if tf.path in recorded and (summaries_only or has_entry):
            results.append(FileResult(tf.path, "cached"))
        else:
            # An entry without a record needs only the record (read from the entry's views).
            todo.append((tf, not summaries_only and not has_entry))
    if todo:
        capped = _run(todo, cache, budget, book, scheduler, processes or max(1, workers.processes), results)
        if capped:
            results.cap_note = (
                f"The cache cap (TB_PIPELINE_CACHE_MAX_MB, {cache.max_bytes / 2**20:,.6g} MB) holds the entries of "
                f"{sum(r.status == 'parsed' for r in results):,} of these traces; {capped:,} more were summarised "
                "only (the distributed view has every rank; their other tabs parse on request). Raise "
                "TB_PIPELINE_CACHE_MAX_MB, or pass --summaries-only when a job only needs the distributed view.")
    _compact(cache.root, files)
    return results


def _run(todo: list[tuple[TraceFile, bool]], cache: CacheConfig, budget: int, book: _CapBook,
         scheduler: str | None, processes: int, results: list) -> int:
    """Runs the tasks, a window at a time so each file's entry is admitted
    against the cap when it starts; returns how many were summarised only
    because the cap was reached."""
    sizes = {tf.path: tf.size for tf, _ in todo}
    capped = 0

    def task(tf: TraceFile, wants_entry: bool) -> tuple:
        nonlocal capped
        entry = wants_entry and book.admit(tf.path, tf.size)
        capped += wants_entry and not entry
        return summarize_file, tf.path, tf.size, tf.mtime, cache.root, cache.max_bytes, budget, entry

    with _executor(scheduler, processes) as (submit, first_done, window):
        queue, in_flight = list(reversed(todo)), set()
        while queue or in_flight:
            while queue and len(in_flight) < window:
                in_flight.add(submit(*task(*queue.pop())))
            done, in_flight = first_done(in_flight)
            for future in done:
                result = future.result()
                book.done(result, sizes[result.path])
                results.append(result)
    return capped


class _executor:
    """(submit(fn, *args) -> future, first_done(futures) -> (done, not done), window) of a local
    process pool or a Dask cluster."""

    def __init__(self, scheduler: str | None, processes: int):
        self.scheduler, self.processes = scheduler, processes

    def __enter__(self):
        if self.scheduler:
            try:
                from dask.distributed import Client
                from dask.distributed import wait as dask_wait
            except ImportError:
                raise MissingExtra("dask[distributed]", "cluster", "summarize --scheduler") from None
            self._closing = Client(self.scheduler)
            client = self._closing
            window = _IN_FLIGHT_PER_WORKER * max(1, sum(client.nthreads().values()))

            def first_done(futures):
                done = dask_wait(list(futures), return_when="FIRST_COMPLETED").done
                return done, futures - done

            return (lambda fn, *args: client.submit(fn, *args, pure=False)), first_done, window
        self._closing = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"))
        pool = self._closing

        def first_done_local(futures):
            done, rest = wait(futures, return_when=FIRST_COMPLETED)
            return done, set(rest)

        return pool.submit, first_done_local, _IN_FLIGHT_PER_WORKER * self.processes

    def __exit__(self, *exc):
        if self.scheduler:
            self._closing.close()
        else:
            self._closing.shutdown(wait=True)
        return False


def _compact(root: str, files: list[TraceFile]) -> None:
    """One roll-up file per directory: what the plugin reads at its first request."""
    current: dict[str, dict[str, tuple[int, float]]] = {}
    for tf in files:
        directory, name = split_path(tf.path)
        current.setdefault(directory, {})[name] = (tf.size, tf.mtime)
    for directory, names in current.items():
        compact(rollup_dir(root, directory), names)
