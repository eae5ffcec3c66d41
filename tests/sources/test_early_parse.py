"""Parsing at TensorBoard's start (`sources/pool.py`, `ParsePool.parse_early`).

The first runs' default traces start parsing in a worker while the server
still imports the plugin; the plugin's loads adopt those parses instead of
parsing again. Every load here is a real parse of a recorded trace in a real
worker process, compared with the in-process `TraceProcessor.load` of the same
file; a load that parses again where it should adopt fails the test.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from test_scale import BIG_BUDGET, _assert_same_views
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.sources import artifacts
from tb_pipeline_plugin.sources.artifacts import TraceLoader
from tb_pipeline_plugin.sources.budget import MemoryBudget
from tb_pipeline_plugin.sources.cache import CacheConfig, TraceCache
from tb_pipeline_plugin.sources.pool import ParsePool, usable_cores

CACHE_MAX_BYTES = 1 << 30


@pytest.fixture
def logdir(recorded_logdir, tmp_path) -> Path:
    """Runs a, b, c: each a copy of the recorded baseline trace."""
    src = sorted((recorded_logdir / "baseline").glob("*.pt.trace.json*"))[0]
    root = tmp_path / "logdir"
    for run in ("a", "b", "c"):
        (root / run).mkdir(parents=True)
        shutil.copy(src, root / run / src.name)
    return root


def _trace(logdir: Path, run: str) -> str:
    return str(sorted((logdir / run).glob("*.pt.trace.json*"))[0])


@pytest.fixture
def pool():
    pool = ParsePool(2)
    yield pool
    pool.shutdown(wait=True)


class _NoParse:
    def __call__(self, *args, **kwargs):
        raise AssertionError("parsed again although a parse of this file began at start")


def test_the_first_runs_parse_at_start_and_their_loads_adopt_them(logdir, pool, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    budget = MemoryBudget(BIG_BUDGET)
    pool.parse_early(str(logdir), budget, {"TB_PIPELINE_CACHE_DIR": str(cache)})
    loader = TraceLoader(TraceCache(CacheConfig(str(cache), CACHE_MAX_BYTES)), pool, budget)
    with monkeypatch.context() as m:
        m.setattr(artifacts, "parse_to_entry", _NoParse())
        # One per worker process, in the listed order: a and b, not c.
        for run in ("a", "b"):
            _assert_same_views(loader(_trace(logdir, run)), TraceProcessor.load(_trace(logdir, run)))
    assert pool.early_adopted == 2
    assert TraceCache(CacheConfig(str(cache), CACHE_MAX_BYTES)).holds(_trace(logdir, "a"), *_stat(_trace(logdir, "a")))
    _assert_same_views(loader(_trace(logdir, "c")), TraceProcessor.load(_trace(logdir, "c")))
    assert pool.early_adopted == 2
    assert budget._used == 0


def _stat(path: str) -> tuple[int, float]:
    st = os.stat(path)
    return st.st_size, st.st_mtime


def test_a_file_rewritten_since_is_parsed_again_and_cached_traces_are_not_parsed_early(logdir, pool, tmp_path):
    cache = tmp_path / "cache"
    config = CacheConfig(str(cache), CACHE_MAX_BYTES)
    budget = MemoryBudget(BIG_BUDGET)
    loader = TraceLoader(TraceCache(config), ParsePool(0), budget)
    loader(_trace(logdir, "a"))  # in the cache before TensorBoard starts
    pool.parse_early(str(logdir), budget, {"TB_PIPELINE_CACHE_DIR": str(cache)})
    pool._planned.wait()
    # a is cached: the early parses are b and c.
    assert sorted(Path(key[0]).parent.name for key in pool._early) == ["b", "c"]
    path_b = _trace(logdir, "b")
    with open(path_b, "a") as f:
        f.write("\n")
    loader = TraceLoader(TraceCache(config), pool, budget)
    _assert_same_views(loader(path_b), TraceProcessor.load(path_b))
    assert pool.early_adopted == 0  # b changed after its early parse began: parsed again
    _assert_same_views(loader(_trace(logdir, "c")), TraceProcessor.load(_trace(logdir, "c")))
    assert pool.early_adopted == 1


def test_a_cached_trace_does_not_wait_for_the_plan(logdir, tmp_path):
    """A restart with everything cached: the plan (a worker's start and a
    discovery) may still be running when the plugin asks; the cached file
    is mapped at once, not after the plan."""
    import threading
    import time

    config = CacheConfig(str(tmp_path / "cache"), CACHE_MAX_BYTES)
    budget = MemoryBudget(BIG_BUDGET)
    TraceLoader(TraceCache(config), ParsePool(0), budget)(_trace(logdir, "a"))  # cached before the start
    slow = ParsePool(2)
    slow._planned = threading.Event()  # a plan still running (never ends here)
    try:
        t0 = time.monotonic()
        _assert_same_views(TraceLoader(TraceCache(config), slow, budget)(_trace(logdir, "a")),
                           TraceProcessor.load(_trace(logdir, "a")))
        assert time.monotonic() - t0 < 20  # the plan's wait is 30 s
    finally:
        slow.shutdown(wait=True)


def test_nothing_is_parsed_early_with_the_cache_off_or_beyond_the_budget(logdir, pool, tmp_path):
    pool.parse_early(str(logdir), MemoryBudget(BIG_BUDGET), {"TB_PIPELINE_CACHE_DIR": "off"})
    pool._planned.wait()
    assert pool._early == {}
    small = ParsePool(2)
    try:
        small.parse_early(str(logdir), MemoryBudget(1 << 20), {"TB_PIPELINE_CACHE_DIR": str(tmp_path / "cache")})
        small._planned.wait()
        assert small._early == {}
    finally:
        small.shutdown(wait=True)


TENSORBOARD_START = textwrap.dedent("""
    import json, sys, time
    from werkzeug.test import Client
    from tensorboard import program
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.core import core_plugin
    from tb_pipeline_plugin.server.loader import PipelinePluginLoader
    from tb_pipeline_plugin.sources.pool import WorkerConfig, shared_pool

    tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader()])
    tb.configure(argv=["tensorboard", "--logdir", sys.argv[1]])
    context = base_plugin.TBContext(flags=tb.flags, logdir=tb.flags.logdir, plugin_name_to_instance={})
    plugin = PipelinePluginLoader().load(context)
    client = Client(application.TensorBoardWSGI([plugin], tb.flags.path_prefix))
    deadline = time.monotonic() + 120
    while True:
        resp = client.get("/data/plugin/tb_pipeline/overview?run=a")
        if resp.status_code != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    print(json.dumps({"status": resp.status_code, "avg_step_time_us": resp.get_json()["avg_step_time_us"],
                      "adopted": shared_pool(WorkerConfig.processes_from_env()).early_adopted}))
""")


def test_tensorboard_start_parses_the_first_run_before_the_plugin_asks(logdir, tmp_path):
    """The loader TensorBoard calls begins the parse; the plugin adopts it."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TB_PIPELINE_CACHE_DIR=str(tmp_path / "cache"),
               TB_PIPELINE_PARSE_WORKERS="2")
    done = subprocess.run([sys.executable, "-c", TENSORBOARD_START, str(logdir)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == 200, out
    # Off on one core, where the parse would only take the core from TensorBoard's start (pool.parse_early).
    assert (out["adopted"] >= 1) if usable_cores() >= 2 else (out["adopted"] == 0), out
    expected = TraceProcessor.load(_trace(logdir, "a")).overview()["avg_step_time_us"]
    assert out["avg_step_time_us"] == pytest.approx(expected)


UNGUARDED_SCRIPT = textwrap.dedent("""
    # No `if __name__ == "__main__"`: a spawned process that ran this script
    # again would start a pool of its own while bootstrapping, and fail.
    import os
    from tb_pipeline_plugin.sources.pool import ParsePool, usable_cores

    pool = ParsePool(1)
    print(pool.run(os.getpid) != os.getpid())
    pool.shutdown(wait=True)
""")


def test_a_worker_does_not_run_the_main_script_again(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-3000:]


def test_the_plugin_and_the_decoder_import_without_scipy():
    """scipy.stats was 0.9 s of TensorBoard's start (and of the parse
    worker's CPU beside it) for a t quantile only groups and the advice
    need: it is imported when first used."""
    code = ("import sys, tb_pipeline_plugin.server.plugin, tb_pipeline_plugin.sources.workers; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout[:500]


@pytest.mark.parametrize("setting, below", [(None, 10), ("3", 3), ("0", 0), ("99", 19), ("soon", 10)])
def test_parse_workers_run_below_the_servers_priority(monkeypatch, setting, below):
    """A request arriving while every core decodes a big trace preempts a decoder (TB_PIPELINE_PARSE_NICE,
    default 10; benchmarks/README.md: the slowest other request while a 1 GB trace parses)."""
    if setting is None:
        monkeypatch.delenv("TB_PIPELINE_PARSE_NICE", raising=False)
    else:
        monkeypatch.setenv("TB_PIPELINE_PARSE_NICE", setting)
    pool = ParsePool(1)
    try:
        worker_nice = pool.run(os.nice, 0)
    finally:
        pool.shutdown(wait=True)
    assert worker_nice == min(19, os.nice(0) + below)
