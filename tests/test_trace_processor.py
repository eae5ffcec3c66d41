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
