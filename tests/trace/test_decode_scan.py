"""The compiled scanner (`trace/_scan.c`, `trace/scan.py`) gives exactly the
table msgspec alone gives: column for column, string for string, warning
for warning.

- Every shared trace (HTA's GPU, AMD, NCCL and multi-rank traces, kineto's
  2021 samples, the H200 AMP and torch.compile pairs) and a trace recorded
  here with stacks, shapes and memory, in small chunks; the scanner must
  have taken most chunks, so the comparison cannot pass by falling back.
- Hand-made chunks of everything the scanner refuses or must read as
  msgspec does: escapes, nulls, huge and fractional ids, non-ASCII and
  invalid UTF-8, surrogates, NaN, deep nesting, damage, B/E pairs, every
  sparse field (memory, kernel, flow, metadata) present, null and odd.
- Numbers: 20,000 random decimal texts read as Python's float() reads them.
The decoder fuzz (benchmarks/fuzz_decoder.py, tests/trace/test_decoder_fuzz.py)
compares the two paths on mutated traces as well.
"""
from __future__ import annotations

import json
import random

import pytest

from test_decode_parallel import assert_same
from tb_pipeline_plugin.trace import decode_trace, scan
from tb_pipeline_plugin.trace.reader import read_trace_bytes

SMALL_CHUNK = 16 << 10


def test_the_scanner_is_built():
    # `make setup` compiles it; without it every decode silently takes the slow path.
    assert scan.Scanner is not None and scan.AVAILABLE


def _both(data: bytes, monkeypatch, chunk_bytes: int = SMALL_CHUNK):
    """(scanned table or error, msgspec table or error, chunks the scanner took, chunks it was asked)."""
    counts = {"asked": 0, "taken": 0}
    columns = scan.ChunkScanner.columns

    def counting(self, data, a, b):
        got = columns(self, data, a, b)
        counts["asked"] += 1
        counts["taken"] += got is not None
        return got

    monkeypatch.setattr(scan.ChunkScanner, "columns", counting)
    outcomes = []
    for available in (True, False):
        monkeypatch.setattr(scan, "AVAILABLE", available)
        try:
            outcomes.append(decode_trace(data, chunk_bytes))
        except ValueError as exc:
            outcomes.append(f"ValueError: {exc}")
    return outcomes[0], outcomes[1], counts["taken"], counts["asked"]


def _assert_same_outcome(scanned, plain):
    if isinstance(plain, str) or isinstance(scanned, str):
        assert scanned == plain
    else:
        assert_same(scanned, plain)


SHARED = [
    "hta/amd/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/multi_rank/sampled_rank-0.json.gz",
    "hta/nccl/nccl_data.json.gz",
    "hta/single_rank/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/trace_diff/control.json.gz",
    "kineto/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz",
]


def _h200_traces(shared_traces):
    return sorted((shared_traces.parent / "h200").glob("*/*/*.pt.trace.json*"))


@pytest.mark.parametrize("name", SHARED + ["h200"])
def test_shared_traces_scan_to_the_msgspec_table(shared_traces, monkeypatch, name):
    paths = _h200_traces(shared_traces) if name == "h200" else [shared_traces.parent / name]
    assert paths, name
    for path in paths:
        data, _ = read_trace_bytes(str(path))
        scanned, plain, taken, asked = _both(data, monkeypatch)
        _assert_same_outcome(scanned, plain)
        assert not isinstance(plain, str) and len(plain.ts_us) > 100
        # Only chunks with something irregular are refused (and read by msgspec).
        assert taken >= 0.9 * asked, (path.name, taken, asked)


def test_a_recorded_trace_with_stacks_shapes_and_memory(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True, with_stack=True,
                 with_modules=True) as prof:
        for _ in range(3):
            model(torch.randn(32, 64)).sum().backward()
    path = tmp_path / "recorded.pt.trace.json"
    prof.export_chrome_trace(str(path))
    data = path.read_bytes()
    scanned, plain, taken, asked = _both(data, monkeypatch, chunk_bytes=8 << 10)
    _assert_same_outcome(scanned, plain)
    assert taken >= 0.9 * asked
    # What the recording holds, so that each reader met it: memory events, shapes, input types, Python frames.
    assert len(plain.memory.ts_us) > 0 and (plain.shape_id >= 0).any() and (plain.python_id >= 0).any()
    assert '"float"' in " ".join(plain.names(plain.input_type_id[plain.input_type_id >= 0]))


def _doc(events: list) -> bytes:
    return json.dumps({"traceEvents": events}).encode()


def _op(i: int, **extra) -> dict:
    event = {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 7}", "pid": 1, "tid": 2, "ts": 1000.5 + i,
             "dur": 0.75, "args": {"External id": i, "Input Dims": [[i % 3, 4]], "Python id": i}}
    event.update(extra)
    return event


def _raw_doc(middle: bytes) -> bytes:
    """Ten ordinary operators, `middle` (the text of one or more events), ten more."""
    ops = [json.dumps(_op(i)).encode() for i in range(20)]
    return b'{"traceEvents": [' + b",\n".join(ops[:10] + [middle] + ops[10:]) + b"]}"


ODD_EVENTS = {
    "escaped key": rb'{"\u0070h": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "escaped arg key": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"External\u0020id": 9}}',
    "escaped name": rb'{"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9\n", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "html name": rb'{"ph": "X", "cat": "cpu_op", "name": "<script>alert(1)</script>", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "non-ASCII name": '{"ph": "X", "cat": "python_function", "name": "módulo.py(3): función", "pid": 1, "tid": 2, "ts": 5, "dur": 1}'.encode(),
    "invalid UTF-8 name": b'{"ph": "X", "cat": "cpu_op", "name": "a\xff\xfeb", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "invalid UTF-8 skipped": b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"x": "\xc3("}}',
    "lone surrogate": rb'{"ph": "X", "cat": "cpu_op", "name": "a\ud800", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "surrogate pair skipped": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"x": "\ud83d\ude00"}}',
    "null ids": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"Python parent id": null, "External id": null}}',
    "null ts": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": null, "dur": 1}',
    "string ts": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": "5", "dur": 1}',
    "no ts, no dur": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2}',
    "negative dur": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": -1}',
    "huge ts": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1e300, "dur": 1}',
    "overflowing ts": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1e400, "dur": 1}',
    "NaN ts": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": NaN, "dur": 1}',
    "25-digit ts": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1682725898237201123456789, "dur": 1}',
    "25-digit kernel number": rb'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 6, "dur": 2, "args": {"registers per thread": 1234567890123456789012345}}',
    "null kernel numbers and grid": rb'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 6, "dur": 2, "args": {"registers per thread": null, "grid": null, "shared memory": 1.5e3}}',
    "string flow id": rb'{"ph": "f", "cat": "fwdbwd", "id": "x7", "pid": 1, "tid": 2, "ts": 5, "bp": "e"}, {"ph": "s", "cat": "fwdbwd", "id": 7, "pid": 1, "tid": 2, "ts": 4}',
    "escaped flow id and bp": rb'{"ph": "f", "cat": "fwdbwd", "id": "x\u0037", "pid": 1, "tid": 2, "ts": 5, "bp": "\u0065"}',
    "null flow id, no bp": rb'{"ph": "t", "cat": "ac2g", "id": null, "pid": 1, "tid": 2, "ts": 5}',
    "float flow id": rb'{"ph": "s", "cat": "ac2g", "id": 1.5, "pid": 1, "tid": 2, "ts": 5}',
    "memory fields on an operator": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"Bytes": 5, "Addr": null}}',
    "null memory fields": rb'{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": 5, "args": {"Bytes": null, "Total Allocated": null, "Device Type": 0}}',
    "fractional memory field": rb'{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": 5, "args": {"Bytes": 1.5, "Device Type": 0}}',
    "metadata of every kind": rb'{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "<b>rank\u0020one</b>"}}, {"ph": "M", "name": "thread_name", "pid": "1", "tid": 3, "args": {"name": null}}, {"ph": "M", "name": "process_sort_index", "pid": 1, "args": {"sort_index": 2}}',
    "non-string metadata name": rb'{"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": 5}}',
    "exponent and -0": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1.5e3, "dur": -0.0}',
    "many digits": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1682725898237201.123456789, "dur": 0.1000000000000000055511151231257827}',
    "19-digit id": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"External id": 9223372036854775807}}',
    "uint64 id": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"correlation": 18446744073709551615}}',
    "fractional id": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"Python id": 1.5}}',
    "boolean id": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"device": true}}',
    "string pid": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": "Spans", "tid": "1", "ts": 5, "dur": 1}',
    "float pid": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1.5, "tid": 2, "ts": 5, "dur": 1}',
    "huge pid": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 123456789012345678901234567890, "tid": 2, "ts": 5, "dur": 1}',
    "null name": rb'{"ph": "X", "cat": "cpu_op", "name": null, "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "args not an object": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": [1]}',
    "duplicate keys": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "name": "b", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "dur": 2}',
    "deep nesting": b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"x": '
                    + b"[" * 300 + b"]" * 300 + b"}}",
    "shapes of every kind": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"Input Dims": null, "Call stack": "f;g"}}',
    # `Input type` shares its length and first letter with `Input Dims` (the scanner's key index chains them).
    "input types of every kind": rb'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "args": {"Input type": ["float", "c10::BFloat16", "", "Scalar"], "Input Dims": [[2, 3], [3, 4], [], []]}}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 6, "dur": 1, "args": {"Input Dims": [[2]], "Input type": ["c10::Half"]}}, {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 7, "dur": 1, "args": {"Input type": null}}, {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 8, "dur": 1, "args": {"Input type": "float", "Input typo": [1]}}, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 9, "dur": 1, "args": {"Input type": ["float"]}}',
    "not an object": b'[1, 2]',
    "empty object": b"{}",
    "begin and end": rb'{"ph": "B", "cat": "user_annotation", "name": "s", "pid": 1, "tid": 2, "ts": 3}, {"ph": "E", "pid": 1, "tid": 2, "ts": 40}',
    "flow and kernel": rb'{"ph": "s", "cat": "ac2g", "id": 7, "pid": 1, "tid": 2, "ts": 5, "bp": "e"}, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 6, "dur": 2, "args": {"correlation": 7, "grid": [1, 1, 1], "block": [32, 1, 1], "registers per thread": 32}}',
    "op with a flow id": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1, "id": 3, "args": {"Input Dims": [[99]]}}',
    "memory events": rb'{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": 5, "s": "t", "args": {"Total Reserved": 0, "Total Allocated": 64, "Bytes": 64, "Addr": 99, "Device Id": -1, "Device Type": 0}}, {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 6, "args": {"Bytes": -64, "Device Type": 0}}',
    "metadata": rb'{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}}',
    "unknown phase": rb'{"ph": "Q", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "whitespace everywhere": b'{ "ph" :\t"X" ,\r\n "name" : "a" , "pid":1,"tid":2,"ts":5,"dur":1 , "args" : { "External id" : 4 } }',
    "a trailing comma": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1},',
    "two commas": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1},,',
    "corrupt bytes": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 5, "dur": 1}, {"ph": "X" "cat"}',
    "control character": b'{"ph": "X", "cat": "cpu_op", "name": "a\x01b", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "bad escape": rb'{"ph": "X", "cat": "cpu_op", "name": "a\qb", "pid": 1, "tid": 2, "ts": 5, "dur": 1}',
    "leading zero": rb'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 05, "dur": 1}',
}


# What the scanner reads itself (the rest it refuses, for msgspec to read):
# without this the comparison above could pass by the scanner refusing all.
SCANNED = {
    "escaped name", "html name", "non-ASCII name", "null ids", "no ts, no dur", "negative dur", "huge ts",
    "exponent and -0", "many digits", "string pid", "huge pid", "shapes of every kind", "duplicate keys",
    "empty object", "begin and end", "flow and kernel", "op with a flow id", "memory events", "metadata",
    "unknown phase", "whitespace everywhere", "null kernel numbers and grid", "string flow id",
    "null flow id, no bp",
    "memory fields on an operator", "null memory fields", "metadata of every kind", "input types of every kind",
}


@pytest.mark.parametrize("case", sorted(ODD_EVENTS))
def test_odd_events_decode_as_msgspec_decodes_them(monkeypatch, case):
    data = _raw_doc(ODD_EVENTS[case])
    for chunk_bytes in (SMALL_CHUNK, 512):
        scanned, plain, taken, asked = _both(data, monkeypatch, chunk_bytes=chunk_bytes)
        _assert_same_outcome(scanned, plain)
        if chunk_bytes == SMALL_CHUNK:
            assert (taken == asked) == (case in SCANNED), (taken, asked)


def test_a_truncated_trace_keeps_the_same_events_and_warning(monkeypatch):
    data = _doc([_op(i) for i in range(400)])
    for cut in (len(data) // 3, len(data) - 40, len(data) - 3):
        scanned, plain, _, _ = _both(data[:cut], monkeypatch, chunk_bytes=2048)
        _assert_same_outcome(scanned, plain)
        assert not isinstance(plain, str) and plain.warnings


def test_numbers_read_as_python_reads_them(monkeypatch):
    rng = random.Random(5)
    texts = []
    for _ in range(20_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22))).lstrip("0") or "0"
        point = rng.randint(0, len(digits))
        text = digits[:point] + ("." + digits[point:] if point < len(digits) else "")
        text = text if not text.startswith(".") else "0" + text
        if "." not in text:
            text = text[:18]  # longer integers are msgspec's to read (the scanner refuses their chunk)
        if rng.random() < 0.2:
            text += f"e{rng.randint(-30, 30)}"
        texts.append(("-" if rng.random() < 0.1 else "") + text)
    events = ",".join(f'{{"ph": "i", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": {t}}}' for t in texts)
    data = b'{"traceEvents": [' + events.encode() + b"]}"
    scanned, plain, taken, asked = _both(data, monkeypatch)
    _assert_same_outcome(scanned, plain)
    assert taken == asked
    expected = [float(t) for t in texts]
    assert scanned.ts_us.tolist() == [x for x in expected if abs(x) <= 1e18]
