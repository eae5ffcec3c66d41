"""Damaged, old and unusual trace files, made from real traces: each loads
what can be trusted and says what was lost, or fails with a readable reason."""
from __future__ import annotations

import gzip
import json

import pytest

from json_oracle import counts_by_name, load_events
from tb_pipeline_plugin.trace import decode_trace, load_trace
from tb_pipeline_plugin.trace.table import Kind
from tb_pipeline_plugin.trace_processor import TraceProcessor

SINGLE = "single_rank/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"


def kineto_layout(meta: dict, events: list[dict]) -> bytes:
    """One event per line, like Kineto writes them."""
    head = json.dumps(meta)[:-1] + (", " if meta else "") + '"traceEvents": [\n'
    body = ",\n".join("  " + json.dumps(e) for e in events)
    return (head + body + "\n]}").encode()


@pytest.fixture(scope="module")
def single(shared_traces):
    meta, events = load_events(shared_traces / SINGLE)
    meta = {k: v for k, v in meta.items() if k != "traceEvents"}
    return meta, events


def n_cpu_ops(table) -> int:
    return int((table.kind == Kind.CPU_OP).sum())


def test_truncated_json_keeps_every_complete_event(single):
    meta, events = single
    data = kineto_layout(meta, events)
    k = len(events) // 2
    upto = data.index(json.dumps(events[k]).encode())
    cut = data[: upto + len(json.dumps(events[k])) // 2]  # in the middle of event k
    table = decode_trace(cut)
    expected = sum(1 for e in events[:k] if e.get("cat") == "cpu_op" and e.get("ph") == "X")
    assert n_cpu_ops(table) == expected
    assert any("middle of an event" in w for w in table.warnings)
    assert table.metadata.get("deviceProperties")


def test_truncated_gzip_is_salvaged(shared_traces, tmp_path):
    raw = (shared_traces / SINGLE).read_bytes()
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(raw[: int(len(raw) * 0.6)])
    table = load_trace(str(path))
    assert any("gzip stream is incomplete" in w for w in table.warnings)
    full = load_trace(str(shared_traces / SINGLE))
    assert 0 < len(table) < len(full)


def test_bare_array_without_closing_bracket(single):
    _, events = single
    text = "[\n" + ",\n".join(json.dumps(e) for e in events) + ",\n"
    table = decode_trace(text.encode())
    assert n_cpu_ops(table) == sum(1 for e in events if e.get("cat") == "cpu_op")
    assert table.warnings == []


def test_corrupt_bytes_in_the_middle_skip_only_that_event(single):
    meta, events = single
    data = bytearray(kineto_layout(meta, events))
    victim = json.dumps(events[len(events) // 3]).encode()
    at = bytes(data).index(victim)
    data[at + 5 : at + 9] = b"\x00@#!"
    table = decode_trace(bytes(data), chunk_bytes=1 << 20)
    total = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op")
    assert total - 1 <= n_cpu_ops(table) <= total
    assert any("corrupt JSON" in w for w in table.warnings)


def test_wrong_value_types_and_unknown_fields(single):
    meta, events = single
    events = [dict(e) for e in events[:2000]]
    intact = decode_trace(kineto_layout(meta, events))
    a, b, c = [i for i, e in enumerate(events) if e.get("ph") == "X" and e.get("cat") == "cpu_op"][:3]
    events[a] = {**events[a], "dur": "12.5", "brand_new_field": {"x": [1, 2]}}
    events[b] = {**events[b], "ts": "not a number"}
    events[c] = {**events[c], "args": {**events[c].get("args", {}), "External id": "abc"}}
    table = decode_trace(kineto_layout(meta, events))
    # Only the event whose timestamp is unusable is lost; "12.5" is read as 12.5.
    assert len(table) == len(intact) - 1
    assert 12.5 in set(table.dur_us.tolist())
    assert any("1 events with values of unexpected types" in w for w in table.warnings)


def test_2021_category_names_give_the_same_views(shared_traces, tmp_path, single):
    meta, events = single
    renamed = {"cpu_op": "Operator", "cuda_runtime": "Runtime", "kernel": "Kernel", "gpu_memcpy": "Memcpy",
               "gpu_memset": "Memset", "ac2g": "async"}
    old = []
    for e in events:
        e = dict(e)
        if e.get("cat") in renamed:
            e["cat"] = renamed[e["cat"]]
        args = e.get("args")
        if isinstance(args, dict) and "External id" in args:
            args = dict(args)
            args["external id"] = args.pop("External id")
            e["args"] = args
        old.append(e)
    path = tmp_path / "old.pt.trace.json"
    path.write_bytes(kineto_layout(meta, old))
    now = TraceProcessor.load(str(shared_traces / SINGLE))
    then = TraceProcessor.load(str(path))
    cols = ["name", "calls", "host_self_us", "device_self_us", "device_total_us"]
    assert then.operators()[cols].equals(now.operators()[cols])
    assert then.kernels()[["name", "calls", "total_us"]].equals(now.kernels()[["name", "calls", "total_us"]])
    assert then.overview()["breakdown_us"] == now.overview()["breakdown_us"]


def test_begin_end_pairs_string_ids_and_float_ts():
    events = [
        {"ph": "B", "cat": "cpu_op", "name": "outer", "pid": "host", "tid": "main", "ts": 10.5},
        {"ph": "B", "cat": "cpu_op", "name": "inner", "pid": "host", "tid": "main", "ts": 11.25},
        {"ph": "E", "pid": "host", "tid": "main", "ts": 12.0},
        {"ph": "E", "pid": "host", "tid": "main", "ts": 20.5},
        {"ph": "X", "cat": "cpu_op", "name": "other", "pid": 7, "tid": 7, "ts": 1.0, "dur": 2.0},
    ]
    tp = TraceProcessor(decode_trace(json.dumps({"traceEvents": events}).encode()))
    ops = tp.operators().set_index("name")
    assert ops.loc["outer", "host_total_us"] == pytest.approx(10.0)
    assert ops.loc["outer", "host_self_us"] == pytest.approx(10.0 - 0.75)
    assert ops.loc["inner", "host_total_us"] == pytest.approx(0.75)
    assert ops.loc["other", "calls"] == 1


def test_html_in_names_is_kept_verbatim():
    name = "<img src=x onerror=alert(1)>"
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}
    tp = TraceProcessor(decode_trace(json.dumps(doc).encode()))
    assert list(tp.operators()["name"]) == [name]


@pytest.mark.parametrize("content, reason", [
    (b"", "neither"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "neither"),
    (b'{"hello": "world"}', "traceEvents"),
    (b'{"traceEvents": 5}', "not a trace"),
    (b'{"traceEvents": [{"ph": "X", "na', "no trace event"),
])
def test_files_that_are_not_traces_fail_with_a_reason(content, reason):
    with pytest.raises(ValueError, match=reason):
        decode_trace(content)


def test_unreadable_gzip(tmp_path):
    path = tmp_path / "x.pt.trace.json.gz"
    path.write_bytes(b"\x1f\x8b" + b"\x00" * 50)
    with pytest.raises(ValueError, match="gzip"):
        load_trace(str(path))
