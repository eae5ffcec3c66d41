"""Per-run routes through the real TensorBoard WSGI app."""
from __future__ import annotations

import gzip
import json
import shutil
import time

import pytest

from conftest import PLUGIN_PREFIX, wait_ready
from support.json_oracle import device_self_by_op_external_id, duration_by_name, load_events

P = PLUGIN_PREFIX


@pytest.fixture(scope="module")
def mixed_logdir(tmp_path_factory, recorded_logdir, shared_traces):
    """Recorded runs, a real GPU run, a corrupt run, a truncated run, and a
    run whose op names are HTML."""
    root = tmp_path_factory.mktemp("mixed")
    for run in ("baseline", "experimental"):
        shutil.copytree(recorded_logdir / run, root / run)
    (root / "gpu").mkdir()
    shutil.copy(shared_traces / "single_rank/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                root / "gpu/rank0.1712195495.pt.trace.json.gz")
    (root / "corrupt").mkdir()
    (root / "corrupt/w.1.pt.trace.json").write_bytes(b'{"traceEvents": [{"ph": "X", "na')
    raw = gzip.decompress((shared_traces / "nccl/nccl_data.json.gz").read_bytes())
    (root / "truncated").mkdir()
    (root / "truncated/w.1.pt.trace.json").write_bytes(raw[: len(raw) * 2 // 3])
    (root / "html").mkdir()
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "<img src=x onerror=alert(1)>", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 9},
    ]}
    (root / "html/w.1.pt.trace.json").write_text(json.dumps(doc))
    return root


@pytest.fixture(scope="module")
def client(mixed_logdir):
    from werkzeug.test import Client

    from conftest import build_tb_app

    app, plugin = build_tb_app(mixed_logdir)
    c = Client(app)
    for run in ("baseline", "experimental", "gpu", "corrupt", "truncated", "html"):
        wait_ready(c, run)
    yield c
    plugin.close()


def get(client, url, status=200):
    resp = client.get(P + url)
    assert resp.status_code == status, resp.get_data(as_text=True)
    assert resp.headers["Content-Type"].startswith("application/json")
    return resp.get_json()


def test_runs_lists_every_run_with_workers_and_status(client):
    runs = {r["name"]: r for r in get(client, "/runs")["runs"]}
    assert set(runs) == {"baseline", "experimental", "gpu", "corrupt", "truncated", "html"}
    assert [(w["name"], w["spans"]) for w in runs["gpu"]["workers"]] == [("rank0", ["1712195495"])]
    assert runs["baseline"]["kinds"] == ["trace"]
    assert runs["baseline"]["status"] == "ready" and runs["baseline"]["error"] is None
    assert runs["corrupt"]["status"] == "failed"
    assert "no trace event could be decoded" in runs["corrupt"]["error"]
    assert runs["truncated"]["status"] == "ready"
    assert any("middle of an event" in w for w in runs["truncated"]["warnings"])


@pytest.mark.parametrize("run", ["baseline", "gpu", "truncated"])
def test_all_views_answer(client, run):
    ov = get(client, f"/overview?run={run}")
    assert ov["run"] == run and ov["avg_step_time_us"] > 0
    assert set(ov["breakdown_us"]) == {"kernel", "memcpy", "memset", "communication", "runtime",
                                       "data_loading", "cpu_exec", "other"}
    ops = get(client, f"/operators?run={run}")
    assert ops["total"] == len(ops["rows"]) > 0
    assert set(ops["rows"][0]) == {"name", "input_shape", "calls", "host_self_us", "host_total_us",
                                   "device_self_us", "device_total_us"}
    by_shape = get(client, f"/operators?run={run}&group_by=name_and_shape")
    assert by_shape["total"] >= ops["total"]
    assert sum(r["calls"] for r in by_shape["rows"]) == sum(r["calls"] for r in ops["rows"])
    get(client, f"/kernels?run={run}")
    get(client, f"/modules?run={run}")


def test_gpu_run_numbers(client, mixed_logdir):
    ops = get(client, "/operators?run=gpu")
    assert ops["device_present"] is True
    # Sorted by device self time.
    selfs = [r["device_self_us"] for r in ops["rows"]]
    assert selfs == sorted(selfs, reverse=True)
    oracle = device_self_by_op_external_id(load_events(next((mixed_logdir / "gpu").iterdir()))[1])
    by_name = {r["name"]: r for r in ops["rows"]}
    top = max(oracle, key=oracle.get)
    assert by_name[top]["device_self_us"] == pytest.approx(oracle[top], rel=1e-9)
    assert ops["rows"][0]["name"] == top
    kernels = get(client, "/kernels?run=gpu")
    expected = duration_by_name(load_events(next((mixed_logdir / "gpu").iterdir()))[1], ("kernel",))
    assert kernels["rows"][0]["name"] == max(expected, key=expected.get)
    assert kernels["rows"][0]["total_us"] == pytest.approx(max(expected.values()), rel=1e-9)
    assert kernels["rows"][0]["grid"].startswith("[")
    assert get(client, "/overview?run=gpu")["device"]["name"] == "Tesla V100-SXM2-32GB"


def test_recorded_modules(client):
    roots = get(client, "/modules?run=experimental")["roots"]
    assert roots[0]["name"] == "Net_0"


def test_failed_run_is_422_and_does_not_break_others(client):
    body = get(client, "/overview?run=corrupt", 422)
    assert "could not be read" in body["error"] and body["status"] == 422
    get(client, "/overview?run=baseline")


@pytest.mark.parametrize("query, status", [
    ("/overview", 400),
    ("/overview?run=", 400),
    ("/overview?run=../../etc", 400),
    ("/overview?run=/etc/passwd", 400),
    ("/overview?run=baseline/../gpu", 400),
    ("/overview?run=baseline&worker=../../x", 400),
    ("/overview?run=baseline&span=abc", 400),
    ("/overview?run=nope", 404),
    ("/overview?run=baseline&worker=nobody", 404),
    ("/overview?run=baseline&span=123", 404),
    ("/operators?run=baseline&group_by=shape", 400),
    ("/kernels?run=%00", 400),
])
def test_bad_parameters(client, query, status):
    body = get(client, query, status)
    assert body["status"] == status and body["error"]


def test_html_names_come_back_as_data(client):
    resp = client.get(P + "/operators?run=html")
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.get_json()["rows"][0]["name"] == "<img src=x onerror=alert(1)>"


def test_loading_run_answers_409_then_ready(tmp_path, shared_traces, make_tb_client):
    shutil.copy(shared_traces / "trace_diff/control.json.gz", tmp_path / "w.1.pt.trace.json.gz")
    (tmp_path / "w.1.pt.trace.json.gz").rename(tmp_path / "w.1.pt.trace.json.gz")
    client = make_tb_client(tmp_path)
    first = client.get(P + "/overview?run=.")
    assert first.status_code == 409
    assert first.get_json()["run_status"] == "loading"
    assert wait_ready(client, ".")["status"] == "ready"
    assert client.get(P + "/overview?run=.").status_code == 200


def test_file_still_being_written_is_reloaded(tmp_path, recorded_logdir, make_tb_client):
    src = next((recorded_logdir / "baseline").glob("*.pt.trace.json*")).read_bytes()
    run = tmp_path / "live"
    run.mkdir()
    target = run / "w.5.pt.trace.json"
    target.write_bytes(src[: len(src) // 3])
    client = make_tb_client(tmp_path)
    partial = wait_ready(client, "live")
    assert partial["status"] == "ready" and partial["warnings"]
    calls_partial = sum(r["calls"] for r in get(client, "/operators?run=live")["rows"])
    time.sleep(0.01)
    target.write_bytes(src)
    full = wait_ready(client, "live")
    assert full["warnings"] == []
    ops_in_file = sum(1 for e in json.loads(src)["traceEvents"] if e.get("cat") == "cpu_op")
    assert sum(r["calls"] for r in get(client, "/operators?run=live")["rows"]) == ops_in_file >= calls_partial


def test_new_runs_are_picked_up(tmp_path, recorded_logdir, make_tb_client):
    client = make_tb_client(tmp_path)
    assert get(client, "/runs")["runs"] == []
    shutil.copytree(recorded_logdir / "baseline", tmp_path / "later")
    assert [r["name"] for r in get(client, "/runs")["runs"]] == ["later"]


def test_frontend_bundle_is_served(client, repo_root):
    if not (repo_root / "tb_pipeline_plugin/static/index.js").exists():
        pytest.fail("frontend bundle missing: `make test` builds it before the tests")
    resp = client.get(P + "/index.js")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("text/javascript")
    assert b"render" in resp.get_data()


def test_a_route_asked_with_wait_ms_answers_when_the_run_has_loaded(recorded_logdir, tmp_path, make_tb_client):
    """`wait_ms` (docs/http_api.md): the request waits for the load it needs
    instead of answering 409; past `wait_ms` it answers 409 as before."""
    import threading

    client = make_tb_client(tmp_path)  # empty: nothing is prefetched
    gate = threading.Event()
    load = client.plugin.runs._trace_loader
    store_loaders = client.plugin.runs._traces._load_fn.loaders
    store_loaders["trace"] = lambda path: gate.wait(60) and load(path)  # the real parse, once the test opens the gate
    src = sorted((recorded_logdir / "baseline").glob("*.pt.trace.json*"))[0]
    (tmp_path / "run").mkdir()
    shutil.copy(src, tmp_path / "run" / src.name)

    url = f"{PLUGIN_PREFIX}/overview?run=run"
    deadline = time.monotonic() + 30
    while (first := client.get(url)).status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.2)  # until discovery looks again (it rescans for unknown runs at most every few seconds)
    assert first.status_code == 409, first.get_data(as_text=True)
    t0 = time.monotonic()
    held = client.get(url + "&wait_ms=300")
    assert held.status_code == 409 and held.get_json()["run_status"] == "loading"
    assert time.monotonic() - t0 >= 0.3
    threading.Timer(0.2, gate.set).start()
    t0 = time.monotonic()
    answered = client.get(url + "&wait_ms=10000")
    assert answered.status_code == 200, answered.get_data(as_text=True)
    assert time.monotonic() - t0 < 9
    assert answered.get_json() == client.get(url).get_json()
    assert client.get(url + "&wait_ms=10001").status_code == 400
