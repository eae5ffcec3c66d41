"""A run recorded in the test with torch.profiler, checked against torch's own
`prof.key_averages()` and against counts taken straight from the trace JSON."""
from __future__ import annotations

import glob
import sys

import pytest
import torch
from conftest import PLUGIN_PREFIX, wait_ready
from support.json_oracle import operator_key_averages

from support.json_oracle import counts_by_name, load_events
from tb_pipeline_plugin.analysis.processor import TraceProcessor


@pytest.fixture(scope="module")
def no_stack_run(tmp_path_factory, repo_root):
    sys.path.insert(0, str(repo_root / "samples"))
    import record_samples

    out = tmp_path_factory.mktemp("no_stack")
    prof = record_samples.record_run(str(out), layers=3, with_stack=False)
    return prof, glob.glob(str(out / "*.pt.trace.json*"))[0]


def _trace_file(logdir, run):
    return glob.glob(str(logdir / run / "*.pt.trace.json*"))[0]


def _check_against_key_averages(prof, path, min_ops=20):
    averages = {e.key: e for e in prof.key_averages()}
    ops = TraceProcessor.load(path).operators("name").set_index("name")
    _, events = load_events(path)
    # The trace JSON with torch's folding rule re-implemented, and torch itself.
    from_json = operator_key_averages(events)
    assert dict(ops["calls"]) == {name: row["calls"] for name, row in from_json.items()}
    checked = 0
    for name, row in ops.iterrows():
        ka = averages[name]
        assert row["calls"] == ka.count, name
        assert row["host_total_us"] == pytest.approx(ka.cpu_time_total, rel=0.01, abs=0.01), name
        assert row["host_self_us"] == pytest.approx(ka.self_cpu_time_total, rel=0.01, abs=0.01), name
        checked += 1
    assert checked >= min_ops
    return ops, events


def test_host_times_match_key_averages_with_stack(recorded_profiles, recorded_logdir):
    _check_against_key_averages(recorded_profiles["baseline"], _trace_file(recorded_logdir, "baseline"))


def test_host_times_match_key_averages_without_stack(no_stack_run):
    _check_against_key_averages(*no_stack_run)


def _same_name_nested_model(steps: int = 3):
    """CPU ops whose dispatch calls an op of the same name: `aten::mul` by a
    Python scalar calls `aten::mul` on a wrapped tensor (its only child, so
    torch folds it), `aten::sum` calls `aten::sum` the same way;
    `aten::where` with a scalar nests an `aten::where` beside other children
    (not folded)."""
    torch.manual_seed(0)
    x = torch.randn(64, 64, requires_grad=True)
    for _ in range(steps):
        y = (x / 2.0).add(1).mul(3).sub(1)
        y = torch.where(y > 0, y, 0.0)
        y.pow(2).sum().backward()


def test_same_name_nested_operators_match_key_averages(tmp_path, make_tb_client):
    run = tmp_path / "nested"
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        on_trace_ready=torch.profiler.tensorboard_trace_handler(str(run)),
    ) as prof:
        _same_name_nested_model()
    ops, events = _check_against_key_averages(prof, _trace_file(tmp_path, "nested"), min_ops=10)
    in_file = counts_by_name(events, ("cpu_op",))
    # The model does nest same-name operators, folded or not.
    assert ops.loc["aten::mul", "calls"] < in_file["aten::mul"]
    assert ops.loc["aten::sum", "calls"] < in_file["aten::sum"]
    assert ops.loc["aten::where", "calls"] == in_file["aten::where"]
    # The same numbers through the plugin's route.
    client = make_tb_client(tmp_path)
    assert wait_ready(client, "nested")["status"] == "ready"
    rows = client.get(f"{PLUGIN_PREFIX}/operators?run=nested").get_json()["rows"]
    averages = {e.key: e for e in prof.key_averages()}
    for row in rows:
        ka = averages[row["name"]]
        assert row["calls"] == ka.count, row["name"]
        assert row["host_self_us"] == pytest.approx(ka.self_cpu_time_total, rel=0.01, abs=0.01), row["name"]


def test_steps_dataloader_and_memory(recorded_logdir):
    path = _trace_file(recorded_logdir, "slow_loader")
    tp = TraceProcessor.load(path)
    ov = tp.overview()
    _, events = load_events(path)
    steps = sorted(e["name"] for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    assert sorted(s["name"] for s in ov["steps"]) == steps
    assert ov["device"]["type"] == "CPU" and ov["gpu_utilization_pct"] is None
    # 20 ms sleep per batch in the loader: data loading must show it.
    assert ov["breakdown_us"]["data_loading"] >= 20000
    step_events = [e for e in events if e.get("name") in steps]
    t0 = min(e["ts"] for e in step_events)
    t1 = max(e["ts"] + e["dur"] for e in step_events)
    mem = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    before = [e["args"]["Total Allocated"] for e in mem if e["ts"] <= t0][-1:]
    inside = [e["args"]["Total Allocated"] for e in mem if t0 <= e["ts"] <= t1]
    assert ov["memory"]["peak_bytes"] == max(before + inside)
    assert ov["memory"]["device"] == "CPU"
    assert min(before + inside) <= ov["memory"]["avg_bytes"] <= ov["memory"]["peak_bytes"]


def test_module_tree_matches_the_model(recorded_logdir):
    tp = TraceProcessor.load(_trace_file(recorded_logdir, "experimental"))
    roots = tp.modules()
    assert [r["module_class"] for r in roots] == ["Net", "CrossEntropyLoss"]
    net = roots[0]
    assert [c["name"] for c in net["children"]] == ["Linear_0", "Sequential_0", "Linear_6"]
    blocks = next(c for c in net["children"] if c["module_class"] == "Sequential")["children"]
    assert [b["module_class"] for b in blocks] == ["Block"] * 5
    steps = len(tp.overview()["steps"])
    assert all(b["calls"] == steps for b in blocks)
    # Totals are consistent: a parent's time covers its children's.
    assert net["host_total_us"] >= sum(c["host_total_us"] for c in net["children"])
