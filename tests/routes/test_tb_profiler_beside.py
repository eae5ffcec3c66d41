"""torch-tb-profiler and our plugin in one TensorBoard process on one logdir.

The real TensorBoardWSGI app with both plugins (as `tensorboard --logdir`
builds it when both are installed) over a copy of the recorded runs plus
files that exercise torch-tb-profiler's own naming: a worker with two spans
whose string order differs from their numeric order, and a trace directly
in the logdir without a timestamp. The oracle for our `profiler_link` route is
torch-tb-profiler itself: its `trace` route, asked with the names we give,
must answer the very file we resolved.
"""
from __future__ import annotations

import gzip
import json
import shutil
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import PLUGIN_PREFIX, build_tb_app

pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler not installed (pip install .[profiler])")

THEIRS = "/data/plugin/pytorch_profiler"
# "1700000000000" < "999" as strings: their span index follows string order.
SPANS = ("999", "1700000000000")


@pytest.fixture(scope="module")
def both_logdir(recorded_logdir, tmp_path_factory) -> Path:
    logdir = tmp_path_factory.mktemp("beside") / "beside_logdir"
    shutil.copytree(recorded_logdir, logdir)
    two = logdir / "two_spans"
    two.mkdir()
    # Different content per span, so an answer proves which file was served.
    shutil.copy(_trace_of(logdir / "baseline"), two / f"w.{SPANS[0]}.pt.trace.json")
    shutil.copy(_trace_of(logdir / "experimental"), two / f"w.{SPANS[1]}.pt.trace.json")
    shutil.copy(_trace_of(logdir / "slow_loader"), logdir / "rootw.pt.trace.json")
    # A Composer job (tests/data/composer): one run of ours, theirs is its torch_traces folder.
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "composer" / "baseline", logdir / "composer_job")
    return logdir


def _trace_of(run_dir: Path) -> Path:
    (path,) = [p for p in run_dir.iterdir() if p.name.endswith((".pt.trace.json", ".pt.trace.json.gz"))]
    return path


@pytest.fixture(scope="module")
def both_client(both_logdir):
    """One TensorBoard app with both plugins, as TensorBoard's loader makes them."""
    from tensorboard.backend import application
    from torch_tb_profiler.plugin import TorchProfilerPlugin
    from werkzeug.test import Client

    app, ours = build_tb_app(both_logdir, extra_plugins=[TorchProfilerPlugin])
    client = Client(app)
    yield client
    ours.close()


def _their_runs(client, want: set[str], timeout_s: float = 240) -> list[str]:
    """Polls their `runs` until every run in `want` is listed and loading is over."""
    deadline = time.monotonic() + timeout_s
    while True:
        resp = client.get(f"{THEIRS}/runs")
        assert resp.status_code == 200, resp.get_data(as_text=True)
        body = resp.get_json()
        if want <= set(body["runs"]) and not body["loading"]:
            return body["runs"]
        if time.monotonic() > deadline:
            pytest.fail(f"torch-tb-profiler did not list {sorted(want)} in {timeout_s} s: {body}")
        time.sleep(0.5)


def _profiler_link(client, **params) -> dict:
    resp = client.get(f"{PLUGIN_PREFIX}/profiler_link?{urlencode(params)}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def _their_trace(client, names: dict) -> bytes:
    resp = client.get(f"{THEIRS}/trace?{urlencode(names)}")
    assert resp.status_code == 200, (names, resp.get_data()[:300])
    assert resp.headers["Content-Encoding"] == "gzip"
    return gzip.decompress(resp.get_data())


def test_both_plugins_listed_and_answer(both_client, both_logdir, wait_ready):
    listing = both_client.get("/data/plugins_listing")
    assert listing.status_code == 200
    plugins = listing.get_json()
    assert {"tb_pipeline", "pytorch_profiler"} <= set(plugins), plugins
    assert plugins["tb_pipeline"]["enabled"]

    ours = both_client.get(f"{PLUGIN_PREFIX}/runs").get_json()
    our_runs = {r["name"] for r in ours["runs"]}
    assert {"baseline", "experimental", "slow_loader", "two_spans", "."} <= our_runs

    root_name = both_logdir.name
    theirs = _their_runs(both_client, {"baseline", "experimental", "slow_loader", "two_spans", root_name})
    # Same runs, theirs naming the logdir-level run after the directory and
    # the Composer job's run after the folder of its torch traces.
    assert sorted(theirs) == sorted((our_runs - {".", "composer_job"}) | {root_name, "composer_job/torch_traces"})
    # Theirs is listed from the start but enabled only once it has found runs:
    # our UI detects it by presence in the listing, not by `enabled`.
    assert both_client.get("/data/plugins_listing").get_json()["pytorch_profiler"]["enabled"]

    # Each answers its own routes on the same run, in the same process.
    for run in ("baseline", "experimental"):
        assert wait_ready(both_client, run)["status"] == "ready"
        overview = both_client.get(f"{PLUGIN_PREFIX}/overview?run={run}")
        assert overview.status_code == 200, overview.get_data(as_text=True)
        names = _profiler_link(both_client, run=run)["profiler"]
        for route in ("overview", "operation/table", "kernel/table"):
            q = urlencode({**names, "group_by": "Operation" if route.startswith("operation") else "Kernel"})
            resp = both_client.get(f"{THEIRS}/{route}?{q}")
            assert resp.status_code == 200, (route, resp.get_data()[:300])
        # Both count the same profiler steps (their x axis labels are step numbers).
        their_steps = json.loads(both_client.get(f"{THEIRS}/overview?{urlencode(names)}").get_data())["steps"]["rows"]
        assert len(their_steps) == len(overview.get_json()["steps"])


def test_timeline_names_are_theirs(both_client, both_logdir):
    _their_runs(both_client, {"two_spans", both_logdir.name})
    # Every trace we list: the names we give reach the same file in theirs.
    runs = both_client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]
    checked = 0
    for run in runs:
        for worker in run["workers"]:
            for span in worker["spans"]:
                answer = _profiler_link(both_client, run=run["name"], worker=worker["name"], span=span)
                assert {k: answer[k] for k in ("run", "worker", "span")} == {"run": run["name"], "worker": worker["name"], "span": span}
                path = _file_of(both_logdir, run["name"], worker["name"], span)
                raw = path.read_bytes()
                assert _their_trace(both_client, answer["profiler"]) == (
                    gzip.decompress(raw) if path.suffix == ".gz" else raw
                ), (run["name"], worker["name"], span, answer["profiler"])
                checked += 1
    assert checked == 8  # with the Composer job's two spans
    assert _profiler_link(both_client, run="composer_job", span="9")["profiler"]["run"] == "composer_job/torch_traces"

    two = {s: _profiler_link(both_client, run="two_spans", worker="w", span=s)["profiler"]["span"] for s in SPANS}
    assert two == {"1700000000000": "1", "999": "2"}
    root = _profiler_link(both_client, run=".")["profiler"]
    assert root == {"run": both_logdir.name, "worker": "rootw", "span": "default"}


def _file_of(logdir: Path, run: str, worker: str, span: str) -> Path:
    run_dir = logdir if run == "." else logdir / run
    stem = worker if run == "." else f"{worker}.{span}"
    files = run_dir.iterdir() if run == "." else run_dir.rglob("*")  # a Composer job's traces are a folder down
    (path,) = [p for p in files if p.is_file() and p.name.startswith(stem + ".pt.trace.json")]
    return path


def test_timeline_bad_input(both_client, both_logdir):
    assert both_client.get(f"{PLUGIN_PREFIX}/profiler_link").status_code == 400
    assert both_client.get(f"{PLUGIN_PREFIX}/profiler_link?run=nope").status_code == 404
    resp = both_client.get(f"{PLUGIN_PREFIX}/profiler_link?run=baseline&worker=nobody")
    assert resp.status_code == 404 and "nobody" in resp.get_json()["error"]


def test_generic_trace_has_no_counterpart(make_tb_client, recorded_logdir, tmp_path):
    """A generic Chrome trace (not *.pt.trace.json) is ours only: a clear 404, not a wrong link."""
    run = tmp_path / "generic"
    run.mkdir()
    shutil.copy(_trace_of(recorded_logdir / "baseline"), run / "host.json")
    client = make_tb_client(tmp_path)
    resp = client.get(f"{PLUGIN_PREFIX}/profiler_link?run=generic")
    assert resp.status_code == 404
    assert "torch-tb-profiler reads only" in resp.get_json()["error"]


def test_timeline_pages_served(both_client):
    html = both_client.get(f"{PLUGIN_PREFIX}/profiler.html")
    assert html.status_code == 200
    assert html.headers["X-Content-Type-Options"] == "nosniff"
    assert html.mimetype == "text/html"
    body = html.get_data(as_text=True)
    assert '<script type="module" src="profiler.js"></script>' in body
    # Nothing but our own script: no inline code, nothing from the network.
    assert body.count("<script") == 1 and "http" not in body.split("-->", 1)[1]
