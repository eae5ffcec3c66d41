"""diff/overview when one run has no ProfilerStep annotations: both runs are
compared over their whole profiled window, never one step against a trace."""
from __future__ import annotations

import json

import pytest

from support.diff_calls import diff_overview_impl
from tb_pipeline_plugin.trace import decode_trace
from tb_pipeline_plugin.analysis.processor import TraceProcessor


@pytest.fixture(scope="module")
def pair(recorded_logdir):
    path = next((recorded_logdir / "baseline").glob("*.pt.trace.json*"))
    doc = json.loads(path.read_bytes())
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e not in steps]
    # Cut to the steps' window so both traces cover the same execution.
    t0 = min(s["ts"] for s in steps)
    t1 = max(s["ts"] + s["dur"] for s in steps)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if "ts" not in e or t0 <= e["ts"] <= t1]
    return TraceProcessor.load(str(path)), TraceProcessor(decode_trace(json.dumps(doc).encode()))


@pytest.mark.parametrize("flip", [False, True])
def test_same_execution_without_steps_shows_no_regression(pair, flip):
    with_steps, without = pair
    b, e = (without, with_steps) if flip else (with_steps, without)
    out = diff_overview_impl(b, e)
    assert "no ProfilerStep annotations" in out["note"]
    rows = {r["metric"]: r for r in out["rows"]}
    assert rows["steps"]["baseline"] == rows["steps"]["experimental"] == 1
    step = rows["avg_step_time_us"]
    # The same work in the same window: the times agree closely (only events
    # straddling the window's edges differ), instead of "+200 %".
    assert abs(step["delta_pct"]) < 5, step
    assert abs(rows["breakdown_us.cpu_exec"]["delta_pct"]) < 5


def test_both_with_steps_has_no_note(pair):
    with_steps, _ = pair
    out = diff_overview_impl(with_steps, with_steps)
    assert out["note"] is None
    assert all(r["delta"] in (0, None) for r in out["rows"])


def test_diff_modules_paging_through_http(recorded_logdir, make_tb_client):
    from conftest import PLUGIN_PREFIX, wait_ready

    client = make_tb_client(recorded_logdir)
    for run in ("baseline", "experimental"):
        assert wait_ready(client, run)["status"] == "ready"
    base = f"{PLUGIN_PREFIX}/diff/modules?baseline=baseline&experimental=experimental&path=0"
    full = client.get(base).get_json()
    page = client.get(base + "&offset=1&limit=2").get_json()
    assert full["children_total"] == len(full["children"]) > 3
    assert page["children_total"] == full["children_total"]
    assert [c["path"] for c in page["children"]] == [c["path"] for c in full["children"][1:3]]
    # The page's trend continues the level's running sums.
    assert page["trend"]["baseline_host_us"] == full["trend"]["baseline_host_us"][1:3]
    assert client.get(base + "&limit=abc").status_code == 400
