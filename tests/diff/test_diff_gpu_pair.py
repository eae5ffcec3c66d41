"""The real GPU pair HTA ships for its TraceDiff (A100 control vs V100 test):
every diff view answers, and its numbers match sums computed straight from
the two JSON files."""
from __future__ import annotations

import collections

import pytest
from support.json_oracle import torch_operator_events

from support.json_oracle import kernels_by_name, load_events
from support import diff_calls as api
from tb_pipeline_plugin.diff import tree as M
from tb_pipeline_plugin.analysis import pieces as P
from tb_pipeline_plugin.analysis.processor import TraceProcessor

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@pytest.fixture(scope="module")
def pair(shared_traces):
    out = {}
    for side in ("control", "test"):
        path = shared_traces / "trace_diff" / f"{side}.json.gz"
        out[side] = (TraceProcessor.load(str(path)), load_events(path)[1])
    return out


def test_every_diff_view_answers(pair):
    b, e = pair["control"][0], pair["test"][0]
    rows = api.diff_overview_impl(b, e)["rows"]
    assert [r["metric"] for r in rows][:5] == ["device", "device_count", "device_memory_bytes", "steps", "avg_step_time_us"]
    device = rows[0]
    assert (device["baseline"], device["experimental"]) == ("NVIDIA A100-PG509-200", "Tesla V100-SXM2-16GB")
    steps = next(r for r in rows if r["metric"] == "steps")
    assert steps["baseline"] == steps["experimental"] == 6
    tree = list(M.walk(api.piece_index(b), api.piece_index(e)))
    assert len(tree) > 100
    assert {r["kind"] for r in tree} >= {"step", "annotation", "backward", "optimizer", "data_loading", "unknown"}
    for group_by in ("name", "name_and_shape"):
        ops = api.diff_operators_impl(b, e, {"group_by": group_by, "limit": "10000"})
        assert ops["primary"] == "device_self_us" and ops["total"] == len(ops["rows"]) > 100
    assert api.diff_kernels_impl(b, e, {})["total"] > 50


def test_kernel_diff_leads_with_the_largest_device_time_delta(pair):
    b, b_events = pair["control"]
    e, e_events = pair["test"]
    # Kernels launched before the profiled window are one row of their own (HTA's trace_diff traces have some).
    b_sum = kernels_by_name(b_events)[1]
    e_sum = kernels_by_name(e_events)[1]
    delta = {name: e_sum.get(name, 0.0) - b_sum.get(name, 0.0) for name in set(b_sum) | set(e_sum)}
    ranked = sorted(delta, key=lambda n: -abs(delta[n]))
    assert abs(delta[ranked[0]]) > abs(delta[ranked[1]])  # an unambiguous leader
    out = api.diff_kernels_impl(b, e, {})
    first = out["rows"][0]
    assert out["sort"] == "delta_total_us" and out["order"] == "desc"
    assert first["name"] == ranked[0]
    assert first["baseline_total_us"] == pytest.approx(b_sum.get(first["name"], 0.0))
    assert first["experimental_total_us"] == pytest.approx(e_sum.get(first["name"], 0.0))
    assert first["delta_total_us"] == pytest.approx(delta[ranked[0]])
    # Kernels of one side only are kept, with 0 calls on the other.
    names = {r["name"] for r in api.diff_kernels_impl(b, e, {"limit": "10000"})["rows"]}
    assert names == set(b_sum) | set(e_sum)
    only_test = next(n for n in ranked if n not in b_sum)
    row = api.diff_kernels_impl(b, e, {"filter": only_test, "limit": "10000"})["rows"]
    row = next(r for r in row if r["name"] == only_test)
    assert row["baseline_calls"] == 0 and row["delta_total_pct"] is None


def _launches(events):
    """correlation -> launching runtime event."""
    return {(ev.get("args") or {}).get("correlation"): ev for ev in events
            if ev.get("ph") == "X" and ev.get("cat") == "cuda_runtime"}


def test_backward_runs_on_the_autograd_thread(pair):
    tp, events = pair["control"]
    index = api.piece_index(tp)
    main_tid, autograd_tid = 3113936, 3126441
    assert tp.table.threads[index.step_thread][1] == main_tid
    assert [tp.table.threads[t][1] for t in index.autograd_threads] == [autograd_tid]
    launches = _launches(events)
    device = [ev for ev in events if ev.get("ph") == "X" and ev.get("cat") in DEVICE_CATS]
    counted_ops = torch_operator_events(events)
    for step in P.steps(index):
        kids = P.children(index, step)
        ann = next(k for k in kids if k.name == "## backward ##")
        (bwd,) = [k for k in P.children(index, ann) if k.kind == P.BACKWARD]
        # The backward piece spans the autograd thread's work inside the annotation.
        work = [ev for ev in events if ev.get("ph") == "X" and ev.get("tid") == autograd_tid
                and ann.start_us <= ev["ts"] < ann.end_us]
        assert bwd.start_us == min(ev["ts"] for ev in work)
        assert bwd.end_us == max(ev["ts"] + ev["dur"] for ev in work)
        # Operators of both region threads inside it (the step thread only
        # waits then, apart from a few bookkeeping ops).
        # (Counted as torch counts them: an operator folded into a same-name parent is one call.)
        assert bwd.calls == sum(1 for ev in counted_ops if ev.get("tid") in (main_tid, autograd_tid)
                                and bwd.start_us <= ev["ts"] < bwd.end_us)
        assert bwd.calls >= sum(1 for ev in counted_ops if ev.get("tid") == autograd_tid
                                and ann.start_us <= ev["ts"] < ann.end_us)
        # Its device time: everything launched from the region threads inside it.
        want = sum(ev["dur"] for ev in device
                   if (launch := launches.get((ev.get("args") or {}).get("correlation"))) is not None
                   and launch["tid"] in (main_tid, autograd_tid) and bwd.start_us <= launch["ts"] < bwd.end_us)
        assert bwd.device_us == pytest.approx(want)
        assert bwd.device_us > 0.9 * ann.device_us


def test_kernels_inside_a_piece(pair):
    """diff/kernels?path=: the kernels launched from the region threads
    inside the piece, per name, as the JSON says."""
    b, b_events = pair["control"]
    e, e_events = pair["test"]
    step = next(c for c in api.diff_modules_impl(b, e, "")["children"] if c["step"] == 1)
    ann = next(c for c in api.diff_modules_impl(b, e, step["path"])["children"] if c["name"] == "## backward ##")
    out = api.diff_kernels_impl(b, e, {"path": ann["path"], "limit": "10000"})
    assert out["path"] == ann["path"] and 0 < out["total"] <= api.diff_kernels_impl(b, e, {})["total"]
    for tp, events, side in ((b, b_events, "baseline"), (e, e_events, "experimental")):
        index = api.piece_index(tp)
        node = M.resolve(api.piece_index(b), api.piece_index(e), ann["path"])[-1]
        piece = node.b if side == "baseline" else node.e
        tids = {tp.table.threads[t][1] for t in [index.step_thread, *index.autograd_threads]}
        launches = _launches(events)
        want = collections.defaultdict(float)
        for ev in events:
            launch = launches.get((ev.get("args") or {}).get("correlation"))
            if (ev.get("ph") == "X" and ev.get("cat") == "kernel" and launch is not None and launch["tid"] in tids
                    and piece.start_us <= launch["ts"] < piece.end_us):
                want[ev["name"]] += ev["dur"]
        got = {r["name"]: r[f"{side}_total_us"] for r in out["rows"] if r[f"{side}_calls"]}
        assert got.keys() == want.keys()
        assert [got[n] for n in sorted(got)] == pytest.approx([want[n] for n in sorted(want)], abs=1e-2)
        # The piece's device time is those kernels plus its memcpy / memset.
        assert sum(got.values()) <= ann[f"{side}_device_us"] + 1e-2
    # The root path is the whole trace; an unknown path is a bad request.
    assert api.diff_kernels_impl(b, e, {"path": ""})["total"] == api.diff_kernels_impl(b, e, {})["total"]
    from tb_pipeline_plugin.errors import BadRequest

    for args in ({"path": "0.99"}, {"group_by": "launch"}, {"group_by": "name_and_shape"}):
        with pytest.raises(BadRequest):
            api.diff_kernels_impl(b, e, args)


def test_step_pieces_add_up(pair):
    for side in ("control", "test"):
        tp, events = pair[side]
        index = api.piece_index(tp)
        # A step piece is its annotation's own window, even where the step
        # list clips a step's start to the previous step's device end.
        json_steps = sorted((ev for ev in events if ev.get("ph") == "X" and ev.get("cat") == "user_annotation"
                             and ev["name"].startswith("ProfilerStep#")), key=lambda ev: ev["ts"])
        steps = P.steps(index)
        assert [s.name for s in steps] == [ev["name"] for ev in json_steps]
        assert [s.host_us for s in steps] == pytest.approx([ev["dur"] for ev in json_steps], abs=1e-3)
        for step in steps:
            kids = P.children(index, step)
            assert sum(k.host_us for k in kids) == pytest.approx(step.host_us)
            assert sum(k.device_us for k in kids) == pytest.approx(step.device_us)
            assert sum(k.calls for k in kids) == step.calls
            names = collections.Counter(k.name for k in kids)
            assert names["## forward ##"] == names["## backward ##"] == names["## optimizer ##"] == 1


def test_same_gpu_trace_on_both_sides(pair):
    tp = pair["test"][0]
    ops = api.diff_operators_impl(tp, tp, {"limit": "10000"})
    assert all(r["delta_calls"] == 0 and r["delta_device_self_us"] == 0 for r in ops["rows"])
    rows = api.diff_overview_impl(tp, tp)["rows"]
    assert all(r["delta"] in (0, None) for r in rows)
    assert all(r["status"] == "matched" and r["delta_device_us"] == 0 for r in M.walk(api.piece_index(tp), api.piece_index(tp), max_depth=3))
