"""diff/* routes through the real TensorBoard WSGI app (the same dispatcher
`tensorboard --logdir` serves), on recorded runs and the HTA GPU pair."""
from __future__ import annotations

import glob
import shutil
import time

import pytest

from conftest import PLUGIN_PREFIX, wait_ready
from support.json_oracle import duration_by_name, kernels_by_name, load_events

RUNS = ("baseline", "experimental", "slow_loader", "gpu_control", "gpu_test", "two_workers")


def trace_file(run_dir) -> str:
    (path,) = glob.glob(str(run_dir / "*.pt.trace.json*"))
    return path


@pytest.fixture(scope="module")
def logdir(tmp_path_factory, recorded_logdir, shared_traces):
    root = tmp_path_factory.mktemp("diff_routes")
    for run in ("baseline", "experimental", "slow_loader"):
        shutil.copytree(recorded_logdir / run, root / run)
    for side in ("control", "test"):
        (root / f"gpu_{side}").mkdir()
        shutil.copy(shared_traces / "trace_diff" / f"{side}.json.gz", root / f"gpu_{side}" / f"rank3.1.pt.trace.json.gz")
    (root / "two_workers").mkdir()
    shutil.copy(trace_file(recorded_logdir / "baseline"), root / "two_workers" / "alpha.1.pt.trace.json")
    shutil.copy(trace_file(recorded_logdir / "experimental"), root / "two_workers" / "beta.1.pt.trace.json")
    return root


@pytest.fixture(scope="module")
def client(logdir):
    from werkzeug.test import Client

    from conftest import build_tb_app

    app, plugin = build_tb_app(logdir)
    c = Client(app)
    for run in RUNS:
        assert wait_ready(c, run, timeout=120)["status"] == "ready"
    yield c
    plugin.close()


def get(client, route, status=200, **params):
    # A worker other than the run's default loads on first request: 409, retry.
    deadline = time.monotonic() + 60
    while True:
        resp = client.get(f"{PLUGIN_PREFIX}/{route}", query_string=params)
        if resp.status_code != 409 or status == 409 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert resp.status_code == status, resp.get_data(as_text=True)
    assert resp.headers["Content-Type"].startswith("application/json")
    return resp.get_json()


def pair(b="baseline", e="experimental", **extra):
    return {"baseline": b, "experimental": e, **extra}


def json_steps(logdir, run) -> list[dict]:
    """The run's ProfilerStep#N events, straight from the trace JSON."""
    events = load_events(trace_file(logdir / run))[1]
    return sorted((e for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")),
                  key=lambda e: e["ts"])


def test_overview_route(client, logdir):
    out = get(client, "diff/overview", **pair())
    assert out["baseline"]["run"] == "baseline" and out["experimental"]["run"] == "experimental"
    by = {r["metric"]: r for r in out["rows"]}
    assert by["steps"]["baseline"] == by["steps"]["experimental"] == 3
    step = by["avg_step_time_us"]
    assert step["unit"] == "us" and step["delta"] == pytest.approx(step["experimental"] - step["baseline"], abs=1e-2)
    # The values themselves: CPU steps do not overlap, so the average step
    # time is the mean ProfilerStep duration in the JSON.
    for side, run in (("baseline", "baseline"), ("experimental", "experimental")):
        durs = [e["dur"] for e in json_steps(logdir, run)]
        assert step[side] == pytest.approx(sum(durs) / len(durs), abs=1e-2)
    assert by["gpu_utilization_pct"]["delta_pct"] is None


def test_modules_route_root_and_zoom(client, logdir):
    root = get(client, "diff/modules", **pair())
    assert root["path"] == "" and root["breadcrumb"] == [{"name": "All steps", "path": ""}]
    assert [c["kind"] for c in root["children"]] == ["step"] * 3
    assert len(root["trend"]["baseline_host_us"]) == 3
    # Step host times are the ProfilerStep#N durations of each JSON.
    b_steps, e_steps = json_steps(logdir, "baseline"), json_steps(logdir, "experimental")
    assert [c["baseline_name"] for c in root["children"]] == [e["name"] for e in b_steps]
    assert [c["experimental_name"] for c in root["children"]] == [e["name"] for e in e_steps]
    assert [c["baseline_host_us"] for c in root["children"]] == pytest.approx([e["dur"] for e in b_steps], abs=1e-3)
    assert [c["experimental_host_us"] for c in root["children"]] == pytest.approx([e["dur"] for e in e_steps], abs=1e-3)
    assert root["node"]["baseline_host_us"] == pytest.approx(sum(e["dur"] for e in b_steps), abs=1e-2)
    assert root["node"]["note"] is None and all(c["note"] is None for c in root["children"])
    step = get(client, "diff/modules", **pair(path=root["children"][0]["path"]))
    kinds = [c["kind"] for c in step["children"]]
    assert kinds[0] == "data_loading" and "backward" in kinds and kinds[-1] == "unknown"
    # Zoom down to the model's block stack: one Block only in the experimental run.
    net = next(c for c in step["children"] if c["name"] == "Net_0")
    seq = next(c for c in get(client, "diff/modules", **pair(path=net["path"]))["children"] if c["key"] == "Sequential")
    blocks = get(client, "diff/modules", **pair(path=seq["path"]))
    assert [c["status"] for c in blocks["children"]] == ["matched"] * 4 + ["experimental_only", "matched"]
    assert [b["name"] for b in blocks["breadcrumb"]] == ["All steps", "ProfilerStep#2", "Net_0", "Sequential_0"]
    extra = blocks["children"][4]
    assert extra["baseline_host_us"] == 0 and extra["delta_host_pct"] is None and extra["has_children"] is True
    assert blocks["node"]["delta_calls"] == extra["experimental_calls"]
    # Per-piece operators of the extra block.
    ops = get(client, "diff/operators", **pair(path=extra["path"], filter="aten::linear"))
    assert ops["rows"][0]["name"] == "aten::linear" and ops["rows"][0]["experimental_calls"] == 1


@pytest.mark.parametrize("path", ["x", "0.", "7", "0.99", "-1", "0..1"])
def test_unknown_path_is_400(client, path):
    out = get(client, "diff/modules", 400, **pair(path=path))
    assert out["status"] == 400 and "path" in out["error"]


def test_operators_route_sort_filter_page(client):
    first = get(client, "diff/operators", **pair(limit="5"))
    assert first["sort"] == "delta_host_self_us" and first["order"] == "desc" and len(first["rows"]) == 5
    deltas = [abs(r["delta_host_self_us"]) for r in first["rows"]]
    assert deltas == sorted(deltas, reverse=True)
    asc = get(client, "diff/operators", **pair(sort="name", order="asc", limit="10000"))
    names = [r["name"].lower() for r in asc["rows"]]
    assert names == sorted(names) and asc["total"] == len(names)
    page = get(client, "diff/operators", **pair(sort="name", order="asc", offset="3", limit="4"))
    assert [r["name"] for r in page["rows"]] == [r["name"] for r in asc["rows"][3:7]]
    filtered = get(client, "diff/operators", **pair(filter="LINEAR"))
    assert filtered["total"] >= 1 and all("linear" in r["name"].lower() for r in filtered["rows"])
    linear = next(r for r in filtered["rows"] if r["name"] == "aten::linear")
    assert linear["delta_calls"] == 3
    shaped = get(client, "diff/operators", **pair(group_by="name_and_shape", filter="aten::addmm"))
    assert shaped["group_by"] == "name_and_shape" and all(r["input_shape"] for r in shaped["rows"])


@pytest.mark.parametrize("route,params", [
    ("diff/operators", {"sort": "nope"}), ("diff/kernels", {"sort": "nope"}), ("diff/operators", {"order": "sideways"}),
    ("diff/operators", {"limit": "-1"}), ("diff/kernels", {"offset": "abc"}), ("diff/operators", {"group_by": "x"}),
    ("diff/operators", {"limit": "\u0663"}), ("diff/kernels", {"offset": "+5"}), ("diff/operators", {"limit": "5_0"}),
    ("diff/operators", {"offset": " 5"}), ("diff/kernels", {"group_by": "x"}), ("diff/kernels", {"path": "0.99"}),
])
def test_bad_table_parameters_are_400(client, route, params):
    assert get(client, route, 400, **pair(**params))["status"] == 400


def test_unknown_and_missing_runs(client):
    assert get(client, "diff/overview", 404, **pair(e="nope"))["status"] == 404
    assert get(client, "diff/modules", 400, experimental="baseline")["status"] == 400
    assert get(client, "diff/kernels", 404, **pair(b_worker="ghost"))["status"] == 404


def test_kernels_route_on_the_gpu_pair(client, shared_traces):
    out = get(client, "diff/kernels", **pair("gpu_control", "gpu_test", limit="3"))
    # Kernels launched before the profiled window are one row of their own (these traces have some).
    b_sum = kernels_by_name(load_events(shared_traces / "trace_diff" / "control.json.gz")[1])[1]
    e_sum = kernels_by_name(load_events(shared_traces / "trace_diff" / "test.json.gz")[1])[1]
    leader = max(set(b_sum) | set(e_sum), key=lambda n: abs(e_sum.get(n, 0.0) - b_sum.get(n, 0.0)))
    assert out["rows"][0]["name"] == leader
    assert out["total"] == len(set(b_sum) | set(e_sum)) and out["primary"] == "total_us"
    mods = get(client, "diff/modules", **pair("gpu_control", "gpu_test", path="0"))
    assert {c["kind"] for c in mods["children"]} == {"annotation", "unknown"}
    assert all(c["status"] == "matched" for c in mods["children"])
    # Kernels inside one piece: fewer, and no more device time than the piece's.
    fwd = next(c for c in mods["children"] if c["name"] == "## forward ##")
    inside = get(client, "diff/kernels", **pair("gpu_control", "gpu_test", path=fwd["path"], limit="10000"))
    assert inside["path"] == fwd["path"] and 0 < inside["total"] < out["total"]
    for side in ("baseline", "experimental"):
        assert 0 < sum(r[f"{side}_total_us"] for r in inside["rows"]) <= fwd[f"{side}_device_us"] + 1e-2
    assert get(client, "diff/operators", **pair("gpu_control", "gpu_test"))["sort"] == "delta_device_self_us"


def test_same_run_on_both_sides_is_all_zero(client):
    sel = pair("baseline", "baseline")
    assert all(r["delta"] in (0, None) for r in get(client, "diff/overview", **sel)["rows"])
    root = get(client, "diff/modules", **sel)
    step = get(client, "diff/modules", **sel, path="0")
    for c in root["children"] + step["children"]:
        assert c["status"] == "matched" and c["delta_host_us"] == 0 and c["delta_calls"] == 0
    ops = get(client, "diff/operators", **sel, limit="10000")
    assert all(r["delta_calls"] == 0 and r["delta_host_self_us"] == 0 for r in ops["rows"])


def test_two_workers_of_one_run(client):
    sel = pair("two_workers", "two_workers", b_worker="alpha", e_worker="beta")
    out = get(client, "diff/operators", **sel, filter="aten::linear")
    assert out["baseline"]["worker"] == "alpha" and out["experimental"]["worker"] == "beta"
    assert next(r for r in out["rows"] if r["name"] == "aten::linear")["delta_calls"] == 3
    same_as_runs = get(client, "diff/modules", **pair(path="0"))
    by_workers = get(client, "diff/modules", **sel, path="0")
    assert [c["delta_calls"] for c in by_workers["children"]] == [c["delta_calls"] for c in same_as_runs["children"]]


def test_explain_route(client, logdir):
    out = get(client, "diff/explain", **pair("baseline", "slow_loader"))
    assert out["baseline"]["run"] == "baseline" and out["experimental"]["run"] == "slow_loader"
    first = out["contributors"][0]
    assert first["kind"] == "data_loading" and first["significance"]["verdict"] == "significant"
    assert first["significance"]["baseline_steps"] == first["significance"]["experimental_steps"] == 3
    assert "data loading" in out["sentence"] and out["note"] is None
    # The step time is the Overview's: the same mean as diff/overview.
    rows = {r["metric"]: r for r in get(client, "diff/overview", **pair("baseline", "slow_loader"))["rows"]}
    assert out["step"]["delta_us"] == pytest.approx(rows["avg_step_time_us"]["delta"], abs=1e-2)
    assert rows["breakdown_us.data_loading"]["significance"]["verdict"] == "significant"
    assert rows["memory.peak_bytes"]["significance"] is None
    assert sum(c["delta_us"] for c in out["contributors"]) == pytest.approx(out["step"]["delta_us"], abs=0.1)


def test_explain_route_gpu_pair(client):
    """HTA's real GPU pair: the device is busy most of both runs' steps, so the
    contributors are device time, and they add up to the Overview's step-time
    delta (work launched early in a step while the previous step's still ran
    counted once)."""
    out = get(client, "diff/explain", **pair("gpu_control", "gpu_test"))
    rows = {r["metric"]: r for r in get(client, "diff/overview", **pair("gpu_control", "gpu_test"))["rows"]}
    assert out["step"]["baseline_us"] == pytest.approx(rows["avg_step_time_us"]["baseline"], abs=1e-2)
    assert sum(c["delta_us"] for c in out["contributors"]) == pytest.approx(out["step"]["delta_us"], abs=0.5)
    assert out["device_present"] and out["clock"] == "device" and "Compared on device time" in out["note"]
    assert out["waterfall"][-1]["end_us"] == out["step"]["experimental_us"]


def test_explain_route_errors(client):
    get(client, "diff/explain", 404, **pair("baseline", "nope"))
    get(client, "diff/explain", 400, baseline="baseline")
