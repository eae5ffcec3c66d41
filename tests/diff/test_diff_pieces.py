"""Pieces and their alignment on real traces recorded with torch.profiler.

Oracles come straight from the trace JSON (events, durations, counts) and
from `prof.key_averages()`, never from the plugin's own parsing.
"""
from __future__ import annotations

import glob
import json

import pytest

from support.json_oracle import load_events
from support import diff_calls as api
from tb_pipeline_plugin.diff import tree as M
from tb_pipeline_plugin.analysis import pieces as P
from tb_pipeline_plugin.analysis.processor import TraceProcessor

PROFILED_STEPS = 3  # record_run's active_steps default
EVALUATE = "autograd::engine::evaluate_function: "


def trace_file(run_dir) -> str:
    (path,) = glob.glob(str(run_dir / "*.pt.trace.json*"))
    return path


@pytest.fixture(scope="module")
def runs(recorded_logdir):
    """Run name -> (TraceProcessor, JSON events) of the session's recordings."""
    out = {}
    for name in ("baseline", "experimental", "slow_loader"):
        path = trace_file(recorded_logdir / name)
        out[name] = (TraceProcessor.load(path), load_events(path)[1])
    return out


def x_events(events, cat=None, tid=None):
    return [e for e in events if e.get("ph") == "X" and (cat is None or e.get("cat") == cat)
            and (tid is None or e.get("tid") == tid)]


def inside(e, start, end):
    return start <= e["ts"] < end


def step_events(events):
    return sorted((e for e in x_events(events, "user_annotation") if e["name"].startswith("ProfilerStep#")),
                  key=lambda e: e["ts"])


def all_rows(b: TraceProcessor, e: TraceProcessor) -> list[dict]:
    return list(M.walk(api.piece_index(b), api.piece_index(e)))


# ------------------------------------------------------------ one trace


def test_step_pieces_are_the_trace_events(runs):
    tp, events = runs["baseline"]
    index = api.piece_index(tp)
    steps = P.steps(index)
    json_steps = step_events(events)
    assert [s.name for s in steps] == [e["name"] for e in json_steps]
    ops = x_events(events, "cpu_op")
    for step, js in zip(steps, json_steps):
        start, end = js["ts"], js["ts"] + js["dur"]
        assert step.host_us == pytest.approx(js["dur"], abs=1e-3)
        assert step.calls == sum(inside(e, start, end) for e in ops)
        kids = P.children(index, step)
        assert kids[-1].kind == P.UNKNOWN
        by_kind = {}
        for k in kids:
            by_kind.setdefault(k.kind, []).append(k)
        # DataLoader and optimizer annotations of this step, with their durations.
        for kind, prefix in ((P.DATA_LOADING, "enumerate(DataLoader)#"), (P.OPTIMIZER, "Optimizer.")):
            want = sorted((e["name"], e["dur"]) for e in x_events(events, "user_annotation")
                          if e["name"].startswith(prefix) and inside(e, start, end))
            got = sorted((k.name, k.host_us) for k in by_kind[kind])
            assert [n for n, _ in got] == [n for n, _ in want]
            assert [d for _, d in got] == pytest.approx([d for _, d in want], abs=1e-3)
        # Top-level module calls: the model and the loss.
        modules = [e for e in x_events(events, "python_function")
                   if e["name"].startswith("nn.Module: ") and inside(e, start, end)]
        top = [e for e in modules if not any(o is not e and o["ts"] <= e["ts"] and e["ts"] + e["dur"] <= o["ts"] + o["dur"]
                                             for o in modules)]
        assert [k.name for k in by_kind[P.MODULE]] == [e["name"][len("nn.Module: "):] for e in sorted(top, key=lambda e: e["ts"])]
        assert [k.host_us for k in by_kind[P.MODULE]] == pytest.approx([e["dur"] for e in sorted(top, key=lambda e: e["ts"])], abs=1e-3)
        # Children partition the step: time and operator calls add up exactly.
        assert sum(k.host_us for k in kids) == pytest.approx(step.host_us, abs=1e-3)
        assert sum(k.calls for k in kids) == step.calls


def test_backward_piece_covers_every_autograd_node_of_the_step(runs):
    tp, events = runs["baseline"]
    index = api.piece_index(tp)
    flow_ends = [e for e in events if e.get("ph") == "f" and e.get("cat") == "fwdbwd"]
    for step, js in zip(P.steps(index), step_events(events)):
        start, end = js["ts"], js["ts"] + js["dur"]
        (bwd,) = [k for k in P.children(index, step) if k.kind == P.BACKWARD]
        nodes = [e for e in x_events(events, "cpu_op") if e["name"].startswith(EVALUATE) and inside(e, start, end)]
        assert any("AccumulateGrad" in e["name"] for e in nodes)  # nodes without a fwdbwd flow count too
        assert bwd.start_us == pytest.approx(min(e["ts"] for e in nodes), abs=1e-3)
        assert bwd.end_us == pytest.approx(max(e["ts"] + e["dur"] for e in nodes), abs=1e-3)
        targets = [f for f in flow_ends if inside(f, start, end)]
        assert targets and all(bwd.start_us - 1e-3 <= f["ts"] <= bwd.end_us for f in targets)
        ops_in = [e for e in x_events(events, "cpu_op") if inside(e, bwd.start_us, bwd.end_us)]
        assert bwd.calls == len(ops_in)


def test_module_children_are_submodule_calls_plus_own_time(runs):
    tp, events = runs["experimental"]
    index = api.piece_index(tp)
    step = P.steps(index)[0]
    net = next(k for k in P.children(index, step) if k.name == "Net_0")
    kids = P.children(index, net)
    assert [k.name for k in kids] == ["Linear_0", "Sequential_0", "Linear_6", P.UNKNOWN_NAME]
    seq = P.children(index, kids[1])
    assert [k.key for k in seq[:-1]] == ["Block"] * 5
    leaf = P.children(index, seq[0])
    assert [k.name for k in leaf] == ["Linear_1", "ReLU_0", P.UNKNOWN_NAME]
    assert P.children(index, leaf[0]) == []  # Linear has no submodules
    assert not index.has_children(leaf[0])
    # The unknown piece is the module's own time; the operators inside it are
    # those not inside any submodule.
    unknown = kids[-1]
    assert unknown.host_us == pytest.approx(net.host_us - sum(k.host_us for k in kids[:-1]), abs=1e-3)
    assert net.calls == sum(k.calls for k in kids)
    linear_event = next(e for e in x_events(events, "python_function") if e["name"] == "nn.Module: Linear_1"
                        and inside(e, step.start_us, step.end_us))
    ops = [e for e in x_events(events, "cpu_op") if inside(e, linear_event["ts"], linear_event["ts"] + linear_event["dur"])]
    assert leaf[0].calls == len(ops)
    assert sorted(tp.table.strings[i] for i in tp.table.name_id[P.op_rows(index, leaf[0])]) == sorted(e["name"] for e in ops)


def test_piece_index_is_memoised(runs):
    tp, _ = runs["baseline"]
    assert api.piece_index(tp) is api.piece_index(tp)


def _path_of(b, e, *names):
    path = ""
    for name in names:
        path = next(c["path"] for c in api.diff_modules_impl(b, e, path)["children"] if c["name"] == name)
    return path


def test_aligned_children_are_memoised_per_pair_and_path(runs, monkeypatch):
    # Fresh processors over the same tables: nothing memoised yet.
    b = TraceProcessor(runs["baseline"][0].table)
    e = TraceProcessor(runs["experimental"][0].table)
    seq = _path_of(b, e, "ProfilerStep#2", "Net_0", "Sequential_0")
    aligned = []
    real = M.align_info
    monkeypatch.setattr(M, "align_info", lambda *args: aligned.append(args) or real(*args))
    bi, ei = api.piece_index(b), api.piece_index(e)
    before = M.cache_info(bi, ei)
    first = api.diff_modules_impl(b, e, seq)
    # The levels above were aligned while finding the path: only Sequential_0's own children are new.
    assert len(aligned) == 1
    node = M.resolve(bi, ei, seq)[-1]
    kids = M.children(bi, ei, node)
    again = M.children(bi, ei, node)
    assert again == kids and again is not kids  # callers get their own list
    # Zooming back, the piece's operator and kernel tables: no alignment at all.
    assert api.diff_modules_impl(b, e, seq) == first
    api.diff_modules_impl(b, e, _path_of(b, e, "ProfilerStep#2"))
    api.diff_operators_impl(b, e, {"path": seq})
    api.diff_kernels_impl(b, e, {"path": seq})
    assert len(aligned) == 1
    info = M.cache_info(bi, ei)
    assert info["hits"] >= before["hits"] + 8 and info["misses"] == before["misses"] + 1
    # The other direction is another pair, with its own memo.
    api.diff_modules_impl(e, b, "0")
    assert len(aligned) == 2


# ------------------------------------------------------------ a run without steps


@pytest.fixture(scope="module")
def no_steps(recorded_logdir, tmp_path_factory):
    """The baseline recording with its ProfilerStep#N events removed."""
    with open(trace_file(recorded_logdir / "baseline")) as f:
        data = json.load(f)
    kept = [ev for ev in data["traceEvents"] if not str(ev.get("name", "")).startswith("ProfilerStep#")]
    assert len(kept) == len(data["traceEvents"]) - PROFILED_STEPS
    data["traceEvents"] = kept
    out = tmp_path_factory.mktemp("no_steps") / "worker.1.pt.trace.json"
    out.write_text(json.dumps(data))
    return TraceProcessor.load(str(out))


@pytest.mark.parametrize("stepped", ["experimental", "baseline"])
def test_run_without_steps_is_compared_as_one_window(runs, no_steps, stepped):
    """One side has no ProfilerStep annotations (its one step, `all`, is the
    whole trace): the other side's steps become one `all` window, never step 0."""
    tp, events = runs["baseline"]
    b, e = (no_steps, tp) if stepped == "experimental" else (tp, no_steps)
    other = "baseline" if stepped == "experimental" else "experimental"
    assert list(no_steps.linked.steps.row) == [-1] and not api.piece_index(no_steps).has_steps
    json_steps = step_events(events)
    start, end = json_steps[0]["ts"], max(ev["ts"] + ev["dur"] for ev in json_steps)

    root = api.diff_modules_impl(b, e, "")
    (step,) = root["children"]
    assert step["name"] == step["baseline_name"] == step["experimental_name"] == "all"
    assert step["status"] == M.MATCHED and step["step"] == 0
    assert "no ProfilerStep annotations" in step["note"] and root["node"]["note"] == step["note"]
    assert step[f"{stepped}_host_us"] == pytest.approx(end - start, abs=1e-2)
    assert step[f"{stepped}_calls"] == sum(inside(ev, start, end) for ev in x_events(events, "cpu_op"))
    assert step[f"{other}_host_us"] >= step[f"{stepped}_host_us"]  # the whole trace
    for what in ("host_us", "calls"):
        for side in ("baseline", "experimental"):
            assert root["node"][f"{side}_{what}"] == pytest.approx(step[f"{side}_{what}"], abs=1e-2)

    # Inside: every step's pieces, aligned over the whole window. Both sides
    # hold the same events, so each piece matches its twin with no delta;
    # only the unknown time differs (trace vs window).
    level = api.diff_modules_impl(b, e, step["path"])
    kids = level["children"]
    assert [k["name"] for k in level["breadcrumb"]] == ["All steps", "all"]
    assert all(k["status"] == M.MATCHED and k["step"] == 0 and k["note"] is None for k in kids)
    assert kids[-1]["kind"] == "unknown"
    for k in kids[:-1]:
        assert k["delta_host_us"] == 0 and k["delta_calls"] == 0 and k["baseline_name"] == k["experimental_name"]
    want = [ev["dur"] for ev in sorted(x_events(events, "user_annotation"), key=lambda ev: ev["ts"])
            if ev["name"].startswith("enumerate(DataLoader)#") and inside(ev, start, end)]
    assert [k[f"{stepped}_host_us"] for k in kids if k["kind"] == "data_loading"] == pytest.approx(want, abs=1e-3)
    assert len(want) == PROFILED_STEPS
    assert [k["name"] for k in kids].count("Net_0") == PROFILED_STEPS
    for side in ("baseline", "experimental"):
        assert sum(k[f"{side}_host_us"] for k in kids) == pytest.approx(level["node"][f"{side}_host_us"], abs=1e-2)
        assert sum(k[f"{side}_calls"] for k in kids) == level["node"][f"{side}_calls"]

    # Zooming below the merged step works as anywhere else.
    net = next(k for k in kids if k["name"] == "Net_0")
    sub = api.diff_modules_impl(b, e, net["path"])
    assert [c["name"] for c in sub["children"]] == ["Linear_0", "Sequential_0", "Linear_5", P.UNKNOWN_NAME]
    assert all(c["status"] == M.MATCHED and c["delta_calls"] == 0 for c in sub["children"])
    ops = api.diff_operators_impl(b, e, {"path": step["path"], "limit": "10000"})
    assert sum(r[f"{stepped}_calls"] for r in ops["rows"]) == step[f"{stepped}_calls"]


def test_runs_without_steps_on_both_sides_need_no_note(no_steps):
    root = api.diff_modules_impl(no_steps, no_steps, "")
    assert root["node"]["note"] is None and [c["name"] for c in root["children"]] == ["all"]
    assert all(c["delta_host_us"] == 0 for c in api.diff_modules_impl(no_steps, no_steps, "0")["children"])


# ------------------------------------------------------------ acceptance


def test_added_layer_is_the_only_unmatched_piece(runs, recorded_profiles):
    """(a) experimental = baseline + one Block."""
    b, _ = runs["baseline"]
    e, _ = runs["experimental"]
    rows = all_rows(b, e)
    unmatched = [r for r in rows if r["status"] != M.MATCHED]
    # The extra Block and, beneath it, its Linear, ReLU and own time, in each step.
    extra = [r for r in unmatched if r["kind"] == "module" and r["key"] == "Block"]
    assert len(extra) == PROFILED_STEPS
    assert all(r["status"] == M.EXPERIMENTAL_ONLY for r in unmatched)
    for r in unmatched:
        assert any(r["path"].startswith(x["path"]) for x in extra), r
    assert all(x["experimental_name"] == "Block_4" for x in extra)
    for x in extra:
        assert x["baseline_host_us"] == 0 and x["experimental_host_us"] > 0 and x["baseline_calls"] == 0
    # Every other module piece is matched, Block_k with Block_k.
    matched_modules = [r for r in rows if r["kind"] == "module" and r["status"] == M.MATCHED]
    assert len(matched_modules) == PROFILED_STEPS * (2 + 3 + 4 * 3)  # Net, Loss; Linear, Sequential, Linear; 4 x (Block, Linear, ReLU)
    assert all(r["baseline_name"] == r["experimental_name"] for r in matched_modules if r["key"] == "Block")

    # The extra layer's aten::linear calls, times the profiled steps, are the
    # whole-trace delta, which is also what key_averages() says.
    per_step = []
    for x in extra:
        linear = api.diff_operators_impl(b, e, {"path": x["path"], "filter": "aten::linear"})["rows"]
        (row,) = [r for r in linear if r["name"] == "aten::linear"]
        assert row["baseline_calls"] == 0
        per_step.append(row["experimental_calls"])
    assert per_step == [1] * PROFILED_STEPS
    whole = api.diff_operators_impl(b, e, {"filter": "aten::linear"})["rows"]
    (row,) = [r for r in whole if r["name"] == "aten::linear"]

    def count(name, run):
        return sum(ev.count for ev in recorded_profiles[run].key_averages() if ev.key == name)

    assert row["delta_calls"] == sum(per_step) == count("aten::linear", "experimental") - count("aten::linear", "baseline")


def test_removed_layer_is_baseline_only(runs):
    e, _ = runs["experimental"]
    b, _ = runs["baseline"]
    rows = all_rows(e, b)  # roles swapped: the Block disappears
    extra = [r for r in rows if r["status"] != M.MATCHED and r["kind"] == "module" and r["key"] == "Block"]
    assert len(extra) == PROFILED_STEPS and all(r["status"] == M.BASELINE_ONLY for r in extra)
    assert all(r["status"] == M.MATCHED for r in rows if r["key"] != "Block" and not any(r["path"].startswith(x["path"]) for x in extra))


def test_slow_loader_delta_is_in_the_data_loading_piece(runs):
    """(b) same model, DataLoader 20 ms slower per batch."""
    b, _ = runs["baseline"]
    e, _ = runs["slow_loader"]
    rows = all_rows(b, e)
    assert all(r["status"] == M.MATCHED for r in rows)
    data = [r for r in rows if r["kind"] == "data_loading"]
    assert len(data) == PROFILED_STEPS
    for r in data:
        # time.sleep(0.02) is a floor: the slow fetch takes >= 20 ms.
        assert r["experimental_host_us"] >= 20000
        assert r["delta_host_us"] > 18000 and r["delta_host_pct"] > 500
    loader_delta = {r["step"]: r["delta_host_us"] for r in data}
    modules = [r for r in rows if r["kind"] == "module"]
    assert len([r for r in modules if r["depth"] == 2]) == 2 * PROFILED_STEPS
    for r in modules:
        # Same work on both sides: no call changes, and timing noise only --
        # relative noise is large on µs-long modules (a cold cache after the
        # sleep), so it is bounded against the loader's delta, not in %.
        assert r["delta_calls"] == 0
        assert abs(r["delta_host_us"]) < 0.5 * loader_delta[r["step"]], r


@pytest.mark.parametrize("run", ["baseline", "experimental"])
def test_same_trace_on_both_sides_has_zero_deltas(runs, run):
    """(c) baseline = experimental."""
    tp, _ = runs[run]
    rows = all_rows(tp, tp)
    assert rows and all(r["status"] == M.MATCHED for r in rows)
    for r in rows:
        assert r["delta_host_us"] == 0 and r["delta_device_us"] == 0 and r["delta_calls"] == 0
        assert r["delta_host_pct"] in (0, None)
    root = api.diff_modules_impl(tp, tp, "")
    assert all(v == 0 for v in root["trend"]["delta_host_us"])


def test_trend_is_the_running_sum_of_children(runs):
    b, _ = runs["baseline"]
    e, _ = runs["experimental"]
    for path in ("", "0", "0.2"):
        out = api.diff_modules_impl(b, e, path)
        kids, trend = out["children"], out["trend"]
        for side in ("baseline", "experimental"):
            acc = 0.0
            for k, value in zip(kids, trend[f"{side}_host_us"]):
                acc += k[f"{side}_host_us"]
                assert value == pytest.approx(acc, abs=1e-2)
        assert trend["delta_host_us"][-1] == pytest.approx(out["node"]["delta_host_us"], abs=1e-2)
        assert len(trend["baseline_device_us"]) == len(kids)


# ------------------------------------------------------------ other model changes


def _record(out_dir, model, steps=2):
    import torch

    x = torch.randn(8, 16)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(str(out_dir)),
        with_stack=True, with_modules=True,
    ) as prof:
        for _ in range(steps + 1):
            model(x).sum().backward()
            prof.step()
    return TraceProcessor.load(trace_file(out_dir))


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    import torch
    from torch import nn

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("variants")

    def lin():
        return nn.Linear(16, 16)

    models = {
        "base": nn.Sequential(lin(), nn.ReLU(), lin(), nn.ReLU(), lin()),
        "inserted": nn.Sequential(lin(), nn.ReLU(), nn.Tanh(), lin(), nn.ReLU(), lin()),
        "swapped": nn.Sequential(lin(), nn.GELU(), lin(), nn.ReLU(), lin()),
    }
    return {name: _record(root / name, m) for name, m in models.items()}


def _model_children(b, e, step_path="0"):
    out = api.diff_modules_impl(b, e, step_path)
    seq = next(c for c in out["children"] if c["kind"] == "module")
    return api.diff_modules_impl(b, e, seq["path"])["children"]


def test_module_inserted_in_the_middle(variants):
    kids = _model_children(variants["base"], variants["inserted"])
    status = [(k["key"], k["status"]) for k in kids]
    assert status == [("Linear", "matched"), ("ReLU", "matched"), ("Tanh", "experimental_only"),
                      ("Linear", "matched"), ("ReLU", "matched"), ("Linear", "matched"), ("unknown", "matched")]


def test_module_swapped_for_another_class(variants):
    kids = _model_children(variants["base"], variants["swapped"])
    status = [(k["key"], k["status"]) for k in kids]
    assert status == [("Linear", "matched"), ("ReLU", "baseline_only"), ("GELU", "experimental_only"),
                      ("Linear", "matched"), ("ReLU", "matched"), ("Linear", "matched"), ("unknown", "matched")]
    relu_only = kids[1]
    assert relu_only["experimental_host_us"] == 0 and relu_only["delta_host_us"] == -relu_only["baseline_host_us"]
    assert relu_only["delta_host_pct"] == -100.0


def test_bad_paths_are_rejected(runs):
    from tb_pipeline_plugin.errors import BadRequest

    b, _ = runs["baseline"]
    for path in ("x", "0.", "99", "0.99", "0.-1", "1e3", "٣"):
        with pytest.raises(BadRequest):
            api.diff_modules_impl(b, b, path)
    leaf = api.diff_modules_impl(b, b, "0.0")  # the DataLoader piece: nothing below
    assert leaf["children"] == [] and leaf["node"]["has_children"] is False
