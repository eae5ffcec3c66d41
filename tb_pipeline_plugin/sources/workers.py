"""Parsing in worker processes, bounded by cores and by a memory budget.

A parse is seconds of Python holding the GIL; inside the TensorBoard process
it would stall every other request. Here it runs in a process of a shared
pool; the worker writes its result as a persisted entry (`trace.persist`:
raw columns in one file) and the server maps that back, so nothing is parsed twice
and no Python objects cross the process boundary. With the cache on, the
entry is published in the cache directory; with it off, the worker writes a
private directory the server deletes once mapped (the mapping stays valid).

The pool itself is `sources/pool.py` (light, so that TensorBoard's start
can start a worker before importing this). Every parse reserves its
estimated peak memory against a budget first: one that could never fit is
refused with the reason (shown in `runs`), others wait until enough earlier
parses finished. Environment: `TB_PIPELINE_MEMORY_BUDGET_MB` (default half
the machine's memory).
"""
from __future__ import annotations

import ctypes
import itertools
import os
import shutil
import struct
import sys
from concurrent.futures import ThreadPoolExecutor

from ..analysis.processor import TraceProcessor
from ..trace import load_trace
from ..trace.link import link
from ..trace.persist import COLUMNS, load_linked, save_linked
from ..trace.reader import GZIP_MAGIC
from ..trace.shared_join import JoinFile
from .cache import CacheConfig, TraceCache
from .filesystem import is_remote, open_binary, stat_file
from .logdir import discover_runs
from .runs import default_traces
from .pool import MIB
from .rollup import RankRecord, append as append_record, make_record
from .view_file import load_views, save_views

# Peak resident memory of a parse per byte of decoded JSON, above the
# worker peaks bench_scale.py measures (benchmarks/README.md, "Figures behind
# constants"): room for traces with more distinct strings.
PEAK_BYTES_PER_JSON_BYTE = 3.0
# Fixed cost of a worker (interpreter, numpy, pandas, msgspec).
WORKER_BASE_BYTES = 200 * MIB
# A remote gzip's trailer is not read (one more round trip); JSON traces
# compress about 8-15x, so this is the likely size, not a bound.
_REMOTE_GZIP_RATIO = 12


def decoded_bytes(path: str, size: int) -> int:
    """Bytes of JSON the file decodes to: the file size, or for gzip the
    trailer's ISIZE (length mod 2**32: lifted to at least the compressed size)."""
    try:
        with open_binary(path) as f:
            magic = f.read(2)
            if magic != GZIP_MAGIC:
                return size
            if is_remote(path) or size < 18:
                return size * _REMOTE_GZIP_RATIO
            f.seek(size - 4)
            (isize,) = struct.unpack("<I", f.read(4))
    except OSError:
        return size
    while isize < size:
        isize += 1 << 32
    return isize


def estimate_parse_bytes(path: str, size: int) -> int:
    return int(decoded_bytes(path, size) * PEAK_BYTES_PER_JSON_BYTE) + WORKER_BASE_BYTES


# The per-run views a run's tabs open with (TraceProcessor method, arguments).
# A parse computes them in its worker, on the columns still in memory, and
# hands them back with the entry: the server then never spends its GIL on
# them (with many small ranks they cost as much as the parse itself).
FIRST_VIEWS = (
    ("overview", ()),
    ("operators", ("name",)),
    ("operators", ("name_and_shape",)),
    ("kernels", ()),
    ("modules", ()),
)


OVERVIEW_ONLY = (FIRST_VIEWS[0],)  # what a rank summary (the distributed view) needs


def compute_views(tp: TraceProcessor, wanted=FIRST_VIEWS) -> list:
    """The `FIRST_VIEWS` values, None for those not `wanted`."""
    return [getattr(tp, method)(*args) if (method, args) in wanted else None for method, args in FIRST_VIEWS]


def adopt_views(tp: TraceProcessor, views: list) -> None:
    """Seeds `tp`'s views with `views` (from `compute_views` in a worker, or
    kept with a cache entry; None: not computed). Call before `tp` is shared
    with other threads."""
    for (method, args), value in zip(FIRST_VIEWS, views, strict=True):
        if value is not None:
            tp.seed(method, args, value)


def _sendable(views: list) -> list | None:
    """`views` if they can travel back to the server, else None: a module
    tree thousands of levels deep (a hostile or broken trace) is past
    pickle's recursion limit, and then the server builds the views itself
    rather than the whole load failing. A walk of the nested dicts and
    lists, not a trial pickle: the pool pickles the views once anyway."""
    limit = sys.getrecursionlimit() // 4  # pickle spends a few frames a level
    stack = [(views, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return None
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return views


def early_parses(logdir: str, processes: int, budget_bytes: int, settings: dict[str, str]) -> list[tuple]:
    """Runs in a worker at TensorBoard's start (`pool.ParsePool.parse_early`):
    the parses the run listing begins first: the default traces, in the
    listed order, that the cache does not hold, one per worker process, as
    far as they fit the memory budget together. Each as (bytes to reserve,
    `parse_to_entry`'s arguments, its keyword arguments): plain values, sent
    to a server that has not imported this module yet."""
    config = CacheConfig.from_env(settings)
    if config.root is None:
        return []
    cache = TraceCache(config)
    chosen: list[tuple] = []
    reserved = 0
    listed = (tf for _, tf in default_traces(discover_runs(logdir)))
    for tf in itertools.islice((tf for tf in listed if not cache.holds(tf.path, tf.size, tf.mtime)), processes):
        need = estimate_parse_bytes(tf.path, tf.size)
        if reserved + need > budget_bytes:
            break
        reserved += need
        chosen.append((tf, need))
    share = max(1, processes // max(1, len(chosen)))
    return [(need, (tf.path, tf.size, tf.mtime, config.root, config.max_bytes),
             {"views": FIRST_VIEWS, "decode_processes": share}) for tf, need in chosen]


def parse_to_entry(path: str, size: int, mtime: float, cache_root: str | None, cache_max_bytes: int,
                   views=(), decode_processes: int = 1) -> tuple[str, bool, list | None]:
    """Runs in a worker: decode + link `path` and persist the result;
    `decode_processes` > 1 forks that many to decode a big file (a pool
    worker is single-threaded: safe to fork).
    Returns (entry directory, ephemeral: the caller deletes it after mapping,
    `compute_views` of the `views` wanted, None when none are). With the
    cache on, the entry keeps them too (`view_file.py`)."""
    cache = TraceCache(CacheConfig(cache_root, cache_max_bytes))
    staged = cache.staging_dir()
    try:
        # A local file without an opener: the decoding processes read it themselves.
        opener = open_binary if is_remote(path) else None
        # Forked decoders write the table straight into the entry's columns file; only the link's are left to write.
        with JoinFile(os.path.join(staged, COLUMNS)) as into:
            linked = link(load_trace(path, opener=opener, processes=decode_processes, into=into))
        # Writing the columns (file writes and checksums, without the GIL)
        # overlaps building the views: no analysis modifies `linked`.
        with ThreadPoolExecutor(1) as writer:
            saving = writer.submit(save_linked, linked, staged, into)
            computed = record = None
            if views:
                tp = TraceProcessor.from_linked(linked, source=path)
                computed = _sendable(compute_views(tp, views))
                if cache.enabled and computed is not None:  # kept with the entry for the next cache hit
                    save_views(staged, FIRST_VIEWS, computed, tp.has_device, tp.warnings)
                if computed is not None and computed[0] is not None:  # the overview: this rank's record
                    record = make_record(path, size, mtime, computed[0], tp.has_device, tp.warnings)
                del tp
            saving.result()
        del linked
        # A file rewritten while it was read must not be cached under the old version.
        if cache.enabled and stat_file(path) == (size, mtime):
            published = cache.publish(staged, path, size, mtime)
            if record is not None:  # the rank roll-up learns it as the rank loads
                append_record(cache_root, path, record)
            return published, False, computed
        return staged, True, computed
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    finally:
        _release_memory(path, size)


def map_entry(directory: str, ephemeral: bool):
    """The LinkedTrace `parse_to_entry` just wrote, mapped; an ephemeral
    entry is deleted at once (the mapping stays valid)."""
    try:
        # Just written and checked by the worker: skip the checksums.
        return load_linked(directory, verify=False)
    finally:
        if ephemeral:
            shutil.rmtree(directory, ignore_errors=True)


def stored_record(cache: TraceCache, path: str, size: int, mtime: float) -> RankRecord | None:
    """A rank's record from the overview kept with its cache entry (`view_file`),
    without mapping the columns; None when the entry has no usable views."""
    if not cache.enabled:
        return None
    stored = load_views(cache.entry_dir(path, size, mtime), FIRST_VIEWS, only={FIRST_VIEWS.index(OVERVIEW_ONLY[0])})
    overview = stored["views"][0] if stored else None
    if overview is None:
        return None
    return make_record(path, size, mtime, overview, stored["has_device"], stored["warnings"])


def rank_summary_in_worker(path: str, size: int, mtime: float, cache_root: str | None, cache_max_bytes: int,
                           keep_entry: bool = True) -> RankRecord:
    """Runs in a worker: what the distributed view needs of one rank (its
    record), from the cache entry, or a parse that writes one (`keep_entry`)
    or only the record (`summarize --summaries-only`: 200 bytes, not 1.5 MB).
    The record goes into the rank roll-up. Hundreds of ranks are read in
    parallel, outside the server."""
    cache = TraceCache(CacheConfig(cache_root, cache_max_bytes))
    record = stored_record(cache, path, size, mtime)
    if record is not None:
        append_record(cache_root, path, record)
        return record
    linked = cache.lookup(path, size, mtime)
    computed, written = None, False
    if linked is None and keep_entry:
        directory, ephemeral, computed = parse_to_entry(path, size, mtime, cache_root, cache_max_bytes, views=OVERVIEW_ONLY)
        linked = map_entry(directory, ephemeral)
        written = not ephemeral and computed is not None  # parse_to_entry appended the record
    elif linked is None:
        linked = link(load_trace(path, opener=open_binary if is_remote(path) else None))
    tp = TraceProcessor.from_linked(linked, source=path)
    if computed is not None:
        adopt_views(tp, computed)
    try:
        record = make_record(path, size, mtime, tp.overview(), tp.has_device, tp.warnings)
        # Only a version still on disk: a file rewritten meanwhile must not be recorded under the old one.
        if not written and stat_file(path) == (size, mtime):
            append_record(cache_root, path, record)
        return record
    finally:
        del tp, linked
        _release_memory(path, size)


# Below this file size a parse's peak is small and trimming (a call, then the
# next parse faulting the pages back in) costs more than it frees; with many
# small ranks it is a visible share of each one's worker time
# (benchmarks/README.md, "Figures behind constants").
_TRIM_MIN_BYTES = 32 * MIB


def _release_memory(path: str, size: int) -> None:
    """An idle worker should not sit on a big parse's peak: glibc keeps freed
    small-object arenas unless asked to give them back."""
    likely_json_bytes = size * _REMOTE_GZIP_RATIO if path.endswith(".gz") else size
    if likely_json_bytes < _TRIM_MIN_BYTES or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
