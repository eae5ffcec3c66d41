"""`tb-pipeline summarize`: cache entries written ahead, on a local process
pool or a Dask cluster of separate worker processes; the plugin then serves
the runs without parsing."""
from __future__ import annotations

import os
import shutil
import time

import pandas as pd
import pytest
from werkzeug.test import Client

from conftest import PLUGIN_PREFIX, build_tb_app, wait_ready
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.cli import main
from tb_pipeline_plugin.sources import artifacts
from tb_pipeline_plugin.sources.cache import CacheConfig, TraceCache
from tb_pipeline_plugin.sources.rollup import make_record, read_all, rollup_dir
from tb_pipeline_plugin.sources.summarize import summarize, trace_files


@pytest.fixture(scope="module")
def logdir(recorded_logdir, shared_traces, tmp_path_factory):
    """Two recorded CPU runs and a two-rank GPU run."""
    root = tmp_path_factory.mktemp("summarize_logdir")
    for run in ("baseline", "experimental"):
        shutil.copytree(recorded_logdir / run, root / run)
    (root / "job").mkdir()
    for i, src in enumerate(sorted((shared_traces / "multi_rank").glob("*.json.gz"))):
        shutil.copy(src, root / "job" / f"rank{i}.pt.trace.json.gz")
    return root


def _views(cache_root, path):
    cache = TraceCache(CacheConfig(str(cache_root), 1 << 32))
    linked = cache.lookup(path, os.path.getsize(path), os.path.getmtime(path))
    assert linked is not None, f"no cache entry for {path}"
    tp = TraceProcessor.from_linked(linked, source=path)
    return tp.overview(), tp.operators("name"), tp.kernels(), tp.modules()


def _assert_same(a, b):
    assert a[0] == b[0]
    pd.testing.assert_frame_equal(a[1], b[1])
    pd.testing.assert_frame_equal(a[2], b[2])
    assert a[3] == b[3]


def test_dask_cluster_writes_what_the_local_pool_writes(logdir, tmp_path):
    from dask.distributed import LocalCluster

    local_root, dask_root = tmp_path / "local", tmp_path / "dask"
    files = trace_files(str(logdir))
    assert len(files) == 4
    local = summarize(str(logdir), processes=2, cache=CacheConfig(str(local_root), 1 << 32))
    assert sorted(r.status for r in local) == ["parsed"] * 4
    records_root = tmp_path / "records"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = summarize(str(logdir), scheduler=cluster.scheduler_address, cache=CacheConfig(str(dask_root), 1 << 32))
        only = summarize(str(logdir), scheduler=cluster.scheduler_address, cache=CacheConfig(str(records_root), 1 << 32),
                         summaries_only=True)
    assert sorted(r.status for r in remote) == ["parsed"] * 4
    assert sorted(r.status for r in only) == ["summarised"] * 4
    for path in files:
        direct = TraceProcessor.load(path)
        expected = (direct.overview(), direct.operators("name"), direct.kernels(), direct.modules())
        _assert_same(_views(local_root, path), expected)
        _assert_same(_views(dask_root, path), expected)
        # The rank roll-up: the same record from the pool, the cluster and the records-only run, and the trace's.
        want = make_record(path, os.path.getsize(path), os.path.getmtime(path), direct.overview(), direct.has_device,
                           direct.warnings)
        for root in (local_root, dask_root, records_root):
            assert [r for r in read_all(rollup_dir(str(root), os.path.dirname(path))) if r.file == want.file] == [want]
    assert TraceCache(CacheConfig(str(records_root), 1 << 32)).entries() == []  # records only: no entry
    # A second pass finds everything cached.
    again = summarize(str(logdir), processes=1, cache=CacheConfig(str(local_root), 1 << 32))
    assert sorted(r.status for r in again) == ["cached"] * 4


def test_cli_then_plugin_serves_without_parsing(logdir, tmp_path, monkeypatch, capsys):
    cache_root = tmp_path / "cache"
    assert main(["summarize", str(logdir), "--processes", "2", "--cache-dir", str(cache_root)]) == 0
    assert "4 trace files: 4 parsed, 0 already cached, 0 failed" in capsys.readouterr().out

    def no_parse(*args):
        raise AssertionError("the plugin parsed a summarized trace")

    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(cache_root))
    monkeypatch.setenv("TB_PIPELINE_PARSE_WORKERS", "0")
    monkeypatch.setattr(artifacts, "parse_to_entry", no_parse)
    app, plugin = build_tb_app(logdir)
    try:
        client = Client(app)
        for run in ("baseline", "experimental", "job"):
            assert wait_ready(client, run)["status"] == "ready"
        deadline = time.monotonic() + 60
        while (resp := client.get(f"{PLUGIN_PREFIX}/overview?run=job&worker=rank1")).status_code == 409:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert resp.status_code == 200, resp.get_data(as_text=True)
        assert resp.get_json()["distributed"]["rank"] == 1
    finally:
        plugin.close()


def test_cli_reports_failures(tmp_path, capsys):
    run = tmp_path / "logdir" / "broken"
    run.mkdir(parents=True)
    (run / "w.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "na')
    code = main(["summarize", str(tmp_path / "logdir"), "--processes", "1", "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 1
    assert "failed: " in out and "ValueError" in out and "1 failed" in out
