"""The compiled nesting walk (`trace/_nest.c`) gives exactly the depths and
parents of nesting.py's sorts, which stay the answer when it is not built
or declines (an end that is not above its start).

- Every shared trace's host events (HTA's GPU, AMD, NCCL and multi-rank
  traces, kineto's 2021 samples, the H200 AMP and torch.compile pairs)
  and a trace recorded here: the walk must take each of them.
- Random events: many threads, equal starts, equal ends, children that
  outlast their parent by a rounding error, deep stacks, and lengths that
  round away to nothing (which the walk must decline).
"""
from __future__ import annotations

import numpy as np
import pytest

from tb_pipeline_plugin.trace import decode_trace, nesting
from tb_pipeline_plugin.trace.link import HOST_KINDS
from tb_pipeline_plugin.trace.reader import read_trace_bytes
from tb_pipeline_plugin.trace.table import Phase

from test_decode_scan import SHARED, _h200_traces


def test_the_walk_is_built():
    # `make setup` compiles it; without it every link silently takes the slower sorts.
    assert nesting._walk is not None


def _sorted_events(thread, start, length):
    order = nesting._by_thread_start_longest(thread, start, length)
    return start[order], (start + length)[order], thread[order]


def _assert_walk_equals_sorts(s, e, t, must_walk=True):
    walked = nesting._walk(s, e, t.astype(np.int64))
    if must_walk:
        assert walked is not None, "the walk declined events whose ends are all above their starts"
    depth, parent = nesting.sorted_links(s, e, t)
    sort_depth = nesting._depths(s, e, t)
    sort_parent = nesting._parents(sort_depth)
    np.testing.assert_array_equal(depth, sort_depth)
    np.testing.assert_array_equal(parent, sort_parent)
    return walked is not None


def _host_events(path):
    table = decode_trace(read_trace_bytes(str(path))[0])
    rows = np.flatnonzero((table.phase == Phase.COMPLETE) & np.isin(table.kind, HOST_KINDS))
    start = table.ts_us[rows] - table.ts_us[rows].min()
    length = np.maximum(table.dur_us[rows], nesting._ZERO_DUR_US)
    return table.thread_id[rows], start, length


@pytest.mark.parametrize("name", SHARED + ["h200"])
def test_shared_traces_nest_the_same(shared_traces, name):
    paths = _h200_traces(shared_traces) if name == "h200" else [shared_traces.parent / name]
    for path in paths:
        thread, start, length = _host_events(path)
        assert len(start) > 50
        _assert_walk_equals_sorts(*_sorted_events(thread, start, length))


def test_a_recorded_trace_nests_the_same(recorded_logdir):
    [path] = sorted((recorded_logdir / "baseline").glob("*.pt.trace.json*"))
    thread, start, length = _host_events(path)
    _assert_walk_equals_sorts(*_sorted_events(thread, start, length))


def _random_events(rng, n, threads, grid):
    """Starts on a coarse grid (many ties), stacks built by nesting each
    event in a random open one, some children overrunning their parent."""
    thread = rng.integers(0, threads, n)
    start = rng.integers(0, grid, n).astype(np.float64) * 0.5
    length = rng.choice([0.5, 1.0, 3.0, 10.0, 40.0, 1e-4], n) * rng.integers(1, 4, n)
    overrun = rng.random(n) < 0.05
    length[overrun] += 1e-9
    return thread, start, length


@pytest.mark.parametrize("seed", range(40))
def test_random_events_nest_the_same(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    thread, start, length = _random_events(rng, n, threads=int(rng.integers(1, 300)), grid=int(rng.integers(1, 400)))
    _assert_walk_equals_sorts(*_sorted_events(thread, start, length))


def test_deep_stacks_nest_the_same():
    n = 5000
    start = np.arange(n, dtype=np.float64)
    length = 2.0 * (n - np.arange(n))  # each inside the one before: depth n - 1
    thread = np.zeros(n, np.int64)
    s, e, t = _sorted_events(thread, start, length)
    _assert_walk_equals_sorts(s, e, t)
    assert nesting.sorted_links(s, e, t)[0].max() == n - 1


@pytest.mark.parametrize("case", ["end_at_start", "nan_start", "starts_out_of_order"])
def test_the_walk_declines_what_it_cannot_match(case):
    s = np.array([0.0, 1.0, 2.0, 3.0])
    e = np.array([10.0, 5.0, 3.0, 4.0])
    t = np.zeros(4, np.int64)
    if case == "end_at_start":
        s[2] = e[2] = 1e15  # a zero length rounded away at a large start
        s[3], e[3] = 1e15 + 1, 1e15 + 2
    elif case == "nan_start":
        s[1] = np.nan
    else:
        s[1], s[2] = s[2], s[1]
    assert nesting._walk(s, e, t) is None
    depth, parent = nesting.sorted_links(s, e, t)  # the sorts answer
    assert len(depth) == len(parent) == 4


def test_arrays_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="one length"):
        nesting._walk(np.zeros(3), np.ones(2), np.zeros(3, np.int64))


def test_an_event_after_its_counted_parent_ended_nests_in_the_one_still_open():
    """A [0, 43.2] holds B [10, 50], which outlasts it; C [47.6, 48] starts after A ended, inside B,
    and D [47.7, 47.8] inside C (the demo's `_begin_request`, a Python frame overrunning it, and
    `<built-in function next>`). A stack gives C the parent B, never the ended A."""
    thread = np.zeros(4, np.int64)
    ts = np.array([0.0, 10.0, 47.6, 47.7])
    dur = np.array([43.2, 40.0, 0.4, 0.1])
    parent, depth = nesting.nest(thread, ts, dur, np.arange(4))
    assert parent.tolist() == [-1, 0, 1, 2]
    assert depth.tolist() == [0, 1, 2, 3]
    # Random events overrunning each other: a parent is always on the thread, starts no later than
    # its child and is still open when the child starts; an event with an open earlier event has one.
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(2, 400))
        thread = rng.integers(0, 3, n)
        ts = rng.integers(0, 200, n).astype(np.float64)
        dur = rng.choice([1.0, 5.0, 20.0, 60.0], n)
        got, depth = nesting.nest(thread, ts, dur, np.arange(n))
        for i, p in enumerate(got.tolist()):
            open_before = [j for j in range(n) if j != i and thread[j] == thread[i]
                           and (ts[j], -dur[j], j) < (ts[i], -dur[i], i) and ts[j] + dur[j] > ts[i]]
            if p < 0:
                assert not open_before, (i, open_before)
                assert depth[i] == 0
            else:
                assert p in open_before, (i, p)
                assert depth[i] == depth[p] + 1


def test_the_compiled_open_parent_walk_answers_as_the_scan():
    """`_nest.c:open_parents` (one stack walk) against the scan back it replaces, on random overrunning
    events of several threads, every position asked; and a million events each overrunning the one
    before (every counted parent ended) nest in a second, where the scan would take minutes."""
    assert nesting._open_walk is not None
    rng = np.random.default_rng(11)
    for _ in range(40):
        n = int(rng.integers(1, 500))
        t = np.sort(rng.integers(0, 4, n))
        s = np.concatenate([np.sort(rng.integers(0, 300, int((t == k).sum())).astype(np.float64)) for k in range(4)])
        e = s + rng.choice([0.5, 3.0, 17.0, 80.0], n)
        asked = np.sort(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
        assert (nesting.open_parent_positions(s, e, t, asked)
                == nesting.scan_open_parents(s, e, t, asked)).all()
    with pytest.raises(ValueError):
        nesting._open_walk(np.zeros(3), np.ones(3), np.zeros(3, np.int64), np.array([2, 1], np.int64))
    # A chain: each event starts inside the one before and outlasts it.
    n = 1_000_000
    ts = np.arange(n, dtype=np.float64)
    parent, depth = nesting.nest(np.zeros(n, np.int64), ts, np.full(n, 1.5), np.arange(n))
    assert parent[1:].tolist() == list(range(n - 1)) and parent[0] == -1
    assert depth.tolist() == list(range(n))


def test_the_compiled_ancestor_count_equals_pointer_doubling():
    """`_nest.c:ancestor_counts` (one pass, parents before children) against
    the pointer doubling it replaces, on random forests and a deep chain; a
    parent after its child is declined and counted by doubling."""
    assert nesting._count_walk is not None
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 1000, 50_000):
        parent = np.array([int(rng.integers(-1, i)) if i else -1 for i in range(n)], np.int64)
        assert (nesting.ancestor_counts(parent) == nesting.doubled_ancestor_counts(parent)).all()
    chain = np.arange(-1, 99_999, dtype=np.int64)
    assert nesting.ancestor_counts(chain).tolist() == list(range(100_000))
    backwards = np.array([1, 2, -1], np.int64)  # 0 -> 1 -> 2: parents after their children
    assert nesting._count_walk(backwards) is None
    assert nesting.ancestor_counts(backwards).tolist() == [2, 1, 0]


def test_the_compiled_sum_up_the_tree_equals_the_level_by_level_sums(monkeypatch):
    """`_nest.c:add_up` (link.py:_propagate_up in one loop) gives bit for bit
    the sums of one np.add.at per level (wide levels) and the Python loop
    (narrow ones), on random forests wide and deep, with rows left out."""
    from tb_pipeline_plugin.trace import link as link_module

    assert link_module._add_up is not None
    rng = np.random.default_rng(9)
    for n, width in ((1, 1), (2000, 3), (50_000, 2000), (20_000, 1)):
        parent = np.array([int(rng.integers(max(-1, i - width), i)) if i else -1 for i in range(n)], np.int64)
        depth = nesting.ancestor_counts(parent).astype(np.int32)
        values = rng.random(n) * 10.0 ** rng.integers(-3, 6, n)
        rows = np.sort(rng.choice(n, size=max(1, n * 9 // 10), replace=False)).astype(np.int64)
        parent[np.setdiff1d(np.arange(n), rows)] = -1  # rows left out are nobody's child here
        compiled = link_module._propagate_up(values, parent, depth, rows)
        with monkeypatch.context() as m:
            m.setattr(link_module, "_add_up", None)
            assert compiled.tobytes() == link_module._propagate_up(values, parent, depth, rows).tobytes()
    assert not link_module._add_up(np.zeros(2), np.array([-1, 5], np.int64), np.array([1], np.int64))


def test_device_time_sums_up_chains_shallower_and_deeper_than_a_narrow_sort_key():
    """_propagate_up sorts by depth as int16 when every depth fits, else as it is: either way each event's total
    is its own value plus every descendant's (a chain: the sums from its end), compiled or not."""
    from tb_pipeline_plugin.trace import link as link_module

    rng = np.random.default_rng(3)
    for n in (20_000, 40_000):  # below and above int16's range of depths
        parent = np.arange(-1, n - 1, dtype=np.int64)
        depth = np.arange(n, dtype=np.int32)
        values = rng.random(n)
        expected = np.cumsum(values[::-1])[::-1]
        np.testing.assert_allclose(link_module._propagate_up(values, parent, depth, np.arange(n)), expected, rtol=1e-9)
        saved = link_module._add_up
        link_module._add_up = None
        try:
            np.testing.assert_allclose(link_module._propagate_up(values, parent, depth, np.arange(n)), expected,
                                       rtol=1e-9)
        finally:
            link_module._add_up = saved
