"""Damaged, old and unusual trace files, made from real traces: each loads
what can be trusted and says what was lost, or fails with a readable reason."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap

import pytest

from support.json_oracle import counts_by_name, load_events
from tb_pipeline_plugin.trace import decode_trace, load_trace
from tb_pipeline_plugin.trace.table import Kind
from tb_pipeline_plugin.analysis.processor import TraceProcessor

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
    assert "1 events without a usable timestamp (`ts`) were ignored" in table.warnings


def test_2021_category_names_give_the_same_views(shared_traces, tmp_path, single):
    """2021 spellings, including ProfilerStep / DataLoader under `Operator`."""
    meta, events = single
    renamed = {"cpu_op": "Operator", "user_annotation": "Operator", "cuda_runtime": "Runtime", "kernel": "Kernel",
               "gpu_memcpy": "Memcpy", "gpu_memset": "Memset", "ac2g": "async"}
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
    now_ops = now.operators()
    then_ops = then.operators()
    # Other user annotations (`## forward ##`, `nccl:*`) were operators in 2021.
    annotations = {e["name"] for e in events if e.get("cat") == "user_annotation"}
    extra = then_ops[then_ops["name"].isin(annotations)]
    assert not any(n.startswith("ProfilerStep#") for n in extra["name"])
    cols = ["name", "calls", "device_self_us", "device_total_us"]
    kept = then_ops[~then_ops["name"].isin(annotations)].reset_index(drop=True)
    assert kept[cols].equals(now_ops[cols])
    assert then.kernels()[["name", "calls", "total_us"]].equals(now.kernels()[["name", "calls", "total_us"]])
    assert [s["name"] for s in then.overview()["steps"]] == [s["name"] for s in now.overview()["steps"]]
    assert then.overview()["avg_step_time_us"] == now.overview()["avg_step_time_us"]


def test_2021_dataloader_annotation_counts_as_data_loading(recorded_logdir, tmp_path):
    path = next((recorded_logdir / "slow_loader").glob("*.pt.trace.json*"))
    doc = json.loads(path.read_bytes())
    for e in doc["traceEvents"]:
        if e.get("cat") == "user_annotation":
            e["cat"] = "Operator"
    old = TraceProcessor(decode_trace(json.dumps(doc).encode())).overview()
    new = TraceProcessor.load(str(path)).overview()
    assert [s["name"] for s in old["steps"]] == [s["name"] for s in new["steps"]]
    assert old["breakdown_us"]["data_loading"] == pytest.approx(new["breakdown_us"]["data_loading"])
    assert new["breakdown_us"]["data_loading"] >= 20000


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


def test_int_and_string_ids_stay_distinct_across_chunks():
    """Flow ids and pids are compared as the file writes them: 7 and "7"
    are different flows, 1 and "1" different processes, in any chunk."""
    events = []
    for k, fid in enumerate([7, "7", 8, "x", 7, "7"]):
        pid = 1 if k % 2 else "1"
        events.append({"ph": "X", "cat": "cpu_op", "name": f"op{k}", "pid": pid, "tid": 1, "ts": 10 * k, "dur": 5})
        events.append({"ph": "s" if k < 3 else "f", "cat": "fwdbwd", "id": fid, "pid": pid, "tid": 1, "ts": 10 * k, "bp": "e"})
    data = json.dumps({"traceEvents": events}).encode()
    for chunk_bytes in (64, 1 << 20):
        table = decode_trace(data, chunk_bytes=chunk_bytes)
        flows = [e for e in events if e["ph"] in "sf"]
        got = table.flows.flow_id
        for i, a in enumerate(flows):
            for j, b in enumerate(flows):
                same = type(a["id"]) is type(b["id"]) and a["id"] == b["id"]
                assert (got[i] == got[j]) == same, (a["id"], b["id"])
        assert sorted(map(repr, table.pids)) == ["'1'", "1"]
        assert table.flows.is_start.tolist() == [f["ph"] == "s" for f in flows]
        assert table.flows.binds_enclosing.all()


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


def _recorded_doc(recorded_logdir, run="baseline"):
    return json.loads(next((recorded_logdir / run).glob("*.pt.trace.json*")).read_bytes())


def test_missing_or_bad_times_are_dropped_with_a_warning(recorded_logdir):
    doc = _recorded_doc(recorded_logdir)
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    ops[0].pop("ts")
    ops[1]["dur"] = "1314.8us"
    ops[2]["dur"] = -100
    ops[3].pop("dur")
    intact = TraceProcessor.load(str(next((recorded_logdir / "baseline").glob("*.pt.trace.json*"))))
    tp = TraceProcessor(decode_trace(json.dumps(doc).encode()))
    assert "1 events without a usable timestamp (`ts`) were ignored" in tp.warnings
    assert "3 complete (X) events with a missing, unreadable, negative or absurd duration (`dur`) were ignored" in tp.warnings
    assert int(tp.operators()["calls"].sum()) == int(intact.operators()["calls"].sum()) - 4
    assert tp.overview()["trace_duration_us"] == pytest.approx(intact.overview()["trace_duration_us"], rel=0.01)
    assert all(s["duration_us"] > 0 for s in tp.overview()["steps"])


def test_ids_beyond_64_bits_do_not_fail_the_run(recorded_logdir):
    doc = _recorded_doc(recorded_logdir)
    op = next(e for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    op["args"]["External id"] = 2**64 + 5
    step = next(e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    step["name"] = "ProfilerStep#99999999999999999999999"
    kernel_like = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": op["ts"], "dur": 1,
                   "args": {"device": 2**33, "correlation": 1}}
    doc["traceEvents"].append(kernel_like)
    tp = TraceProcessor(decode_trace(json.dumps(doc).encode()))
    assert "1 ids or numbers outside the 64-bit range were ignored" in tp.warnings
    assert tp.table.device.max() == 2**33  # not wrapped to 0
    ov = tp.overview()
    assert len(ov["steps"]) == 3


def test_odd_metadata_does_not_break_the_overview(recorded_logdir):
    doc = _recorded_doc(recorded_logdir)
    doc["deviceProperties"] = [1, {"id": [1]}, {"name": 5, "totalGlobalMem": "lots"}]
    doc["distributedInfo"] = "x"
    ov = TraceProcessor(decode_trace(json.dumps(doc).encode())).overview()
    # No usable device entry and no device activity: a CPU run.
    assert ov["device"] == {"type": "CPU", "name": None, "count": 0, "memory_bytes": None, "compute_capability": None}
    doc["deviceProperties"].append({"id": 0, "name": "Tesla V100", "totalGlobalMem": "lots"})
    ov = TraceProcessor(decode_trace(json.dumps(doc).encode())).overview()
    assert ov["device"]["type"] == "GPU" and ov["device"]["name"] == "Tesla V100"
    assert ov["device"]["memory_bytes"] is None
    assert ov["distributed"] is None


def test_memory_only_trace_bom_and_nan(recorded_logdir):
    doc = _recorded_doc(recorded_logdir)
    mem_only = {"traceEvents": [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]}
    table = decode_trace(json.dumps(mem_only).encode())
    assert len(table.memory.ts_us) == len(mem_only["traceEvents"]) > 0
    memory = TraceProcessor(table).overview()["memory"]
    assert memory["peak_bytes"] == max(e["args"]["Total Allocated"] for e in mem_only["traceEvents"])

    raw = json.dumps(doc).encode()
    with_bom = decode_trace(b"\xef\xbb\xbf" + raw)
    assert len(with_bom) == len(decode_trace(raw))

    op = next(e for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    op["args"]["Sequence number"] = float("nan")  # json.dumps writes NaN
    op["dur"] = float("nan")
    table = decode_trace(json.dumps(doc).encode())
    assert any("NaN" in w for w in table.warnings)
    assert any("duration" in w for w in table.warnings)
    assert not any("middle of an event" in w for w in table.warnings)


def test_small_plain_file_reserves_only_its_size(shared_traces, tmp_path):
    """Reading a plain file asks for its size, not the size limit: `read(n)`
    reserves n bytes up front, and a KB file under an address-space limit
    (a container's, the fuzz's) failed with MemoryError."""
    path = tmp_path / "small.pt.trace.json"
    path.write_bytes(gzip.decompress((shared_traces / "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz").read_bytes()))
    script = textwrap.dedent(f"""
        import resource
        from tb_pipeline_plugin.trace.reader import read_trace_bytes
        vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20), vm + (512 << 20)))
        data, warnings = read_trace_bytes({str(path)!r})
        print(len(data), warnings)
    """)
    env = {**os.environ, "TB_PIPELINE_MAX_TRACE_MB": "4096"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [str(path.stat().st_size), "[]"]
