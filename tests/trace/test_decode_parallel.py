"""The fast paths of decoding give exactly the table of the plain path.

- A big trace decoded by several forked processes (`decode_trace(...,
  processes=2)`) equals the one-process table, column for column and string
  for string, on every shared trace; damage or a failed child falls back to
  the one-process decode, with its exact warnings.
- The event array located from the document's two ends (`guess_events`)
  equals the full structural read (`locate_events`); where the guess is
  wrong (a list of objects among the trailing keys), the table is still the
  one `locate_events` gives, without warnings.
- The nesting order and the hashed and tabled uniques match np.lexsort / np.unique.
- The columns joined in one shared file equal those pickled back, and
  columns that are not plain numbers (string flow ids) go pickled.
"""
from __future__ import annotations

import dataclasses
import faulthandler
import json
import os

import numpy as np
import pytest

from support.json_oracle import load_events
from tb_pipeline_plugin.trace import decode as decode_module
from tb_pipeline_plugin.trace import decode_trace, load_trace, range_read
from tb_pipeline_plugin.trace import persist, shared_join
from tb_pipeline_plugin.trace.fork_map import fork_map, fork_talking
from tb_pipeline_plugin.trace import link as link_module
from tb_pipeline_plugin.trace.link import HOST_KINDS, link
from tb_pipeline_plugin.trace.locate import chunk_bounds, guess_events, locate_events
from tb_pipeline_plugin.trace.nesting import _by_thread_start_longest
from tb_pipeline_plugin.trace.reader import read_trace_bytes
from tb_pipeline_plugin.trace.table import Kind, Phase
from tb_pipeline_plugin.trace.unique import pair_unique_inverse, small_unique_inverse, unique_inverse

SMALL_CHUNK = 64 << 10

# Shared traces (under `shared_traces`, HTA's): GPU, AMD, NCCL, multi-rank, and kineto's 2021 sample.
SHARED = [
    "amd/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "multi_rank/sampled_rank-0.json.gz",
    "nccl/nccl_data.json.gz",
    "single_rank/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "trace_diff/control.json.gz",
    "../kineto/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz",
]


def assert_same(a, b, path="table"):
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, path
        if a.dtype == object:
            assert a.tolist() == b.tolist(), path
        else:
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    else:
        assert a == b, path


@pytest.fixture
def split_small(monkeypatch):
    """Shared traces are 60 KB to 30 MB: let them split into small ranges."""
    monkeypatch.setattr(decode_module, "SPLIT_MIN_BYTES", 4 << 10)


def chunk_size(data: bytes) -> int:
    return max(4 << 10, len(data) // 64)


def _data(shared_traces, name: str) -> bytes:
    data, _ = read_trace_bytes(str(shared_traces / name))
    return data


@pytest.fixture(params=["shared", "pickled"])
def join(request, monkeypatch):
    """How the forked decoders' columns are joined: written into one shared
    file (`shared_join.py`), or pickled back as where there is no memfd."""
    if request.param == "pickled":
        monkeypatch.setattr(shared_join, "available", lambda: False)
    return request.param


@pytest.mark.parametrize("name", SHARED)
def test_parallel_decode_equals_one_process(shared_traces, split_small, join, name):
    data = _data(shared_traces, name)
    chunk = chunk_size(data)
    region = guess_events(data)
    bounds = chunk_bounds(data, region.start, region.end, chunk)
    ranges = decode_module._split_points(bounds, 3)
    assert len(ranges) == 3
    assert decode_module._decode_split(data, ranges) is not None  # the parallel path, not its fallback
    one = decode_trace(data, chunk)
    for processes in (2, 3):
        many = decode_trace(data, chunk, processes=processes)
        assert_same(one, many)
    assert_same(link(one), link(many), "linked")


@pytest.mark.parametrize("name", SHARED)
def test_links_found_on_a_side_thread_equal_one_thread(shared_traces, monkeypatch, name):
    """Big traces find their Python parents and forward/backward flows on a
    thread beside the nesting: the same links and warnings, in the same order."""
    data = _data(shared_traces, name)
    linked = {}
    for side, threshold in (("one thread", 10**12), ("side thread", 0)):
        monkeypatch.setattr(link_module, "SIDE_THREAD_MIN_EVENTS", threshold)
        linked[side] = link(decode_trace(data))
    assert_same(linked["one thread"], linked["side thread"], "linked")
    assert linked["one thread"].table.warnings == linked["side thread"].table.warnings


def test_parallel_decode_of_damage_falls_back_with_exact_warnings(shared_traces, split_small):
    data = bytearray(_data(shared_traces, SHARED[3]))
    at = len(data) * 2 // 3
    at = data.index(b'"name"', at)
    data[at : at + 6] = b"\x00@#!\x01{"  # corrupt bytes inside one event, in the last range
    one = decode_trace(bytes(data), SMALL_CHUNK)
    many = decode_trace(bytes(data), SMALL_CHUNK, processes=2)
    assert any("corrupt JSON" in w for w in one.warnings)
    assert_same(one, many)


def test_string_flow_ids_are_joined_pickled_and_equal_one_process(split_small):
    """A decoder holding columns that are not plain numbers (string flow ids:
    1 and "1" must stay distinct) sends its chunks pickled: the same table."""
    events = []
    for i in range(3000):
        events.append({"ph": "X", "name": f"op{i % 7}", "cat": "cpu_op", "ts": 10 * i, "dur": 5, "pid": 1, "tid": 2})
        flow_id = str(i) if i % 2 else i
        events.append({"ph": "s", "name": "fwdbwd", "cat": "fwdbwd", "id": flow_id, "ts": 10 * i, "pid": 1, "tid": 2})
        events.append({"ph": "f", "name": "fwdbwd", "cat": "fwdbwd", "id": flow_id, "ts": 10 * i + 3, "pid": 1,
                       "tid": 2, "bp": "e"})
    data = json.dumps({"traceEvents": events}).encode()
    chunk = max(4 << 10, len(data) // 64)
    region = guess_events(data)
    ranges = decode_module._split_points(chunk_bounds(data, region.start, region.end, chunk), 2)
    assert len(ranges) == 2 and decode_module._decode_split(data, ranges) is not None
    one, many = decode_trace(data, chunk), decode_trace(data, chunk, processes=2)
    assert_same(one, many)
    assert len(np.unique(many.flows.flow_id)) == 3000  # 1 and "1" distinct, each pair one id


def test_fork_talking_rounds_and_failures():
    def child(x, talk):
        if x == 3:
            os._exit(9)
        talk.send({"x": x, "squares": np.arange(x) ** 2})
        reply = talk.recv()
        talk.send(reply * x)

    children = fork_talking(child, [2, 3, 4])
    try:
        first = [c.recv() for c in children]
        assert first[0]["x"] == 2 and first[2]["squares"].tolist() == [0, 1, 4, 9] and first[1] is None
        assert children[0].send(10) and children[2].send(100)
        assert children[0].recv() == 20 and children[2].recv() == 400
    finally:
        assert [c.close() for c in children] == [True, False, True]
    # A child waiting for a message the caller never sends leaves once its pipes close.
    (waiting,) = fork_talking(lambda x, talk: talk.recv(), [1])
    assert waiting.close() is False  # it left on the end of its pipe, not cleanly


def test_a_failed_child_is_redone_in_the_caller(shared_traces, split_small, join, monkeypatch):
    data = _data(shared_traces, SHARED[4])
    one = decode_trace(data, SMALL_CHUNK)
    real_decode_chunks = decode_module._decode_chunks
    parent = os.getpid()

    def dies_in_a_child(*args, **kwargs):
        if os.getpid() != parent:
            os._exit(3)  # as if killed for lack of memory
        return real_decode_chunks(*args, **kwargs)

    monkeypatch.setattr(decode_module, "_decode_chunks", dies_in_a_child)
    assert_same(one, decode_trace(data, SMALL_CHUNK, processes=2))


@pytest.fixture
def range_small(monkeypatch, split_small):
    """Ends, windows and chunks small enough for the shared traces to take the range-reading path."""
    monkeypatch.setattr(range_read, "EDGE_BYTES", 8 << 10)
    monkeypatch.setattr(range_read, "WINDOW_BYTES", 1 << 10)


def _plain_copy(shared_traces, name: str, tmp_path) -> str:
    out = tmp_path / (os.path.basename(name).removesuffix(".gz"))
    out.write_bytes(_data(shared_traces, name))
    return str(out)


@pytest.mark.parametrize("name", SHARED)
def test_processes_reading_their_own_ranges_give_the_one_process_table(shared_traces, range_small, tmp_path, name):
    path = _plain_copy(shared_traces, name, tmp_path)
    data = _data(shared_traces, name)
    by_ranges = decode_module._load_by_ranges(path, 3, chunk_bytes=chunk_size(data))
    assert by_ranges is not None  # the range-reading path, not its fallback
    one = decode_trace(data, chunk_size(data))
    assert_same(one, by_ranges)
    assert one.warnings == by_ranges.warnings
    assert_same(load_trace(path), load_trace(path, processes=2))


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("child_dies", [False, True])
def test_columns_written_into_the_entry_are_kept_there_and_read_back_the_same(shared_traces, range_small, tmp_path,
                                                                              monkeypatch, child_dies, processes):
    """The decoders write the joined columns into the cache entry's columns
    file (`load_trace(..., into=JoinFile)`); `save_linked` lists the table's
    columns where they lie and writes only the link's after them; the entry
    reads back (every checksum verified) as the one-process linked trace.
    With one process too (one forked child decodes the whole file). When a
    child dies the table comes from the whole read and the file is written
    whole: the same entry."""
    name = SHARED[4]
    path = _plain_copy(shared_traces, name, tmp_path)
    entry = tmp_path / "entry"
    entry.mkdir()
    if child_dies:
        real, parent = decode_module._decode_chunks, os.getpid()
        monkeypatch.setattr(decode_module, "_decode_chunks",
                            lambda *a, **k: os._exit(3) if os.getpid() != parent else real(*a, **k))
    with shared_join.JoinFile(str(entry / persist.COLUMNS)) as into:
        linked = link(load_trace(path, processes=processes, into=into))
    table_bytes = into.size
    persist.save_linked(linked, str(entry), into)
    back = persist.load_linked(str(entry), verify=True)
    assert_same(link(load_trace(path)), back, "linked")
    layout = json.loads(json.loads((entry / persist.MANIFEST).read_text())["body"])["columns"]
    in_place = {name for name, column in layout.items() if column["offset"] < table_bytes}
    if child_dies:
        assert table_bytes == 0 and not in_place
    else:
        assert {"table.ts_us", "table.dur_us", "table.name_id", "table.flows.ts_us"} <= in_place
        assert "parent" not in in_place and "table.thread_id" not in in_place  # made after the join: written


def test_range_reading_leaves_every_irregular_file_to_the_whole_read(shared_traces, range_small, tmp_path,
                                                                     monkeypatch):
    name = SHARED[3]
    path = _plain_copy(shared_traces, name, tmp_path)
    gz = str(shared_traces / name)
    assert decode_module._load_by_ranges(gz, 2) is None  # gzip
    data = _data(shared_traces, name)
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) * 3 // 4])  # still being written: no closing bracket
    assert decode_module._load_by_ranges(str(cut), 2) is None
    assert_same(load_trace(str(cut)), load_trace(str(cut), processes=2))
    assert any("ends in the middle" in w or "not valid JSON" in w for w in load_trace(str(cut), processes=2).warnings)
    corrupt = bytearray(data)
    at = corrupt.index(b'"name"', len(corrupt) * 2 // 3)
    corrupt[at : at + 6] = b"\x00@#!\x01{"
    (tmp_path / "corrupt.json").write_bytes(bytes(corrupt))
    assert decode_module._load_by_ranges(str(tmp_path / "corrupt.json"), 2) is None  # damage: exact warnings need one process
    with_damage = load_trace(str(tmp_path / "corrupt.json"), processes=2)
    assert_same(decode_trace(bytes(corrupt)), with_damage)
    # A file that shrank after it was opened: the short read gives up in the parent ...
    real_read = range_read.RangeFile.read
    with monkeypatch.context() as m:
        m.setattr(range_read.RangeFile, "read", lambda self, a, b: False if b - a > 4 << 10 else real_read(self, a, b))
        assert decode_module._load_by_ranges(path, 2) is None
    assert_same(load_trace(path, processes=2), load_trace(path))
    # ... and so does a child that maps it (the file now shorter than its range) ...
    real_mapped = range_read.RangeFile.mapped
    size = os.path.getsize(path)
    (tmp_path / "before").mkdir()
    cut_before = _plain_copy(shared_traces, name, tmp_path / "before")

    def cut_then_map(self, a, b):
        os.truncate(cut_before, size // 2)
        return real_mapped(self, a, b)

    with monkeypatch.context() as m:
        m.setattr(range_read.RangeFile, "mapped", cut_then_map)
        assert decode_module._load_by_ranges(cut_before, 2) is None
    # ... and a file cut after a child mapped it kills that child (SIGBUS at the
    # first page past the new end), never the caller: the whole read then.
    (tmp_path / "after").mkdir()
    cut_after = _plain_copy(shared_traces, name, tmp_path / "after")

    def map_then_cut(self, a, b):
        mapped = real_mapped(self, a, b)
        os.truncate(cut_after, 0)
        faulthandler.disable()  # this child's expected SIGBUS needs no traceback
        return mapped

    with monkeypatch.context() as m:
        m.setattr(range_read.RangeFile, "mapped", map_then_cut)
        assert decode_module._load_by_ranges(cut_after, 2) is None
    assert os.path.getsize(cut_after) == 0


def test_fork_map_results_and_failures():
    def square_or_fail(x):
        if x == 2:
            raise RuntimeError("boom")
        if x == 3:
            os._exit(9)
        return {"x": x, "squares": np.arange(x) ** 2}

    for in_caller in (True, False):
        got = fork_map(square_or_fail, [4, 1, 2, 3, 5], in_caller=in_caller)
        assert got[0]["x"] == 4 and got[1]["squares"].tolist() == [0] and got[4]["squares"].tolist() == [0, 1, 4, 9, 16]
        assert got[2] is None and got[3] is None
    # Every input in a child: even the first one's failure is a None, the caller untouched.
    assert fork_map(square_or_fail, [3, 1], in_caller=False)[0] is None
    with pytest.raises(RuntimeError):  # the caller's own input fails as usual
        fork_map(square_or_fail, [2, 1])


@pytest.mark.parametrize("name", SHARED)
def test_guessed_region_equals_the_full_read(shared_traces, name):
    data = _data(shared_traces, name)
    guess, full = guess_events(data), locate_events(data)
    assert guess is not None
    assert (guess.start, guess.end, guess.closed, guess.metadata) == (full.start, full.end, full.closed, full.metadata)


def _document(head: str, events: list[dict], tail: str) -> bytes:
    return (head + '"traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events) + "\n]" + tail).encode()


@pytest.fixture(scope="module")
def events(shared_traces):
    _, evs = load_events(shared_traces / SHARED[4])
    return evs[:3000]


@pytest.mark.parametrize("head, tail, guessed", [
    ('{"schemaVersion": 1, ', "}", True),
    ('{"traceName": "traceEvents", ', ', "displayTimeUnit": "ms", "Logs": ["a ] b", "c"]}', True),
    # Trailing keys holding objects in a list: the last `]` after a `}` is theirs.
    ('{', ', "extra": [{"id": 1}, {"id": 2}], "baseTimeNanoseconds": 5}', True),
    # A second event array after the first: the guess spans both, its last
    # chunk then fails to decode, and the full read decides which one counts.
    ('{', ', "traceEvents": [{"ph": "X", "name": "late", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]}', True),
    ('\ufeff{', "}", False),  # byte order mark
])
def test_unusual_layouts_decode_as_the_full_read_says(events, head, tail, guessed):
    data = _document(head, events, tail)
    if head.startswith("\ufeff"):
        data = "\ufeff".encode() + data[len("\ufeff".encode()):]
    assert (guess_events(data) is not None) == guessed
    table = decode_trace(data, SMALL_CHUNK)
    full = locate_events(data)
    expected = decode_module._decode_events(data, full, list(full.warnings), SMALL_CHUNK, 1, guessed=False)
    assert_same(expected, table)
    assert table.warnings == []
    assert int((table.kind == Kind.CPU_OP).sum()) == sum(
        1 for e in (json.loads(data.decode("utf-8-sig"))["traceEvents"]) if e.get("cat") == "cpu_op")


@pytest.mark.parametrize("name", SHARED)
def test_nesting_order_equals_lexsort(shared_traces, name):
    table = decode_trace(_data(shared_traces, name))
    rows = np.flatnonzero((table.phase == Phase.COMPLETE) & np.isin(table.kind, HOST_KINDS))
    start = table.ts_us[rows] - table.ts_us[rows].min()
    length = np.maximum(table.dur_us[rows], 1e-4)
    thread = table.thread_id[rows]
    assert np.array_equal(_by_thread_start_longest(thread, start, length), np.lexsort((-length, start, thread)))


def test_nesting_order_with_many_ties():
    rng = np.random.default_rng(7)
    n = 20_000
    thread = rng.integers(0, 4, n).astype(np.int32)
    start = rng.integers(0, 500, n).astype(np.float64)  # many rows share a start
    length = rng.integers(0, 5, n).astype(np.float64)  # and a length: full ties keep row order
    assert np.array_equal(_by_thread_start_longest(thread, start, length), np.lexsort((-length, start, thread)))


def test_unique_inverse_equals_np_unique():
    rng = np.random.default_rng(3)
    for values in (rng.integers(-5, 1 << 40, 10_000), np.array([], np.int64), rng.integers(0, 3, 50).astype(np.int32)):
        uniq, inverse = unique_inverse(values)
        want_uniq, want_inverse = np.unique(values, return_inverse=True)
        assert uniq.dtype == values.dtype and np.array_equal(uniq, want_uniq)
        assert np.array_equal(inverse, want_inverse)


@pytest.mark.parametrize("bound", [1, 3, 200, 5000])
def test_small_and_pair_unique_inverse_equal_np_unique(bound):
    """By table (small ids, a pid's and a tid's key ids), by hashing beyond
    the table's size, and for values outside the bound: as np.unique."""
    rng = np.random.default_rng(bound)
    small = rng.integers(0, bound, 20_000).astype(np.int32)
    pairs = rng.integers(0, bound, 20_000).astype(np.int64) << 32 | rng.integers(0, bound, 20_000)
    outside = np.concatenate([small, [bound, -1]]).astype(np.int32)
    lo_outside = np.concatenate([pairs, [bound]])
    for got, values in ((small_unique_inverse(small, bound), small), (pair_unique_inverse(pairs, bound), pairs),
                        (small_unique_inverse(outside, bound), outside),
                        (pair_unique_inverse(lo_outside, bound), lo_outside)):
        want_uniq, want_inverse = np.unique(values, return_inverse=True)
        assert got[0].dtype == values.dtype and np.array_equal(got[0], want_uniq)
        assert np.array_equal(got[1], want_inverse)
