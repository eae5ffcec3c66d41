"""Module diff at the step level: pieces crossing step boundaries, unequal
step counts, empty runs, paging of children, approximate alignments, and
the server-side table filter.

Oracles: the trace JSON itself (step annotations, event counts) and the
parent/children sums at every level.
"""
from __future__ import annotations

import copy
import glob
import json

import pandas as pd
import pytest

from tb_pipeline_plugin.diff import align as align_mod
from support import diff_calls as api
from tb_pipeline_plugin.diff import tables as compare
from tb_pipeline_plugin.diff.tables import TableQuery
from tb_pipeline_plugin.diff import tree as M
from tb_pipeline_plugin.errors import BadRequest
from tb_pipeline_plugin.analysis.processor import TraceProcessor


def trace_file(run_dir) -> str:
    (path,) = glob.glob(str(run_dir / "*.pt.trace.json*"))
    return path


@pytest.fixture(scope="module")
def baseline_json(recorded_logdir) -> dict:
    with open(trace_file(recorded_logdir / "baseline")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def baseline(recorded_logdir) -> TraceProcessor:
    return TraceProcessor.load(trace_file(recorded_logdir / "baseline"))


@pytest.fixture(scope="module")
def experimental(recorded_logdir) -> TraceProcessor:
    return TraceProcessor.load(trace_file(recorded_logdir / "experimental"))


def load(data, tmp_path, name="w") -> TraceProcessor:
    out = tmp_path / f"{name}.1.pt.trace.json"
    out.write_text(json.dumps(data))
    return TraceProcessor.load(str(out))


def steps_of(data) -> list[dict]:
    return sorted((ev for ev in data["traceEvents"] if str(ev.get("name", "")).startswith("ProfilerStep#")
                   and ev.get("ph") == "X"), key=lambda ev: ev["ts"])


def check_sums(b: TraceProcessor, e: TraceProcessor) -> int:
    """At every node below the root, its children add up to it (host,
    device, calls, both sides), and no step sits below the root's children.
    Returns the number of nodes checked."""
    bi, ei = api.piece_index(b), api.piece_index(e)
    seen = 0
    stack = [(M.root(bi, ei), 0)]
    while stack:
        node, depth = stack.pop()
        kids = M.children(bi, ei, node)
        row = M.row(bi, ei, node)
        if depth >= 2:
            assert row["kind"] != "step", row
        if kids:
            rows = [M.row(bi, ei, k) for k in kids]
            for side in ("baseline", "experimental"):
                for what in ("host_us", "device_us"):
                    got = sum(r[f"{side}_{what}"] for r in rows)
                    assert got == pytest.approx(row[f"{side}_{what}"], abs=1e-2), (row["path"], side, what)
                assert sum(r[f"{side}_calls"] for r in rows) == row[f"{side}_calls"], (row["path"], side)
        seen += 1
        stack.extend((k, depth + 1) for k in kids)
    return seen


# ------------------------------------------------------------ pieces across steps


@pytest.mark.parametrize("case", ["spanning_annotation", "overlong_optimizer"])
def test_piece_crossing_a_step_boundary_is_clipped_to_its_step(baseline, baseline_json, tmp_path, case):
    """A record_function opened in step 0 and closed in the last step (or an
    optimizer call running past its step's end) belongs to the step where it
    starts, clipped to that step: later steps never nest under it and no
    time or call is counted twice."""
    data = copy.deepcopy(baseline_json)
    steps = steps_of(data)
    assert len(steps) == 3
    if case == "spanning_annotation":
        name = "batches"
        data["traceEvents"].append({
            "ph": "X", "cat": "user_annotation", "name": name, "pid": steps[0]["pid"], "tid": steps[0]["tid"],
            "ts": steps[0]["ts"] + 2, "dur": steps[-1]["ts"] + steps[-1]["dur"] / 2 - steps[0]["ts"]})
        crossing_step = 0
    else:
        opt = [ev for ev in data["traceEvents"] if ev.get("ph") == "X"
               and str(ev.get("name", "")).startswith("Optimizer.step#")
               and steps[0]["ts"] <= ev["ts"] < steps[0]["ts"] + steps[0]["dur"]]
        assert opt
        opt = opt[0]
        name = opt["name"]
        opt["dur"] = steps[0]["ts"] + steps[0]["dur"] - opt["ts"] + 200.0
        crossing_step = 0
    edited = load(data, tmp_path)

    assert check_sums(baseline, edited) > 50
    root = api.diff_modules_impl(baseline, edited, "")
    assert [k["kind"] for k in root["children"]] == ["step"] * 3
    for k, ev in zip(root["children"], steps):
        # The steps themselves are unchanged.
        assert k["experimental_host_us"] == pytest.approx(ev["dur"], abs=1e-2)
        assert k["experimental_calls"] == k["baseline_calls"]
        assert k["experimental_host_us"] == k["baseline_host_us"]
    level = api.diff_modules_impl(baseline, edited, str(crossing_step))
    piece = next(k for k in level["children"] if k["experimental_name"] == name)
    step = steps[crossing_step]
    start = step["ts"] + 2 if case == "spanning_annotation" else opt["ts"]
    assert piece["experimental_host_us"] == pytest.approx(step["ts"] + step["dur"] - start, abs=1e-2)
    assert all(k["kind"] != "step" for k in level["children"])
    # The next steps hold no trace of it.
    for later in ("1", "2"):
        assert all(k["experimental_name"] != "batches" for k in api.diff_modules_impl(baseline, edited, later)["children"])


def test_piece_starting_outside_every_step_is_not_a_piece(baseline, baseline_json, tmp_path):
    """An annotation around the whole loop (`epoch`) starts before step 0: it
    is no piece, and the steps are unchanged."""
    data = copy.deepcopy(baseline_json)
    steps = steps_of(data)
    data["traceEvents"].append({
        "ph": "X", "cat": "user_annotation", "name": "epoch", "pid": steps[0]["pid"], "tid": steps[0]["tid"],
        "ts": steps[0]["ts"] - 5, "dur": steps[-1]["ts"] + steps[-1]["dur"] + 10 - steps[0]["ts"]})
    edited = load(data, tmp_path)
    check_sums(baseline, edited)
    rows = list(M.walk(api.piece_index(baseline), api.piece_index(edited)))
    assert all(r["status"] == M.MATCHED and r["delta_host_us"] == 0 and r["delta_calls"] == 0 for r in rows)


def test_children_add_up_on_the_recorded_pair(baseline, experimental):
    assert check_sums(baseline, experimental) > 50


# ------------------------------------------------------------ step counts


def test_unequal_step_counts_keep_sums_and_say_so(baseline, baseline_json, tmp_path):
    """3 steps against 2: the root still sums every step of each side, and
    its note says that the totals differ by the step count too."""
    data = copy.deepcopy(baseline_json)
    last = steps_of(data)[-1]
    data["traceEvents"] = [ev for ev in data["traceEvents"] if ev is not last]
    two = load(data, tmp_path)
    out = api.diff_modules_impl(baseline, two, "")
    node, kids = out["node"], out["children"]
    assert "3 steps" in node["note"] and "2 steps" in node["note"] and "step count" in node["note"]
    assert [k["status"] for k in kids] == [M.MATCHED, M.MATCHED, M.BASELINE_ONLY]
    assert all(k["note"] is None for k in kids)
    for side in ("baseline", "experimental"):
        assert node[f"{side}_host_us"] == pytest.approx(sum(k[f"{side}_host_us"] for k in kids), abs=1e-2)
        assert node[f"{side}_calls"] == sum(k[f"{side}_calls"] for k in kids)
    # The matched steps are the same events: no delta; the trend ends on the root's delta.
    assert kids[0]["delta_host_us"] == 0 and kids[1]["delta_host_us"] == 0
    assert out["trend"]["delta_host_us"] == pytest.approx(
        [0.0, 0.0, -kids[2]["baseline_host_us"]], abs=1e-2)
    assert out["trend"]["delta_host_us"][-1] == pytest.approx(node["delta_host_us"], abs=1e-2)
    # Same counts: no note (CPU pair).
    assert api.diff_modules_impl(baseline, baseline, "")["node"]["note"] is None
    # Either direction.
    assert "2 steps" in api.diff_modules_impl(two, baseline, "")["node"]["note"]


def test_notes_are_joined():
    assert M.join_notes(None, None) is None
    assert M.join_notes("A.", None, " B. ") == "A. B."


# ------------------------------------------------------------ runs with no events


MEMORY_ONLY = {"traceEvents": [
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": t,
     "args": {"Bytes": 10, "Total Allocated": 10 * t, "Total Reserved": 0, "Device Type": 0, "Device Id": -1}}
    for t in range(5)]}


@pytest.mark.parametrize("data", [
    {"traceEvents": []}, [], MEMORY_ONLY, {"traceEvents": [{"ph": "E", "pid": 1, "tid": 1, "ts": 10}]},
], ids=["no_events", "bare_array", "memory_only", "only_end_events"])
def test_run_with_an_empty_event_table_diffs_as_zero(baseline, tmp_path, data):
    empty = load(data, tmp_path)
    for b, e in ((empty, empty), (baseline, empty), (empty, baseline)):
        root = api.diff_modules_impl(b, e, "")
        side = "baseline" if b is empty else "experimental"
        assert root["node"][f"{side}_host_us"] == 0 and root["node"][f"{side}_calls"] == 0
        for kid in root["children"]:
            level = api.diff_modules_impl(b, e, kid["path"])
            assert level["node"][f"{side}_host_us"] == 0
            ops = api.diff_operators_impl(b, e, {"path": kid["path"]})
            kern = api.diff_kernels_impl(b, e, {"path": kid["path"]})
            assert all(r[f"{side}_calls"] == 0 for r in ops["rows"] + kern["rows"])
        api.diff_operators_impl(b, e, {})
        api.diff_kernels_impl(b, e, {})


# ------------------------------------------------------------ paging


def test_children_paging(baseline, experimental):
    full = api.diff_modules_impl(baseline, experimental, "0")
    n = len(full["children"])
    assert full["children_total"] == n and full["offset"] == 0 and full["limit"] == api.MODULES_DEFAULT_LIMIT
    assert n >= 4
    page = api.diff_modules_impl(baseline, experimental, "0", {"offset": "1", "limit": "2"})
    assert page["children_total"] == n and page["offset"] == 1 and page["limit"] == 2
    assert page["children"] == full["children"][1:3]
    assert page["node"] == full["node"]
    # The trend of a page continues the level's running sums.
    assert page["trend"] == {k: v[1:3] for k, v in full["trend"].items()}
    past = api.diff_modules_impl(baseline, experimental, "0", {"offset": str(n + 5)})
    assert past["children"] == [] and past["children_total"] == n and all(v == [] for v in past["trend"].values())
    for bad in ({"limit": "-1"}, {"offset": "x"}, {"limit": str(api.MODULES_MAX_LIMIT + 1)}, {"limit": "1.5"}):
        with pytest.raises(BadRequest):
            api.diff_modules_impl(baseline, experimental, "0", bad)


# ------------------------------------------------------------ approximate alignments


def test_approximate_flag(baseline, experimental, monkeypatch):
    """`approximate` reports what align_info said about the level (when it
    is true is tested in test_align.py), memoised with the level."""
    exact = api.diff_modules_impl(baseline, experimental, "0")
    assert exact["approximate"] is False and exact["node"]["approximate"] is False
    real = M.align_info
    calls = []
    monkeypatch.setattr(M, "align_info", lambda *args: calls.append(1) or (real(*args)[0], True))
    b, e = TraceProcessor(baseline.table), TraceProcessor(experimental.table)  # nothing memoised
    out = api.diff_modules_impl(b, e, "0")
    assert out["approximate"] is True and out["node"]["approximate"] is True
    assert out["children"] == exact["children"]
    again = api.diff_modules_impl(b, e, "0")
    assert again["approximate"] is True and len(calls) == 1
    # The root's children (steps) are paired by index, never approximately.
    assert api.diff_modules_impl(b, e, "")["approximate"] is False


# ------------------------------------------------------------ table filter


def test_filter_matches_name_or_shape_trimmed_case_insensitive():
    table = pd.DataFrame({
        "name": ["aten::mm", "aten::addmm", "aten::relu"],
        "input_shape": ["[[8, 16], [16, 32]]", "[[32], [8, 16]]", None],
        "baseline_calls": [1, 2, 3], "experimental_calls": [1, 2, 4], "delta_calls": [0, 0, 1],
        "delta_calls_pct": [0.0, 0.0, 33.33],
    })
    def names(text):
        out = compare.query(table, ["name", "input_shape"], ["calls"], "calls", TableQuery(filter=text))
        return sorted(r["name"] for r in out["rows"]), out["total"]
    assert names("  ADDMM ") == (["aten::addmm"], 1)
    assert names("[8, 16]") == (["aten::addmm", "aten::mm"], 2)  # shape only
    assert names("relu") == (["aten::relu"], 1)  # null shape
    assert names("   ") == (["aten::addmm", "aten::mm", "aten::relu"], 3)
    assert names(".*") == ([], 0)  # never a regex
    kernels = table.drop(columns=["input_shape"])
    out = compare.query(kernels, ["name"], ["calls"], "calls", TableQuery(filter=" MM"))
    assert sorted(r["name"] for r in out["rows"]) == ["aten::addmm", "aten::mm"]
