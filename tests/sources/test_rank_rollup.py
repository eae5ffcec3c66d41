"""The rank roll-up (issue 38): a job of more ranks than any fixed capacity of
the plugin's stores, summarised (`--summaries-only`: rank records, no cache
entries), then served by the real TensorBoard app from one roll-up file,
every rank at the first ask; answers while ranks load say how many are
ready; added and rewritten ranks are read again; a limit names its variable;
a broken rank is named while the others answer; the cache cap is kept.

Inputs: copies of HTA's real `cpu_only` trace (a gloo job of 300 ranks),
each with its `distributedInfo.rank` rewritten and its clock stretched by a
per-rank factor (tests/support/rank_logdir.py). Oracles: each copy's own
JSON (rank, world size, backend, steps, step time, the union of its gloo
collectives within the step), read with the standard library.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import shutil
import time

import pytest
from werkzeug.test import Client

from conftest import PLUGIN_PREFIX, build_tb_app, get_when_ready
from support.rank_logdir import CPU_ONLY, oracle, trace_bytes, write_rank, write_ranks
from tb_pipeline_plugin.cli import main
from tb_pipeline_plugin.sources import artifacts, workers
from tb_pipeline_plugin.sources.cache import CacheConfig, TraceCache
from tb_pipeline_plugin.sources.provider import MAX_STATISTICS, RANK_LOADS_KEPT
from tb_pipeline_plugin.sources.rank_index import MAX_DIRECTORIES, max_ranks_from_env
from tb_pipeline_plugin.sources.rollup import COMPACTED, append, compact, make_record, read_all, rollup_dir

# More ranks than every fixed capacity of the stores: loaded traces (8 by
# default), rank loads kept, statistics, directories of roll-ups in memory.
N_RANKS = 300
TOL_US = 0.01  # the decoder keeps timestamps relative to the trace's start: 10 ns


def scale(rank: int) -> float:
    """Rank r's clock stretch: 17 distinct step times, rank 299 among the slowest."""
    return 1.0 + (rank % 17) / 20


@pytest.fixture(scope="module")
def src(shared_traces) -> str:
    return str(shared_traces / CPU_ONLY)


@pytest.fixture(scope="module")
def logdir(src, tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks_logdir")
    write_ranks(src, str(root / "job"), range(N_RANKS), scale)
    return root


@pytest.fixture(scope="module")
def summarised(logdir, tmp_path_factory):
    """`tb-pipeline summarize --summaries-only` into a fresh cache: (cache root, its report)."""
    cache = tmp_path_factory.mktemp("rollup_cache")
    import io

    out = io.StringIO()
    from tb_pipeline_plugin.cli import build_parser

    args = build_parser().parse_args(["summarize", str(logdir), "--summaries-only", "--processes", "2",
                                      "--cache-dir", str(cache)])
    assert args.run(args, out) == 0, out.getvalue()
    return cache, out.getvalue()


def _forbid_rank_loads(monkeypatch):
    """Every way the plugin could read a rank other than the roll-up fails the test."""
    def no_load(*args, **kwargs):
        raise AssertionError("a rank was loaded although the roll-up has it")

    monkeypatch.setenv("TB_PIPELINE_PARSE_WORKERS", "0")  # the patched functions run in this process
    monkeypatch.setattr(artifacts, "rank_summary_in_worker", no_load)
    monkeypatch.setattr(artifacts, "parse_to_entry", no_load)
    monkeypatch.setattr(artifacts, "stored_record", no_load)


def _distributed(client, query: str) -> dict:
    resp = client.get(f"{PLUGIN_PREFIX}/distributed?{query}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def _first_answer(logdir, query: str) -> dict:
    """The first `distributed` answer of a fresh plugin."""
    app, plugin = build_tb_app(logdir)
    try:
        return _distributed(Client(app), query)
    finally:
        plugin.close()


def _check_rank(row: dict, src: str, rank: int) -> None:
    o = oracle(src, rank, scale(rank))
    assert (row["worker"], row["rank"], row["rank_source"]) == (f"rank{rank}", o["rank"], "trace")
    assert (row["world_size"], row["backend"], row["steps"]) == (o["world_size"], o["backend"], o["steps"])
    for q in ("step_time_us", "computation_us", "communication_us", "idle_us"):
        assert row[q] == pytest.approx(o[q], abs=TOL_US), (rank, q)


def test_more_ranks_than_any_fixed_capacity():
    assert N_RANKS > max(RANK_LOADS_KEPT, MAX_STATISTICS, MAX_DIRECTORIES, 8)


def test_a_summarised_job_answers_every_rank_at_the_first_ask(logdir, summarised, src, monkeypatch):
    cache, report = summarised
    assert f"{N_RANKS} trace files: 0 parsed, {N_RANKS} summarised (rank records only), 0 already cached" in report
    # No cache entry, one compacted roll-up file of a few hundred bytes a rank.
    assert TraceCache(CacheConfig(str(cache), 1 << 40)).entries() == []
    rollup = rollup_dir(str(cache), str(logdir / "job"))
    assert sorted(n for n in os.listdir(rollup) if not n.endswith(".lock")) == [COMPACTED]
    assert os.path.getsize(os.path.join(rollup, COMPACTED)) < 300 * N_RANKS

    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(cache))
    _forbid_rank_loads(monkeypatch)
    body = _first_answer(logdir, "baseline=job")  # the first ask: no polling
    job = body["baseline_ranks"]
    assert body["complete"] is True
    assert job["coverage"] == {"total": N_RANKS, "ready": N_RANKS, "loading": 0, "failed": 0, "failures": [],
                               "warned": 0, "warnings": [], "left_out": 0, "limit": max_ranks_from_env({}),
                               "limit_variable": "TB_PIPELINE_MAX_RANKS"}
    assert [r["rank"] for r in job["ranks"]] == list(range(N_RANKS))
    for row in job["ranks"]:
        _check_rank(row, src, row["rank"])

    # The distribution, against the oracles sorted here.
    truth = {r: oracle(src, r, scale(r)) for r in range(N_RANKS)}
    slow_first = sorted(truth, key=lambda r: (-truth[r]["step_time_us"], r))
    assert [r["rank"] for r in job["slowest_ranks"]] == slow_first[:10]
    assert job["slowest"]["rank"] == slow_first[0]
    ascending = slow_first[::-1]
    ascending.sort(key=lambda r: (truth[r]["step_time_us"], r))
    for p in job["percentiles"]:
        at = ascending[min(N_RANKS - 1, math.floor(p["pct"] / 100 * (N_RANKS - 1) + 0.5))]
        assert p["rank"] == at and p["step_time_us"] == pytest.approx(truth[at]["step_time_us"], abs=TOL_US)
        assert p["computation_us"] + p["communication_us"] + p["idle_us"] == pytest.approx(p["step_time_us"])
    assert [p["pct"] for p in job["percentiles"]] == list(range(101))
    for s in job["spread"]:
        values = sorted(truth[r][s["quantity"]] for r in truth)
        expect = [values[min(N_RANKS - 1, math.floor(p / 100 * (N_RANKS - 1) + 0.5))] for p in job["spread_percentiles"]]
        assert s["values"] == pytest.approx(expect, abs=TOL_US)
        assert s["mean"] == pytest.approx(sum(values) / N_RANKS, abs=TOL_US)
    hist = job["histogram"]
    steps = [truth[r]["step_time_us"] for r in truth]
    assert sum(hist["counts"]) == N_RANKS and len(hist["counts"]) == math.ceil(math.sqrt(N_RANKS))
    assert hist["edges_us"][0] == pytest.approx(min(steps), abs=TOL_US)
    assert hist["edges_us"][-1] == pytest.approx(max(steps), abs=TOL_US)
    for i, count in enumerate(hist["counts"]):
        lo, hi = hist["edges_us"][i], hist["edges_us"][i + 1]
        last = i == len(hist["counts"]) - 1
        assert count == sum(1 for r in job["ranks"] if lo <= r["step_time_us"] < hi or (last and r["step_time_us"] == hi))


def test_an_unsummarised_job_completes_though_the_store_keeps_fewer_ranks(logdir, src, monkeypatch):
    """The same job, not summarised and with the cache off (no roll-up on
    disk): every rank is parsed in the background while the route answers
    with the ranks ready. More ranks than the store keeps once loaded
    (RANK_LOADS_KEPT; before, a store of fixed capacity evicted what it had
    just loaded and the route said "still loading" for ever): each answer
    accounts for every rank, the ranks ready never go down, and the last
    answer is complete with every rank equal to its oracle."""
    assert N_RANKS > RANK_LOADS_KEPT
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", "off")
    app, plugin = build_tb_app(logdir)
    answers = []
    try:
        client = Client(app)
        deadline = time.monotonic() + 300
        while True:
            body = _distributed(client, "baseline=job")
            cov = body["baseline_ranks"]["coverage"]
            answers.append((cov["ready"], cov["loading"], cov["failed"]))
            assert cov["total"] == N_RANKS and cov["ready"] + cov["loading"] + cov["failed"] == N_RANKS, cov
            assert len(body["baseline_ranks"]["ranks"]) == cov["ready"]
            if body["complete"]:
                break
            assert time.monotonic() < deadline, f"still loading after 300 s: {answers[-5:]}"
            time.sleep(0.05)
    finally:
        plugin.close()
    ready = [a[0] for a in answers]
    assert ready == sorted(ready), "a rank once ready was lost"
    assert answers[-1] == (N_RANKS, 0, 0)
    assert [r["rank"] for r in body["baseline_ranks"]["ranks"]] == list(range(N_RANKS))
    for row in body["baseline_ranks"]["ranks"]:
        _check_rank(row, src, row["rank"])


def test_a_pair_of_big_jobs_rank_by_rank_and_by_percentile(logdir, summarised, src, monkeypatch, tmp_path):
    """The job against a copy of itself with its odd ranks' clocks stretched 10 % more."""
    cache, _ = summarised
    pair = tmp_path / "pair"
    shutil.copytree(logdir / "job", pair / "job")
    doc = trace_bytes(src)
    os.makedirs(pair / "slower")
    for r in range(N_RANKS):
        write_rank(doc, str(pair / "slower" / f"rank{r}.pt.trace.json.gz"), r, scale(r) * (1.1 if r % 2 else 1.0))
    assert main(["summarize", str(pair), "--summaries-only", "--processes", "2", "--cache-dir", str(cache)]) == 0
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(cache))
    _forbid_rank_loads(monkeypatch)
    body = _first_answer(pair, "baseline=job&experimental=slower")
    # The same pair after each run was asked alone (their summaries remembered
    # and reused), and each run alone again: unchanged by the pair's shared bins.
    app, plugin = build_tb_app(pair)
    try:
        client = Client(app)
        alone = [_distributed(client, f"baseline={run}") for run in ("job", "slower")]
        assert _distributed(client, "baseline=job&experimental=slower") == body
        assert [_distributed(client, f"baseline={run}") for run in ("job", "slower")] == alone
    finally:
        plugin.close()
    assert body["complete"] and body["unmatched_ranks"] == [] and len(body["rows"]) == N_RANKS
    for row in body["rows"]:
        r = row["rank"]
        b, e = oracle(src, r, scale(r)), oracle(src, r, scale(r) * (1.1 if r % 2 else 1.0))
        assert row["delta_step_time_us"] == pytest.approx(e["step_time_us"] - b["step_time_us"], abs=2 * TOL_US)
        assert row["delta_communication_us"] == pytest.approx(e["communication_us"] - b["communication_us"], abs=2 * TOL_US)
    # Percentile by percentile: each quantity's own percentiles of each run.
    spread = {side: {s["quantity"]: s["values"] for s in body[f"{side}_ranks"]["spread"]} for side in ("baseline", "experimental")}
    pcts = body["baseline_ranks"]["spread_percentiles"]
    assert [row["pct"] for row in body["by_percentile"]] == pcts
    for i, row in enumerate(body["by_percentile"]):
        b, e = spread["baseline"]["step_time_us"][i], spread["experimental"]["step_time_us"][i]
        assert (row["baseline_step_time_us"], row["experimental_step_time_us"]) == (round(b, 3), round(e, 3))
        assert row["delta_step_time_pct"] == pytest.approx(100 * (e - b) / b, abs=0.01)
    # Both histograms on the same bins.
    assert body["baseline_ranks"]["histogram"]["edges_us"] == body["experimental_ranks"]["histogram"]["edges_us"]


def test_ranks_loading_answer_what_is_ready_then_added_and_rewritten_ranks_are_read(src, tmp_path, monkeypatch):
    """A job of 40 summarised ranks; then rank 5 is rewritten and ranks 40-59 are
    added. The first answer holds the 39 ranks still current and counts 21 as
    loading; asked again it completes, the parse workers having written their
    records, which a restart then reads without loading anything."""
    run = tmp_path / "logdir" / "job"
    write_ranks(src, str(run), range(40), scale)
    cache = tmp_path / "cache"
    assert main(["summarize", str(tmp_path / "logdir"), "--summaries-only", "--processes", "1",
                 "--cache-dir", str(cache)]) == 0
    doc = trace_bytes(src)
    write_rank(doc, str(run / "rank5.pt.trace.json.gz"), 5, 3.0)  # rewritten: another size
    write_ranks(src, str(run), range(40, 60), scale)
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(cache))
    app, plugin = build_tb_app(tmp_path / "logdir")
    try:
        client = Client(app)
        first = _distributed(client, "baseline=job")
        assert first["complete"] is False
        cov = first["baseline_ranks"]["coverage"]
        assert (cov["total"], cov["ready"], cov["loading"]) == (60, 39, 21)
        assert 5 not in {r["rank"] for r in first["baseline_ranks"]["ranks"]}
        body = get_when_ready(client, "distributed?baseline=job").get_json()
    finally:
        plugin.close()
    ranks = body["baseline_ranks"]["ranks"]
    assert body["complete"] and [r["rank"] for r in ranks] == list(range(60))
    row5 = ranks[5]
    assert row5["step_time_us"] == pytest.approx(oracle(src, 5, 3.0)["step_time_us"], abs=TOL_US)
    for row in ranks[40:]:
        _check_rank(row, src, row["rank"])

    _forbid_rank_loads(monkeypatch)
    again = _first_answer(tmp_path / "logdir", "baseline=job")
    assert again["complete"] and again["baseline_ranks"]["ranks"] == ranks


def test_a_rescan_of_the_same_files_reuses_the_ranks_read(src, tmp_path, monkeypatch):
    """Once complete, a rescan that finds the same rank files answers without
    looking any rank up again (10,000 lookups after every rescan were most of
    a warm ask); a rank rewritten since is read again."""
    from tb_pipeline_plugin.sources.rank_index import RankIndex

    run = tmp_path / "logdir" / "job"
    write_ranks(src, str(run), range(6), scale)
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(tmp_path / "cache"))
    app, plugin = build_tb_app(tmp_path / "logdir")
    try:
        client = Client(app)
        first = get_when_ready(client, "distributed?baseline=job").get_json()
        lookups = []
        real_lookup = RankIndex.lookup
        monkeypatch.setattr(RankIndex, "lookup", lambda self, files: lookups.append(len(files)) or real_lookup(self, files))
        plugin.runs.runs(0.0)  # a fresh scan: new TraceFiles, the same files
        assert _distributed(client, "baseline=job") == first and lookups == []
        write_rank(trace_bytes(src), str(run / "rank2.pt.trace.json.gz"), 2, 3.0)
        plugin.runs.runs(0.0)
        body = get_when_ready(client, "distributed?baseline=job").get_json()
    finally:
        plugin.close()
    assert lookups and lookups[0] == 6
    ranks = body["baseline_ranks"]["ranks"]
    assert ranks[2]["step_time_us"] == pytest.approx(oracle(src, 2, 3.0)["step_time_us"], abs=TOL_US)
    for before, now in zip(first["baseline_ranks"]["ranks"], ranks):
        if now["rank"] != 2:  # the others' own numbers (vs_median moved with rank 2)
            assert {k: v for k, v in now.items() if not k.startswith("vs_")} == {
                k: v for k, v in before.items() if not k.startswith("vs_")}


def test_a_limit_names_its_variable(logdir, summarised, monkeypatch):
    cache, _ = summarised
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(cache))
    monkeypatch.setenv("TB_PIPELINE_MAX_RANKS", "50")
    _forbid_rank_loads(monkeypatch)
    body = _first_answer(logdir, "baseline=job")
    cov = body["baseline_ranks"]["coverage"]
    assert body["complete"] and [r["rank"] for r in body["baseline_ranks"]["ranks"]] == list(range(50))
    assert (cov["total"], cov["ready"], cov["left_out"], cov["limit"], cov["limit_variable"]) == (
        N_RANKS, 50, N_RANKS - 50, 50, "TB_PIPELINE_MAX_RANKS")
    with pytest.raises(ValueError, match="TB_PIPELINE_MAX_RANKS must be at least 1"):
        max_ranks_from_env({"TB_PIPELINE_MAX_RANKS": "0"})


def test_a_broken_rank_is_named_and_the_others_answer(src, tmp_path, monkeypatch):
    run = tmp_path / "logdir" / "job"
    write_ranks(src, str(run), range(6), scale)
    (run / "rank6.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "na')
    monkeypatch.setenv("TB_PIPELINE_CACHE_DIR", str(tmp_path / "cache"))
    app, plugin = build_tb_app(tmp_path / "logdir")
    try:
        body = get_when_ready(Client(app), "distributed?baseline=job").get_json()
    finally:
        plugin.close()
    cov = body["baseline_ranks"]["coverage"]
    assert body["complete"] and (cov["ready"], cov["failed"]) == (6, 1)
    assert cov["failures"][0]["worker"] == "rank6" and "ValueError" in cov["failures"][0]["text"]


def test_summarize_keeps_the_cache_cap_and_says_so(src, tmp_path, monkeypatch, capsys):
    """Full entries until the cap's share is reached, then records only."""
    logdir = tmp_path / "logdir"
    write_ranks(src, str(logdir / "job"), range(24), scale)
    cache = tmp_path / "cache"
    cap_mb = 0.5
    monkeypatch.setenv("TB_PIPELINE_CACHE_MAX_MB", str(cap_mb))
    assert main(["summarize", str(logdir), "--processes", "2", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    parsed = int(out.split(" parsed, ")[0].rsplit(" ", 1)[-1])
    assert 0 < parsed < 24, out
    assert f"{24 - parsed} summarised (rank records only)" in out
    assert f"The cache cap (TB_PIPELINE_CACHE_MAX_MB, 0.5 MB) holds the entries of {parsed} of these traces" in out
    assert "Raise TB_PIPELINE_CACHE_MAX_MB, or pass --summaries-only" in out
    assert TraceCache(CacheConfig(str(cache), 1)).total_bytes() <= cap_mb * (1 << 20)
    # Every rank is in the roll-up all the same.
    records = read_all(rollup_dir(str(cache), str(logdir / "job")))
    assert sorted(r.file for r in records) == sorted(f"rank{i}.pt.trace.json.gz" for i in range(24))


def _append_many(root: str, directory: str, first: int, count: int) -> int:
    """Run in another process: appends `count` records of files named rank{first + i}."""
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    src = os.path.join(directory, "rank0.pt.trace.json.gz")
    tp = TraceProcessor.load(src)
    overview = tp.overview()
    for i in range(first, first + count):
        path = os.path.join(directory, f"rank{i}.pt.trace.json.gz")
        append(root, path, make_record(path, i, float(i), overview, tp.has_device, tp.warnings))
    return os.getpid()


def test_appends_from_many_processes_survive_compaction(src, tmp_path):
    """Three writer processes append 400 records each while this process
    compacts over and over: no record is lost, none duplicated once compacted."""
    directory = str(tmp_path / "job")
    write_ranks(src, directory, [0])
    root = str(tmp_path / "cache")
    current = {f"rank{i}.pt.trace.json.gz": (i, float(i)) for i in range(1200)}
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        pending = [pool.apply_async(_append_many, (root, directory, k * 400, 400)) for k in range(3)]
        while not all(p.ready() for p in pending):
            compact(rollup_dir(root, directory), current)
            time.sleep(0.01)
        assert len({p.get() for p in pending}) == 3
    assert compact(rollup_dir(root, directory), current) == 1200
    records = read_all(rollup_dir(root, directory))
    assert sorted(r.size for r in records) == list(range(1200))
