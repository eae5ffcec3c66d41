"""Parsed-trace cache, worker-process parsing, memory guard.

Every load here is a real parse of a real trace (recorded with torch.profiler
or HTA's sample set) in a real worker process, compared with the in-process
`TraceProcessor.load` of the same file, whose numbers the oracle tests check.
"""
from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from werkzeug.test import Client

from conftest import PLUGIN_PREFIX, REPO_ROOT, build_tb_app, wait_ready
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.sources import artifacts
from tb_pipeline_plugin.sources.artifacts import TraceLoader
from tb_pipeline_plugin.sources.cache import CacheConfig, TraceCache
from tb_pipeline_plugin.sources.pool import shared_pool
from tb_pipeline_plugin.sources.budget import MemoryBudget
from tb_pipeline_plugin.sources.workers import FIRST_VIEWS
from tb_pipeline_plugin.sources.view_file import VIEWS
from tb_pipeline_plugin.trace.persist import COLUMNS, MANIFEST

# The two tests that measure a latency; the rest assert no time and run on the parallel workers.
TIMING = pytest.mark.timing(
    "latencies: a cache hit after a restart, routes answering while a big trace parses"
)

BIG_BUDGET = 1 << 40


def _trace_of(run_dir: Path) -> Path:
    return sorted(run_dir.glob("*.pt.trace.json*"))[0]


@pytest.fixture
def trace_copy(recorded_logdir, tmp_path):
    """A private copy of the recorded baseline trace (tests modify it)."""
    src = _trace_of(recorded_logdir / "baseline")
    dst = tmp_path / "logdir" / "run" / src.name
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    return dst


def _loader(cache_root, processes=1, max_mb=1024, budget=BIG_BUDGET) -> TraceLoader:
    return TraceLoader(TraceCache(CacheConfig(str(cache_root), int(max_mb * (1 << 20)))), shared_pool(processes), MemoryBudget(budget))


def _assert_same_views(a: TraceProcessor, b: TraceProcessor):
    assert a.overview() == b.overview()
    for group_by in ("name", "name_and_shape"):
        pd.testing.assert_frame_equal(a.operators(group_by), b.operators(group_by))
    pd.testing.assert_frame_equal(a.kernels(), b.kernels())
    assert a.modules() == b.modules()
    assert a.warnings == b.warnings
    assert a.table.metadata == b.table.metadata


def _is_mapped(arr: np.ndarray) -> bool:
    while arr is not None:
        if isinstance(arr, np.memmap):
            return True
        arr = arr.base if isinstance(arr, np.ndarray) else None
    return False


class _NoParse:
    """Fails the test if a load parses instead of hitting the cache."""

    def __call__(self, *args):
        raise AssertionError("parsed although a valid cache entry exists")


@TIMING
def test_cache_hit_after_restart_maps_columns_without_parse(trace_copy, tmp_path, monkeypatch):
    cache_root = tmp_path / "cache"
    direct = TraceProcessor.load(str(trace_copy))
    first = _loader(cache_root)(str(trace_copy))  # parsed in a worker process
    _assert_same_views(first, direct)
    [entry] = TraceCache(CacheConfig(str(cache_root), 1 << 30)).entries()
    assert not str(entry[2]).startswith(str(trace_copy.parent))  # never inside the logdir
    assert sorted(p.name for p in trace_copy.parent.iterdir()) == [trace_copy.name]

    # A new loader (as after a TensorBoard restart) must map, not parse.
    monkeypatch.setattr(artifacts, "parse_to_entry", _NoParse())
    t0 = time.perf_counter()
    warm = _loader(cache_root)(str(trace_copy))
    warm_s = time.perf_counter() - t0
    assert _is_mapped(warm.table.ts_us) and _is_mapped(warm.linked.parent)  # mapped, not read
    assert len(warm._views) == len(FIRST_VIEWS)  # the views kept with the entry, none built here
    _assert_same_views(warm, direct)
    assert warm_s < 5, warm_s  # generous: the benchmark reports the real figure


@pytest.mark.parametrize("damage", ["flip_byte", "other_analysis", "other_views", "delete"])
def test_damaged_or_stale_views_are_built_again_not_served(trace_copy, tmp_path, damage):
    """The views kept with an entry are used only when intact and written by
    this analysis code; otherwise the columns are still used and the views
    built again, with the same numbers."""
    import json

    cache_root = tmp_path / "cache"
    _loader(cache_root)(str(trace_copy))
    [(_, _, entry)] = TraceCache(CacheConfig(str(cache_root), 1 << 30)).entries()
    views = Path(entry) / VIEWS
    if damage == "flip_byte":
        raw = bytearray(views.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        views.write_bytes(bytes(raw))
    elif damage in ("other_analysis", "other_views"):
        outer = json.loads(views.read_text())
        body = json.loads(outer["body"])
        if damage == "other_analysis":
            body["analysis"] = "0" * 16
        else:  # written when the list of first views was another
            body["names"], body["views"] = body["names"][:-1], body["views"][:-1]
        outer["body"] = json.dumps(body)
        outer["crc32"] = zlib.crc32(outer["body"].encode())
        views.write_text(json.dumps(outer))
    else:
        views.unlink()
    warm = _loader(cache_root)(str(trace_copy))
    assert len(warm._views) == 0  # nothing adopted
    _assert_same_views(warm, TraceProcessor.load(str(trace_copy)))


def test_changed_file_is_parsed_again_and_old_entry_dropped(trace_copy, tmp_path):
    cache_root = tmp_path / "cache"
    cache = TraceCache(CacheConfig(str(cache_root), 1 << 30))
    _loader(cache_root)(str(trace_copy))
    [(_, _, old_dir)] = cache.entries()

    # The file grows (a profiler still writing, a copy finishing).
    data = trace_copy.read_bytes()
    trace_copy.write_bytes(data + b"\n" * 10)
    os.utime(trace_copy, (time.time() + 5, time.time() + 5))
    st = trace_copy.stat()
    assert cache.lookup(str(trace_copy), st.st_size, st.st_mtime) is None

    reloaded = _loader(cache_root)(str(trace_copy))
    _assert_same_views(reloaded, TraceProcessor.load(str(trace_copy)))
    [(_, _, new_dir)] = cache.entries()
    assert new_dir != old_dir and not os.path.exists(old_dir)


def test_size_cap_evicts_least_recently_used(recorded_logdir, tmp_path):
    cache_root = tmp_path / "cache"
    paths = []
    for name in ("baseline", "experimental", "slow_loader"):
        dst = tmp_path / "logdir" / name / _trace_of(recorded_logdir / name).name
        dst.parent.mkdir(parents=True)
        shutil.copy(_trace_of(recorded_logdir / name), dst)
        paths.append(str(dst))
    cache = TraceCache(CacheConfig(str(cache_root), 1 << 30))
    _loader(cache_root)(paths[0])
    one_entry = cache.total_bytes()
    # Room for two entries of this size, not three.
    cap_mb = 2.5 * one_entry / (1 << 20)
    load = _loader(cache_root, max_mb=cap_mb)
    load(paths[1])
    time.sleep(0.05)
    load(paths[0])  # a hit: paths[0] becomes the most recently used
    time.sleep(0.05)
    load(paths[2])  # over the cap: the least recently used (paths[1]) goes
    capped = TraceCache(CacheConfig(str(cache_root), int(cap_mb * (1 << 20))))
    assert capped.total_bytes() <= capped.config.max_bytes
    present = {p for p in paths if any(capped.entry_dir(p, os.path.getsize(p), os.path.getmtime(p)) == d for _, _, d in capped.entries())}
    assert present == {paths[0], paths[2]}


def test_publishing_many_entries_does_not_rescan_the_cache_each_time(shared_traces, tmp_path, monkeypatch):
    """A 1,000-rank job publishes 1,000 entries: sizing every entry on every
    publish (as before) is N^2 stats. Now a process scans once, then counts
    what it publishes; 300 publishes size about 300 entries, not 45,000."""
    from support.cache_publisher import publish_copies
    from tb_pipeline_plugin.sources import cache as cache_module

    sized = []
    real = cache_module.entry_bytes
    monkeypatch.setattr(cache_module, "entry_bytes", lambda d: sized.append(d) or real(d))
    root = tmp_path / "cache"
    publish_copies(str(shared_traces / "multi_rank" / "sampled_rank-0.json.gz"), str(root), 1 << 40,
                   [f"/job/rank{i}.pt.trace.json" for i in range(300)])
    cache = TraceCache(CacheConfig(str(root), 1 << 40))
    assert len(cache.entries()) == 300
    assert len(sized) <= 300 + 2 + 300  # its own size per publish, one scan at the first, the count just now


def test_cap_holds_with_several_processes_publishing(shared_traces, tmp_path):
    """Two processes publish into one cache (two servers, or `summarize`
    beside TensorBoard): each sees the other's entries only when it scans,
    which it does whenever its own count reaches the cap or a tenth of it."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    from support.cache_publisher import publish_copies
    from tb_pipeline_plugin.sources.cache import RESCAN_SHARE

    trace = str(shared_traces / "multi_rank" / "sampled_rank-0.json.gz")
    root = tmp_path / "cache"
    publish_copies(trace, str(root), 1 << 40, ["/probe"])
    one = TraceCache(CacheConfig(str(root), 1 << 40)).total_bytes()
    cap = 10 * one
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        jobs = [ex.submit(publish_copies, trace, str(root), cap, [f"/p{k}/rank{i}" for i in range(30)]) for k in range(2)]
        for job in jobs:
            job.result()
    total = TraceCache(CacheConfig(str(root), cap)).total_bytes()
    assert total <= cap * (1 + 2 * RESCAN_SHARE) + one


def test_a_published_entry_stays_while_other_parses_of_its_version_publish(shared_traces, tmp_path):
    """Two parses of one file version (two servers on one logdir, or the
    start's early parse beside a request's) both publish. The one that
    finishes second used to delete the first's entry and rename its own into
    place, and a server mapping the first one in between answered 422
    ("unreadable manifest", seen in CI). Two processes publish one version
    40 times each while this one maps it: every mapping must succeed."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    from support.cache_publisher import publish_copies
    from tb_pipeline_plugin.trace.persist import load_linked

    trace = str(shared_traces / "multi_rank" / "sampled_rank-0.json.gz")
    root = tmp_path / "cache"
    publish_copies(trace, str(root), 1 << 40, ["/job/rank0.pt.trace.json"])
    cache = TraceCache(CacheConfig(str(root), 1 << 40))
    [(_, _, entry)] = cache.entries()
    first_manifest = os.stat(Path(entry) / MANIFEST).st_ino
    failures, maps = [], 0
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        jobs = [ex.submit(publish_copies, trace, str(root), 1 << 40, ["/job/rank0.pt.trace.json"] * 40) for _ in range(2)]
        while not all(j.done() for j in jobs):
            try:
                load_linked(entry, verify=False)
            except Exception as exc:  # noqa: BLE001 - each failure is what the test reports
                failures.append(repr(exc))
            maps += 1
        for job in jobs:
            job.result()
    assert failures == [], f"{len(failures)} of {maps} mappings failed: {failures[:3]}"
    assert maps > 10
    assert os.stat(Path(entry) / MANIFEST).st_ino == first_manifest  # the first entry was never replaced
    assert [d for _, _, d in cache.entries()] == [entry]
    assert os.listdir(root / "staging") == []  # the later parses' copies are gone


def test_an_entry_gone_before_it_is_mapped_is_parsed_again(trace_copy, tmp_path, monkeypatch):
    """Between a worker's publishing an entry and the server's mapping it,
    another process may evict it (its own cap) or publish a newer version of
    the file: the load parses again instead of answering that the trace could
    not be read."""
    cache_root = tmp_path / "cache"
    real = artifacts.parse_to_entry
    parses = []

    def parse_then_lose_the_entry(*args, **kwargs):
        directory, ephemeral, views = real(*args, **kwargs)
        parses.append(directory)
        if len(parses) == 1:
            shutil.rmtree(directory)  # what another process's eviction does
        return directory, ephemeral, views

    monkeypatch.setattr(artifacts, "parse_to_entry", parse_then_lose_the_entry)
    loaded = _loader(cache_root, processes=0)(str(trace_copy))
    assert len(parses) == 2
    _assert_same_views(loaded, TraceProcessor.load(str(trace_copy)))
    assert [d for _, _, d in TraceCache(CacheConfig(str(cache_root), 1 << 30)).entries()] == [parses[1]]


@pytest.mark.parametrize("damage", ["truncate_columns", "flip_byte", "garble_manifest", "delete_columns"])
def test_corrupt_entry_is_discarded_and_rebuilt(trace_copy, tmp_path, damage):
    cache_root = tmp_path / "cache"
    cache = TraceCache(CacheConfig(str(cache_root), 1 << 30))
    _loader(cache_root)(str(trace_copy))
    [(_, _, entry)] = cache.entries()
    column = Path(entry) / COLUMNS
    if damage == "truncate_columns":
        column.write_bytes(column.read_bytes()[:-8])
    elif damage == "flip_byte":
        raw = bytearray(column.read_bytes())
        raw[-3] ^= 0xFF
        column.write_bytes(bytes(raw))
    elif damage == "garble_manifest":
        (Path(entry) / MANIFEST).write_text('{"crc32": 1, "body": "{}"}')
    else:
        column.unlink()
    st = trace_copy.stat()
    assert cache.lookup(str(trace_copy), st.st_size, st.st_mtime) is None
    assert not os.path.exists(entry)  # discarded, not kept to fail again

    rebuilt = _loader(cache_root)(str(trace_copy))
    _assert_same_views(rebuilt, TraceProcessor.load(str(trace_copy)))
    assert len(cache.entries()) == 1


def test_every_segment_of_the_columns_is_checked(trace_copy, tmp_path, monkeypatch):
    """The columns' checksums are per segment (checked on every core at a
    restart): a byte changed in any one segment, first, middle or last, is
    found, and so is a manifest whose checksums are gone."""
    from tb_pipeline_plugin.trace import persist
    from tb_pipeline_plugin.trace.link import link
    from tb_pipeline_plugin.trace import load_trace

    monkeypatch.setattr(persist, "SEGMENT_BYTES", 64 << 10)
    linked = link(load_trace(str(trace_copy)))
    entry = tmp_path / "entry"
    entry.mkdir()
    persist.save_linked(linked, str(entry))
    column = entry / COLUMNS
    pristine = column.read_bytes()
    body = json.loads(json.loads((entry / MANIFEST).read_text())["body"])
    assert body["segment_bytes"] == 64 << 10
    assert len(body["segment_crc32"]) == -(-len(pristine) // (64 << 10)) >= 3
    persist.load_linked(str(entry))  # intact
    for at in (0, len(pristine) // 2, len(pristine) - 1):
        damaged = bytearray(pristine)
        damaged[at] ^= 0x01
        column.write_bytes(bytes(damaged))
        with pytest.raises(persist.CorruptEntry, match="checksum mismatch"):
            persist.load_linked(str(entry))
    column.write_bytes(pristine)
    outer = json.loads((entry / MANIFEST).read_text())
    del body["segment_crc32"]
    outer["body"] = json.dumps(body)
    outer["crc32"] = zlib.crc32(outer["body"].encode())
    (entry / MANIFEST).write_text(json.dumps(outer))
    with pytest.raises(persist.CorruptEntry, match="no usable checksums"):
        persist.load_linked(str(entry))


def test_cache_off_writes_nothing(trace_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    loader = TraceLoader.from_env()
    assert not loader.cache.enabled
    _assert_same_views(loader(str(trace_copy)), TraceProcessor.load(str(trace_copy)))
    assert not (tmp_path / "xdg").exists()
    assert sorted(p.name for p in trace_copy.parent.iterdir()) == [trace_copy.name]


def test_memory_guard_refuses_with_reason_in_runs(trace_copy, monkeypatch):
    monkeypatch.setenv("TB_PIPELINE_MEMORY_BUDGET_MB", "1")
    app, plugin = build_tb_app(trace_copy.parent.parent)
    try:
        client = Client(app)
        entry = wait_ready(client, "run")
        assert entry["status"] == "failed"
        assert "over the budget of" in entry["error"] and "TB_PIPELINE_MEMORY_BUDGET_MB" in entry["error"]
        assert entry["error"].startswith("TraceTooLarge: not loaded: parsing this trace")
        resp = client.get(f"{PLUGIN_PREFIX}/overview?run=run")
        assert resp.status_code == 422
        assert "over the budget" in resp.get_json()["error"]
    finally:
        plugin.close()


def test_parallel_rank_loads_equal_serial(shared_traces, tmp_path):
    """Eight worker files (copies of the two ranks of a real multi-GPU job)
    parsed at once in two worker processes give what one-by-one in-process
    parses give; the first views come back from the workers, computed there,
    so the server process has them before anything asks."""
    ranks = sorted((shared_traces / "multi_rank").glob("*.json.gz"))
    assert len(ranks) >= 2
    run = tmp_path / "run"
    run.mkdir()
    files = []
    for i in range(8):
        dst = run / f"rank{i}.pt.trace.json.gz"
        shutil.copy(ranks[i % len(ranks)], dst)
        files.append(str(dst))
    serial = [TraceProcessor.load(p) for p in files]
    load = _loader(tmp_path / "cache", processes=2)
    with ThreadPoolExecutor(len(files)) as ex:
        parallel = list(ex.map(load, files))
    for a, b in zip(parallel, serial):
        # Seeded from the worker: one memo entry per first view, none computed here yet.
        assert len(a._views) == len(FIRST_VIEWS)
        _assert_same_views(a, b)
        assert len(a._views) == len(FIRST_VIEWS)  # the views asked for were the seeded ones
        assert a.has_device


def test_a_big_trace_decoded_by_forked_processes_equals_one_process(recorded_logdir, tmp_path):
    """A 40 MB trace, big enough that a worker with a free core decodes it in
    two forked processes (trace/fork_map.py; tests/trace/test_decode_parallel.py
    checks the table itself), through the pool as the plugin loads it: every
    first view equals the in-process, one-process load."""
    from tb_pipeline_plugin.trace.decode import SPLIT_MIN_BYTES

    path = tmp_path / "big" / "worker0.pt.trace.json"
    path.parent.mkdir()
    _big_trace(recorded_logdir, path, 40)
    assert path.stat().st_size >= 2 * SPLIT_MIN_BYTES
    load = _loader(tmp_path / "cache", processes=2)
    assert load.pool.decode_share() == 2  # nothing else in flight: both cores for this file
    _assert_same_views(load(str(path)), TraceProcessor.load(str(path)))


def _big_trace(recorded_logdir, dst: Path, mb: int) -> None:
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    from replicate import replicate_trace

    replicate_trace(str(_trace_of(recorded_logdir / "baseline")), str(dst), mb << 20)


def _thread_cpu_s(thread: threading.Thread) -> float:
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (OSError, TypeError):  # the thread ended meanwhile
        return 0.0


def _other_threads_cpu_s() -> dict[int, float]:
    """CPU seconds so far of every thread of this process but the caller's."""
    me = threading.get_ident()
    return {t.ident: _thread_cpu_s(t) for t in threading.enumerate() if t.ident != me and t.ident is not None}


class _GcInThisThread:
    """CPU seconds of garbage-collector passes run in the calling thread: a
    pass lands on whichever request allocates, and its length depends on
    every object the test session made (test_startup_objects_are_left_out_of_gc_passes
    covers what the plugin does about it), not on the parse."""

    def __init__(self):
        self.total_s = 0.0
        self._me = threading.get_ident()
        self._start = 0.0

    def __call__(self, phase, info):
        if threading.get_ident() != self._me:
            return
        if phase == "start":
            self._start = time.thread_time()
        else:
            self.total_s += time.thread_time() - self._start


def _request_cpu_s(client, route: str, gc_passes: _GcInThisThread) -> float:
    """The request's own CPU time, GC passes left out: the test client runs
    the app in this thread."""
    c0, gc0 = time.thread_time(), gc_passes.total_s
    resp = client.get(f"{PLUGIN_PREFIX}/{route}")
    cpu = time.thread_time() - c0 - (gc_passes.total_s - gc0)
    assert resp.status_code == 200, (route, resp.get_data(as_text=True)[:300])
    return cpu


@TIMING
@pytest.mark.skipif(not hasattr(time, "pthread_getcpuclockid"), reason="per-thread CPU clocks")
def test_routes_answer_while_a_big_trace_parses(recorded_logdir, tmp_path, monkeypatch):
    """While a big trace parses, nothing in the TensorBoard process works on
    it (the parse and its first views run in a worker process; this process
    only maps the result) and a cheap route costs what it costs without a
    parse. CPU time, not wall time: on a shared machine wall time measures
    the neighbours; benchmarks/bench_scale.py reports the latencies."""
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", "off")  # a real parse every time
    logdir = tmp_path / "logdir"
    (logdir / "small").mkdir(parents=True)
    shutil.copy(_trace_of(recorded_logdir / "baseline"), logdir / "small" / "w.pt.trace.json")
    # Built outside the logdir and moved in after the baseline, so no
    # prefetch parses it while the baseline is measured.
    _big_trace(recorded_logdir, tmp_path / "big.pt.trace.json", 60)
    routes = ("runs", "overview?run=small", "operators?run=small", "kernels?run=small")
    app, plugin = build_tb_app(logdir)
    gc_passes = None
    try:
        client = Client(app)
        assert wait_ready(client, "small")["status"] == "ready"
        gc_passes = _GcInThisThread()
        gc.callbacks.append(gc_passes)
        baseline = [_request_cpu_s(client, r, gc_passes) for _ in range(25) for r in routes]

        (logdir / "big").mkdir()
        os.rename(tmp_path / "big.pt.trace.json", logdir / "big" / "w.pt.trace.json")
        others0 = _other_threads_cpu_s()
        t0 = time.perf_counter()
        deadline = time.monotonic() + 30
        while (big := client.get(f"{PLUGIN_PREFIX}/overview?run=big").status_code) == 404:
            assert time.monotonic() < deadline, "the new run was never discovered"
            time.sleep(0.1)
        during = []
        while big == 409:
            during += [_request_cpu_s(client, r, gc_passes) for r in routes]
            time.sleep(0.05)
            big = client.get(f"{PLUGIN_PREFIX}/overview?run=big").status_code
        parse_wall_s = time.perf_counter() - t0
        others = _other_threads_cpu_s()
        assert big == 200
        assert len(during) >= 8, "the big trace parsed too fast to measure anything"

        # The store's threads, the pool's result thread, every other thread:
        # waiting and mapping, no parsing (which takes about the whole wall time).
        background_cpu_s = sum(cpu - others0.get(ident, 0.0) for ident, cpu in others.items())
        assert background_cpu_s < 0.1 * parse_wall_s, (background_cpu_s, parse_wall_s)
        # No request did the parse's work or paid for it (views built on the
        # request path, waiting on the load): the costliest one stays within
        # a few times the costliest without a parse.
        assert max(during) < 3 * max(baseline) + 0.02, (max(during), sorted(baseline)[-5:])
    finally:
        if gc_passes in gc.callbacks:
            gc.callbacks.remove(gc_passes)
        plugin.close()


_GC_PROBE = """
import gc, json, sys
sys.path.insert(0, sys.argv[2])
from conftest import build_tb_app
app, plugin = build_tb_app(sys.argv[1])
print(json.dumps({"frozen": gc.get_freeze_count(), "walked_by_full_pass": len(gc.get_objects())}))
plugin.close()
"""


@pytest.mark.parametrize("freeze", ["1", "0"])
def test_startup_objects_are_left_out_of_gc_passes(tmp_path, freeze):
    """A full GC pass walks every container object of the process; once
    TensorBoard started with our plugin, those of the imports (tens of
    thousands) are frozen, so a pass that lands on a request walks only what
    was made since (benchmarks/bench_scale.py: the slowest request while a
    big trace parsed was such a pass). A fresh interpreter: freezing happens
    once per process."""
    import json
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TB_PIPELINE_GC_FREEZE=freeze)
    proc = subprocess.run([sys.executable, "-c", _GC_PROBE, str(tmp_path), str(REPO_ROOT / "tests")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    if freeze == "1":
        assert counts["frozen"] > 20_000, counts
        assert counts["walked_by_full_pass"] < counts["frozen"] / 5, counts
    else:
        assert counts["frozen"] == 0, counts
