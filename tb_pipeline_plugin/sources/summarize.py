"""`tb-pipeline summarize LOGDIR`: write the cache entries the plugin maps.

A map over the logdir's trace files: each task parses one file and publishes
its entry in the cache directory (`sources/cache.py`), exactly what the
plugin's own worker processes do, so TensorBoard started afterwards on the
same logdir and cache serves every run without parsing. Files whose current
version is already cached are skipped.

The map runs on Dask distributed when given a scheduler address (a
1,000-rank job summarised across a cluster: the workers must see the logdir,
local or remote through TensorBoard's filesystem layer, and the cache
directory, e.g. a shared filesystem), else on a local process pool.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from ..errors import MissingExtra
from .cache import CacheConfig, TraceCache
from .logdir import discover_runs, stat_file
from .pool import WorkerConfig
from .workers import FIRST_VIEWS, MemoryBudget, TraceTooLarge, estimate_parse_bytes, parse_to_entry


@dataclass(frozen=True)
class FileResult:
    path: str
    status: str  # "parsed", "cached", "failed"
    error: str | None = None


def summarize_file(path: str, size: int, mtime: float, cache_root: str, cache_max_bytes: int, budget_bytes: int) -> FileResult:
    """One task (runs on a worker): parse and publish, or say why not."""
    try:
        MemoryBudget(budget_bytes).check(path, size, estimate_parse_bytes(path, size))
        # With the first views, so the plugin builds none of them either.
        directory, ephemeral, _ = parse_to_entry(path, size, mtime, cache_root, cache_max_bytes, views=FIRST_VIEWS)
        if ephemeral:  # the file changed while it was read: not cacheable now
            import shutil

            shutil.rmtree(directory, ignore_errors=True)
            return FileResult(path, "failed", "the file changed while it was read; run summarize again")
        return FileResult(path, "parsed")
    except (TraceTooLarge, OSError, ValueError, RuntimeError, MemoryError) as exc:
        return FileResult(path, "failed", f"{type(exc).__name__}: {exc}")


def trace_files(logdir: str) -> list[str]:
    return [tf.path for info in discover_runs(logdir).values() for tf in info.trace_files()]


def summarize(logdir: str, scheduler: str | None = None, processes: int | None = None,
              cache: CacheConfig | None = None, budget_bytes: int | None = None) -> list[FileResult]:
    cache = cache or CacheConfig.from_env()
    if cache.root is None:
        raise ValueError("the cache is off (TB_PIPELINE_CACHE_DIR=off): summarize has nowhere to write")
    workers = WorkerConfig.from_env()
    budget = budget_bytes if budget_bytes is not None else workers.budget_bytes
    store = TraceCache(cache)
    results, tasks = [], []
    for path in trace_files(logdir):
        size, mtime = stat_file(path)
        if size is None:
            continue
        if os.path.exists(os.path.join(store.entry_dir(path, size, mtime), "manifest.json")) and store.lookup(path, size, mtime) is not None:
            results.append(FileResult(path, "cached"))
            continue
        tasks.append((path, size, mtime, cache.root, cache.max_bytes, budget))
    if not tasks:
        return results
    columns = [list(c) for c in zip(*tasks)]
    if scheduler:
        try:
            from dask.distributed import Client
        except ImportError:
            raise MissingExtra("dask[distributed]", "cluster", "summarize --scheduler") from None

        with Client(scheduler) as client:
            futures = client.map(summarize_file, *columns, pure=False)
            results += client.gather(futures)
    else:
        n = processes or max(1, workers.processes)
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
            results += list(pool.map(summarize_file, *columns))
    return results
