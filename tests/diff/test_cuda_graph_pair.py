"""The pair with CUDA graphs: HTA's TraceDiff sample, whose `test` run replays CUDA graphs
(`cudaGraphLaunch`) and `control` launches kernel by kernel. Through the real TensorBoard app, the
comparability check and the sentence name the graphs and the fall in launch calls a step, with
counts computed straight from the trace JSON (runtime and driver calls with `Launch` in their name
starting inside each profiled step's window, over the steps)."""
from __future__ import annotations

import shutil

import pytest

from conftest import build_tb_app
from support.group_runs import get_ready
from support.json_oracle import category, load_events, step_windows
from werkzeug.test import Client

GRAPH_LAUNCHES = ("cudaGraphLaunch", "cudaGraphLaunch_v10000")


def _per_step(path) -> dict:
    _, events = load_events(path)
    windows = step_windows(events)
    host = [e for e in events if e.get("ph") == "X" and category(e) in ("cuda_runtime", "cuda_driver")
            and any(start <= e["ts"] < end for _, start, end in windows)]
    launches = [e for e in host if "Launch" in e["name"]]
    graphs = [e for e in host if e["name"] in GRAPH_LAUNCHES]
    return {"launch_calls": len(launches) / len(windows), "graph_launches": len(graphs) / len(windows)}


@pytest.fixture(scope="module")
def answers(shared_traces, tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda_graphs")
    for run, side in (("baseline", "control"), ("experimental", "test")):
        (root / run).mkdir()
        shutil.copy(shared_traces / "trace_diff" / f"{side}.json.gz", root / run / f"{side}.pt.trace.json.gz")
    app, plugin = build_tb_app(root)
    try:
        client = Client(app)
        pair = dict(baseline="baseline", experimental="experimental")
        yield (get_ready(client, "diff/overview", **pair), get_ready(client, "diff/explain", **pair),
               {run: _per_step(shared_traces / "trace_diff" / f"{side}.json.gz")
                for run, side in (("baseline", "control"), ("experimental", "test"))})
    finally:
        plugin.close()


def test_the_oracle_sees_graphs_on_one_side_only(answers):
    oracle = answers[2]
    assert oracle["baseline"]["graph_launches"] == 0 and oracle["experimental"]["graph_launches"] >= 1
    assert oracle["experimental"]["launch_calls"] < 0.7 * oracle["baseline"]["launch_calls"]


def test_comparability_names_the_graphs_and_the_launch_calls(answers):
    overview, _, oracle = answers
    [item] = [i for i in overview["comparability"] if "CUDA graphs" in i["text"]]
    b, e = (round(oracle[run]["launch_calls"]) for run in ("baseline", "experimental"))
    text = f"{item['label']} {item['baseline']} {item['experimental']} {item['text']}"
    assert str(b) in text and str(e) in text, item
    assert "replays CUDA graphs" in item["text"] and "experimental" in item["text"], item


def test_the_sentence_says_what_changed_on_the_gpu(answers):
    _, explain, oracle = answers
    b, e = (round(oracle[run]["launch_calls"]) for run in ("baseline", "experimental"))
    assert f"CUDA graphs ({b} → {e} launch calls a step)" in explain["sentence"], explain["sentence"]
