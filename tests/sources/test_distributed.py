"""The distributed route on HTA's real two-rank sample (A100s, NCCL, 128-rank job).

Oracles from the trace JSON itself: rank, world size and backend from each
file's `distributedInfo`; step counts from its `ProfilerStep#` events. The
split into computation / communication / idle is checked to add up to the
step time and against each rank's own overview (checked elsewhere against
torch and the JSON); the straggler against the per-rank step times.
"""
from __future__ import annotations

import gzip
import json
import shutil
import time

import pytest
from werkzeug.test import Client

from conftest import PLUGIN_PREFIX, build_tb_app, get_when_ready
from tb_pipeline_plugin.analysis.processor import TraceProcessor


def _json_oracle(path):
    with gzip.open(path, "rb") as f:
        trace = json.load(f)
    info = trace["distributedInfo"]
    steps = {e["name"] for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"}
    return info, len(steps)


@pytest.fixture(scope="module")
def ranks_logdir(shared_traces, tmp_path_factory):
    """`job`: rank 0 and rank 1 as worker files; `swapped`: the same files
    under each other's worker names (ranks must come from the trace); `dup`:
    rank 0's file twice (ranks fall back to worker positions)."""
    src = sorted((shared_traces / "multi_rank").glob("sampled_rank-*.json.gz"))
    logdir = tmp_path_factory.mktemp("ranks")
    for run, order in (("job", src), ("swapped", src[::-1]), ("dup", [src[0], src[0]])):
        (logdir / run).mkdir()
        for i, s in enumerate(order):
            shutil.copy(s, logdir / run / f"worker{i}.pt.trace.json.gz")
    return logdir, src


def _get(client, url, timeout=120):
    """The answer once every rank is in it (`complete`)."""
    return get_when_ready(client, url, timeout)


@pytest.fixture(scope="module")
def client(ranks_logdir):
    app, plugin = build_tb_app(ranks_logdir[0])
    yield Client(app)
    plugin.close()


def test_ranks_split_and_straggler(client, ranks_logdir):
    _, src = ranks_logdir
    resp = _get(client, "distributed?baseline=job")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["experimental"] is None and body["rows"] == []
    ranks = body["baseline_ranks"]["ranks"]
    assert [r["worker"] for r in ranks] == ["worker0", "worker1"]
    for r, path in zip(ranks, src):
        info, n_steps = _json_oracle(path)
        assert (r["rank"], r["world_size"], r["backend"]) == (info["rank"], info["world_size"], info["backend"])
        assert r["rank_from_trace"]
        assert r["steps"] == n_steps
        assert r["computation_us"] + r["communication_us"] + r["idle_us"] == pytest.approx(r["step_time_us"])
        assert min(r["computation_us"], r["communication_us"], r["idle_us"]) >= 0
        assert r["communication_us"] > 0  # NCCL kernels on every rank of this job
        ov = TraceProcessor.load(str(path)).overview()
        b = ov["breakdown_us"]
        assert r["step_time_us"] == pytest.approx(ov["avg_step_time_us"])
        assert r["computation_us"] == pytest.approx(b["kernel"] + b["memcpy"] + b["memset"])
        assert r["communication_us"] == pytest.approx(b["communication"])
    slowest = max(ranks, key=lambda r: r["step_time_us"])
    assert body["baseline_ranks"]["slowest"]["rank"] == slowest["rank"]
    assert body["baseline_ranks"]["slowest"]["worker"] == slowest["worker"]
    median = sum(r["step_time_us"] for r in ranks) / 2
    assert body["baseline_ranks"]["median_step_time_us"] == pytest.approx(median)
    assert slowest["vs_median_us"] == pytest.approx(slowest["step_time_us"] - median)
    for r in ranks:
        assert r["vs_median_pct"] == pytest.approx(100 * (r["step_time_us"] - median) / median)
    assert body["baseline_ranks"]["slowest"]["vs_median_pct"] == pytest.approx(100 * (slowest["step_time_us"] - median) / median)
    assert body["baseline_ranks"]["slowest"]["vs_median_pct"] > 0  # two ranks of different speed: the slower is above the median


def test_baseline_vs_experimental_matched_by_rank(client):
    body = _get(client, "distributed?baseline=job&experimental=swapped").get_json()
    b = {r["rank"]: r for r in body["baseline_ranks"]["ranks"]}
    e = {r["rank"]: r for r in body["experimental_ranks"]["ranks"]}
    # Same files under swapped worker names: matched by the trace's rank, every delta 0.
    assert [(r["rank"], r["baseline_worker"], r["experimental_worker"]) for r in body["rows"]] == [
        (0, "worker0", "worker1"), (1, "worker1", "worker0")]
    assert body["unmatched_ranks"] == []
    for row in body["rows"]:
        assert row["baseline_step_time_us"] == pytest.approx(b[row["rank"]]["step_time_us"])
        assert row["experimental_step_time_us"] == pytest.approx(e[row["rank"]]["step_time_us"])
        for q in ("step_time", "computation", "communication", "idle"):
            assert row[f"delta_{q}_us"] == 0 and row[f"delta_{q}_pct"] in (0, None)


def test_duplicate_ranks_fall_back_to_positions_and_deltas(client, ranks_logdir):
    _, src = ranks_logdir
    body = _get(client, "distributed?baseline=job&experimental=dup").get_json()
    dup = body["experimental_ranks"]["ranks"]
    assert [(r["rank"], r["rank_from_trace"]) for r in dup] == [(0, False), (1, False)]
    rank0 = TraceProcessor.load(str(src[0])).overview()["avg_step_time_us"]
    rank1 = TraceProcessor.load(str(src[1])).overview()["avg_step_time_us"]
    row1 = body["rows"][1]
    assert row1["rank"] == 1
    assert row1["delta_step_time_us"] == pytest.approx(rank0 - rank1, abs=1e-3)
    assert row1["delta_step_time_pct"] == pytest.approx(100 * (rank0 - rank1) / rank1, abs=0.01)
    assert body["rows"][0]["delta_step_time_us"] == 0


def test_unknown_run_and_missing_parameter(client):
    assert client.get(f"{PLUGIN_PREFIX}/distributed?baseline=nope").status_code == 404
    assert client.get(f"{PLUGIN_PREFIX}/distributed").status_code == 400


def test_rank_summaries_come_from_the_views_kept_in_the_cache(ranks_logdir, tmp_path, monkeypatch):
    """After a restart, every rank's summary is read from the overview its
    parse kept with the cache entry: no worker, no mapping, same answer."""
    from tb_pipeline_plugin.sources import artifacts

    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(tmp_path / "cache"))
    app, plugin = build_tb_app(ranks_logdir[0])
    try:
        first = _get(Client(app), "distributed?baseline=job&experimental=swapped")
        assert first.status_code == 200, first.get_data(as_text=True)
    finally:
        plugin.close()

    def no_worker(*args, **kwargs):
        raise AssertionError("a rank summary was computed although its entry keeps the overview")

    monkeypatch.setenv("TB_PIPELINE_PARSE_WORKERS", "0")  # the patched function runs in this process
    monkeypatch.setattr(artifacts, "rank_summary_in_worker", no_worker)
    app, plugin = build_tb_app(ranks_logdir[0])
    try:
        again = _get(Client(app), "distributed?baseline=job&experimental=swapped")
        assert again.status_code == 200, again.get_data(as_text=True)
        assert again.get_json() == first.get_json()
    finally:
        plugin.close()


def test_ranks_without_distributed_info_come_from_names_else_natural_order(tmp_path):
    """12 copies of a real single-process trace (no distributedInfo): named
    rank0..rank11, `rank10` is rank 10 (sorted as strings it was rank 2);
    named without a rank, the files' natural order numbers them."""
    from conftest import get_when_ready
    from pathlib import Path

    [src] = (Path(__file__).resolve().parents[1] / "data" / "transformers" / "baseline").glob("*.pt.trace.json")
    assert "distributedInfo" not in json.loads(src.read_text())
    (tmp_path / "named").mkdir()
    (tmp_path / "plain").mkdir()
    for i in range(12):
        shutil.copy(src, tmp_path / "named" / f"rank{i}.pt.trace.json")
        shutil.copy(src, tmp_path / "plain" / f"node{i}_{4000 - i}.pt.trace.json")
    from tb_pipeline_plugin.sources.logdir import discover_runs

    # The picker lists workers in the same natural order.
    assert list(discover_runs(str(tmp_path))["named"].traces) == [f"rank{i}" for i in range(12)]
    app, plugin = build_tb_app(tmp_path)
    try:
        body = get_when_ready(Client(app), "distributed?baseline=named&experimental=plain").get_json()
    finally:
        plugin.close()
    named, plain = body["baseline_ranks"]["ranks"], body["experimental_ranks"]["ranks"]
    assert [(r["worker"], r["rank"], r["rank_source"]) for r in named] == [(f"rank{i}", i, "name") for i in range(12)]
    assert [(r["worker"], r["rank"], r["rank_source"]) for r in plain] == [
        (f"node{i}_{4000 - i}", i, "order") for i in range(12)]
    assert [r["rank"] for r in body["rows"]] == list(range(12)) and body["unmatched_ranks"] == []


def test_rank_numbers_of_a_thousand_workers_without_distributed_info():
    from tb_pipeline_plugin.analysis.distributed import rank_numbers

    names = sorted(f"rank{i}" for i in range(1000))  # the files' string order: rank0, rank1, rank10, rank100, ...
    numbers, source = rank_numbers(names, [None] * 1000)
    assert source == "name" and dict(zip(names, numbers))["rank10"] == 10 and sorted(numbers) == list(range(1000))
    pids = [f"host_{4000 + 7 * i}" for i in (3, 0, 2, 1)]  # torch's default worker names: the number is no rank
    assert rank_numbers(pids, [None] * 4) == ([3, 0, 2, 1], "order")
    assert rank_numbers(["a", "b"], [1, 0]) == ([1, 0], "trace")
