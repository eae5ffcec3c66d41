"""What the run picker names spans by (issue 36): the `runs` route's
`span_info` through the real TensorBoard app, on real traces, against the
trace JSON: Kineto's resnet50 sample (two spans of one worker, 2021: ids in
ms, timestamps in Unix µs), an H200 trace (one span, an id in ns,
timestamps after `baseTimeNanoseconds`) and a hand-named file whose id is no
time."""
from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from conftest import PLUGIN_PREFIX
from support.json_oracle import load_events

KINETO = Path(__file__).resolve().parents[3] / "shared" / "traces" / "kineto" / "resnet50_num_workers_0"
H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200" / "amp" / "baseline"
STEP = re.compile(r"^ProfilerStep#(\d+)$")

pytestmark = pytest.mark.skipif(not (KINETO.is_dir() and H200.is_dir()), reason="shared traces not found")


def _oracle(path: Path) -> dict:
    """Steps and the first step's start (Unix s) straight from the JSON."""
    doc, events = load_events(path)
    # Host annotations only (`user_annotation`, `Operator` in 2021): GPU traces repeat each step as a
    # `gpu_user_annotation`.
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "Operator")
             and STEP.match(str(e.get("name")))]
    numbers = [int(STEP.match(e["name"])[1]) for e in steps]
    base_s = doc.get("baseTimeNanoseconds", 0) / 1e9
    return {"steps": {"first": min(numbers), "last": max(numbers), "count": len(numbers)},
            "start_unix_s": min(float(e["ts"]) for e in steps) / 1e6 + base_s}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("spans")
    shutil.copytree(KINETO, root / "resnet")
    shutil.copytree(H200, root / "h200", ignore=shutil.ignore_patterns("pipeline"))
    (root / "handmade").mkdir()
    (root / "handmade" / "w.3.pt.trace.json").write_text(
        '{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, '
        '"ts": 10.0, "dur": 100.0}]}')
    return root


def _runs_until_read(client, timeout: float = 240) -> dict:
    """`runs` asked again while it says something is loading (the picker polls the same way)."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"{PLUGIN_PREFIX}/runs").get_json()
        if not body["loading"]:
            return {r["name"]: r for r in body["runs"]}
        assert time.monotonic() < deadline, body
        time.sleep(0.1)


def test_every_span_is_named_by_order_steps_and_start(logdir, make_tb_client):
    runs = _runs_until_read(make_tb_client(logdir))

    [worker] = runs["resnet"]["workers"]
    files = sorted(KINETO.glob("*.pt.trace.json.gz"))
    assert worker["spans"] == [f.name.split(".")[1] for f in files] == ["1623143089861", "1623143566756"]
    for order, (info, path) in enumerate(zip(worker["span_info"], files), start=1):
        want = _oracle(path)
        assert info["span"] == path.name.split(".")[1] and info["order"] == order
        # Both spans are read (a worker with several spans has them summarised for the picker).
        assert info["steps"] == want["steps"], (info, want)
        assert info["start_unix_s"] == pytest.approx(want["start_unix_s"], abs=1e-6)
        assert info["written_unix_s"] == int(info["span"]) / 1e3  # torch 1.x named files in ms
    assert [i["steps"]["first"] for i in worker["span_info"]] == [5, 16]

    [gpu] = runs["h200"]["workers"]
    [path] = H200.glob("*.pt.trace.json.gz")
    [info] = gpu["span_info"]
    want = _oracle(path)
    assert info["order"] == 1 and info["steps"] == want["steps"] == {"first": 6, "last": 8, "count": 3}
    assert info["start_unix_s"] == pytest.approx(want["start_unix_s"], abs=1e-6)
    # time.time_ns() when the file was written: after the first step started, within the run.
    assert info["written_unix_s"] == pytest.approx(int(info["span"]) / 1e9)
    assert 0 < info["written_unix_s"] - info["start_unix_s"] < 60

    [hand] = runs["handmade"]["workers"]
    # An id that is no time, and timestamps that name no time of day.
    assert hand["span_info"] == [{"span": "3", "order": 1, "written_unix_s": None, "start_unix_s": None,
                                  "steps": {"first": 1, "last": 1, "count": 1}}]


def test_the_overview_says_when_the_first_step_started(logdir, make_tb_client):
    from conftest import get_when_ready

    client = make_tb_client(logdir)
    files = sorted(KINETO.glob("*.pt.trace.json.gz"))
    overview = get_when_ready(client, f"overview?run=resnet&span={files[0].name.split('.')[1]}").get_json()
    assert overview["start_unix_s"] == pytest.approx(_oracle(files[0])["start_unix_s"], abs=1e-6)
    assert get_when_ready(client, "overview?run=handmade").get_json()["start_unix_s"] is None
