"""The TraceProcessor facade: one computation per view, even under concurrency."""
from __future__ import annotations

import json
import threading
import time

from tb_pipeline_plugin.trace import decode_trace
from tb_pipeline_plugin.analysis.processor import TraceProcessor


def _tiny() -> TraceProcessor:
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}
    return TraceProcessor(decode_trace(json.dumps(doc).encode()))


def test_memo_computes_a_key_once_under_concurrency():
    tp, calls, out = _tiny(), [], []

    def compute():
        calls.append(1)
        time.sleep(0.2)
        return object()

    start = threading.Barrier(8)

    def worker():
        start.wait()
        out.append(tp.memo("k", compute))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(v) for v in out}) == 1


def test_memo_other_keys_do_not_wait():
    tp = _tiny()
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(10)
        return 1

    t = threading.Thread(target=tp.memo, args=("slow", slow))
    t.start()
    assert started.wait(10)
    assert tp.memo("fast", lambda: 2) == 2  # answers while "slow" is still computing
    release.set()
    t.join()


def test_memo_failure_is_not_cached():
    tp = _tiny()

    def boom():
        raise RuntimeError("x")

    for _ in range(2):
        try:
            tp.memo("bad", boom)
        except RuntimeError:
            pass
    assert tp.memo("bad", lambda: 5) == 5


def test_views_are_memoised():
    tp = _tiny()
    assert tp.operators() is tp.operators()
    assert tp.overview() is tp.overview()


def test_a_trace_and_a_group_of_recordings_are_both_runs(shared_traces):
    """The diff layer is written against `Run`: both kinds of run must answer it."""
    from tb_pipeline_plugin.analysis.group import RecordingGroup
    from tb_pipeline_plugin.analysis.run import Run

    path = shared_traces / "cpu_only"
    trace = TraceProcessor.load(str(next(p for p in path.iterdir() if p.name.endswith(".json.gz"))))
    group = RecordingGroup([trace, trace], ["r1", "r2"])
    for run in (trace, group):
        assert isinstance(run, Run), type(run)
        assert run.overview()["avg_step_time_us"] == trace.overview()["avg_step_time_us"]


def test_a_seeded_view_is_what_the_call_returns_whatever_the_spelling():
    """A parse worker's first views seed the run: `overview()`, `overview(False)`
    and `overview(whole_window=False)` are one view."""
    tp = _tiny()
    seeded = {"seeded": True}
    tp.seed("overview", (), seeded)
    assert tp.overview() is seeded and tp.overview(False) is seeded and tp.overview(whole_window=False) is seeded
    assert tp.overview(True) is not seeded  # another view
    tp.seed("operators", ("name",), "ops")
    assert tp.operators() == "ops" and tp.operators(group_by="name") == "ops"


def test_the_bounded_cache_keeps_the_most_recent_within_its_bounds():
    from tb_pipeline_plugin.bounded_cache import BoundedCache

    cache = BoundedCache(2)
    cache.put("a", 1), cache.put("b", 2)
    assert cache.get("a") == 1  # now the most recent
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    heavy = BoundedCache(10, max_weight=5, weigh=len)
    heavy.put("x", "abc"), heavy.put("y", "de")
    heavy.put("z", "fg")  # 7 > 5: the least recent goes
    assert heavy.get("x") is None and heavy.weight == 4
    heavy.put("huge", "123456")  # heavier than the bound alone: not kept
    assert heavy.get("huge") is None and heavy.weight == 4
