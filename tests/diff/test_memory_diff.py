"""diff/memory: where the peak went, through the real TensorBoard app.

A pair recorded here with torch.profiler(profile_memory=True): the
experimental model's head holds a 32 MiB scratch tensor for its whole
forward. The route must name that module and `aten::empty` first, with the
buffer's bytes; peaks and live bytes must equal an independent replay of the
JSON (tests/support/memory_oracle.py) on that pair and on every shared trace that
carries `[memory]` events; absent or broken memory events get a message.
"""
from __future__ import annotations

import re

import gzip
import os
import json
import shutil
import time
from pathlib import Path

import pytest

from support import memory_oracle as O
from tb_pipeline_plugin.byte_units import bytes_text
from conftest import PLUGIN_PREFIX, REPO_ROOT, wait_ready
from support.memory_runs import SCRATCH_BYTES, record_pair
from support.recordings import recording

SHARED = REPO_ROOT.parent / "shared" / "traces"


def _shared_with_memory() -> list[Path]:
    found = []
    for path in sorted(SHARED.rglob("*.json*")) if SHARED.is_dir() else []:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            if b'"[memory]"' in f.read():
                found.append(path)
    return found


SHARED_WITH_MEMORY = _shared_with_memory()
HOSTILE_EVENTS = [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0, "dur": 1000.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 10.0, "dur": 100.0},
    # A free of a block never allocated in the trace, a string address, an
    # address beyond 64 bits, no device type, a string size, a double allocation.
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 20.0,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": -64, "Total Allocated": 0, "Addr": 5}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 30.0,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": 128, "Total Allocated": 128, "Addr": "0x10"}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 40.0,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": 128, "Total Allocated": 256, "Addr": 2 ** 70}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 50.0,
     "args": {"Device Id": -1, "Bytes": 128, "Total Allocated": 384, "Addr": 7}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 60.0,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": "lots", "Total Allocated": 384, "Addr": 8}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 70.0,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64, "Total Allocated": 448, "Addr": 9}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 80.0,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64, "Total Allocated": 512, "Addr": 9}},
]


def _write_trace(logdir: Path, run: str, events: list) -> None:
    (logdir / run).mkdir()
    doc = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events}
    (logdir / run / "w.1.pt.trace.json").write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory_diff")
    record_pair(root)
    # A run recorded without profile_memory: the first steps of the hostile trace, no [memory] events.
    _write_trace(root, "no_memory", HOSTILE_EVENTS[:2])
    _write_trace(root, "hostile", HOSTILE_EVENTS)
    # Only [memory] events: no operators, no steps, a GPU device.
    _write_trace(root, "memory_only", [
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": float(t),
         "args": {"Device Type": 1, "Device Id": 0, "Bytes": b, "Total Allocated": total, "Total Reserved": 4096,
                  "Addr": addr}}
        for t, b, total, addr in ((1, 512, 512, 100), (2, 1024, 1536, 200), (3, -512, 1024, 100), (4, -256, 768, 300))])
    for i, path in enumerate(SHARED_WITH_MEMORY):
        (root / f"shared_{i}").mkdir()
        shutil.copy(path, root / f"shared_{i}" / f"w.1.pt.trace.json{'.gz' if path.suffix == '.gz' else ''}")
    return root


@pytest.fixture(scope="module")
def client(logdir):
    from werkzeug.test import Client

    from conftest import build_tb_app

    app, plugin = build_tb_app(logdir)
    c = Client(app)
    runs = ["mem_base", "mem_scratch", "no_memory", "hostile", "memory_only"] + [f"shared_{i}" for i in range(len(SHARED_WITH_MEMORY))]
    for run in runs:
        assert wait_ready(c, run, timeout=120)["status"] == "ready", run
    yield c
    plugin.close()


def _get(client, route: str, **params):
    # The store keeps a few parsed traces: an evicted run answers 409 while it loads again.
    deadline = time.monotonic() + 120
    while True:
        resp = client.get(f"{PLUGIN_PREFIX}/{route}", query_string=params)
        if resp.status_code != 409 or time.monotonic() > deadline:
            return resp
        time.sleep(0.05)


def diff_memory(client, baseline: str, experimental: str) -> dict:
    resp = _get(client, "diff/memory", baseline=baseline, experimental=experimental)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def _trace(logdir: Path, run: str) -> str:
    (path,) = (logdir / run).glob("*.pt.trace.json*")
    return str(path)


def test_names_the_module_holding_the_scratch_buffer(client):
    out = diff_memory(client, "mem_base", "mem_scratch")
    assert out["message"] is None and out["device"] == "CPU"
    (cpu,) = out["devices"]
    assert cpu["basis"] == "blocks"
    top = cpu["by_module"][0]
    assert top["key"].endswith("Head_0") and top["phase"] == "forward" and top["detail"] == "aten::empty", top
    assert top["delta_bytes"] == pytest.approx(SCRATCH_BYTES, rel=0.05)
    op = cpu["by_operator"][0]
    assert (op["key"], op["phase"]) == ("aten::empty", "forward") and op["detail"].endswith("Head_0"), op
    assert op["delta_bytes"] == pytest.approx(SCRATCH_BYTES, rel=0.05)
    assert cpu["growth_bytes"] == pytest.approx(SCRATCH_BYTES, rel=0.05)
    # The buffer lives within one forward: its lifetime spans less than the step.
    (start, end), *_ = top["experimental_lifetimes"]
    assert 0 <= start < end <= cpu["experimental_curve"]["duration_us"]
    assert "memory_runs.py" in top["call_path"]
    sentence = out["sentence"]
    # The sentence states the measured growth (≈ the 32 MiB buffer, above), in the unit every surface prints:
    # a few KiB of other allocations at either peak make it read "31.99 MiB" on some recordings.
    assert sentence.startswith(f"Experimental's CPU peak is {bytes_text(cpu['growth_bytes'])} higher"), sentence
    assert "of it is Net_0/Head_0 (aten::empty, alive for" in sentence and "of each forward" in sentence, sentence
    # Every step's peak carries the buffer.
    for s in cpu["steps"]:
        assert s["experimental_peak_bytes"] - s["baseline_peak_bytes"] == pytest.approx(SCRATCH_BYTES, rel=0.05)


def test_rows_sum_to_each_peak_and_the_reverse_pair_mirrors(client):
    fwd = diff_memory(client, "mem_base", "mem_scratch")["devices"][0]
    rev = diff_memory(client, "mem_scratch", "mem_base")["devices"][0]
    for d in (fwd, rev):
        for side in ("baseline", "experimental"):
            assert sum(r[f"{side}_bytes"] for r in d["by_module"]) == d[side]["peak_bytes"]
            assert sum(r[f"{side}_bytes"] for r in d["by_operator"]) == d[side]["peak_bytes"]
    assert rev["growth_bytes"] == -fwd["growth_bytes"]
    assert rev["by_module"][0]["key"] == fwd["by_module"][0]["key"]


@pytest.mark.parametrize("run", ["mem_base", "mem_scratch", *[f"shared_{i}" for i in range(len(SHARED_WITH_MEMORY))]])
def test_peak_and_live_bytes_equal_the_json_replay(client, logdir, run):
    oracle = O.replay(O.load(_trace(logdir, run)))
    out = diff_memory(client, run, run)
    assert {d["device"] for d in out["devices"]} == set(oracle)
    for d in out["devices"]:
        o, peak = oracle[d["device"]], d["baseline"]
        assert peak["peak_bytes"] == o["peak_bytes"], d["device"]
        assert d["growth_bytes"] == 0
        tracked = sum(r["baseline_bytes"] for r in d["by_module"]) - peak["before_window_bytes"]
        if o["has_addr"]:
            assert d["basis"] == "blocks"
            assert tracked == o["live_bytes"]
            assert peak["before_window_bytes"] == o["peak_bytes"] - o["live_bytes"]
        else:
            # No addresses: the level held when the peak's step began, and the net allocation since.
            assert d["basis"] == "net"
            assert peak["before_window_bytes"] == o["held_at_step_start"]
            assert tracked == o["peak_bytes"] - o["held_at_step_start"]


@pytest.mark.parametrize("run", [f"shared_{i}" for i in range(len(SHARED_WITH_MEMORY))])
def test_kineto_2021_call_stacks_give_call_paths(client, logdir, run):
    """2021 traces record each operator's Python stack as its `Call stack`: the
    rows' call paths are its frames outside torch, innermost first."""
    doc = O.load(_trace(logdir, run))
    stacks = {e["args"]["Call stack"] for e in doc["traceEvents"] if isinstance(e.get("args"), dict)
              and isinstance(e["args"].get("Call stack"), str)}
    rows = [r for d in diff_memory(client, run, run)["devices"] for r in d["by_operator"] if r["call_path"]]
    assert rows if stacks else not rows
    for r in rows:
        frames = r["call_path"].split(" ← ")
        assert not any(f.startswith("torch/") for f in frames), r
        # Each frame is one of a recorded stack's (its path cut after site-packages/).
        assert any(all(f in stack for f in frames) for stack in stacks), r


def test_live_blocks_by_operator_equal_the_replay(client, logdir):
    doc = O.load(_trace(logdir, "mem_scratch"))
    (o,) = O.replay(doc).values()
    expected: dict[str, int] = {}
    for event, size in o["live"]:
        name = O.innermost_op(doc, event)
        expected[name] = expected.get(name, 0) + size
    rows = diff_memory(client, "mem_scratch", "mem_scratch")["devices"][0]["by_operator"]
    got: dict[str, int] = {}
    for r in rows:
        if r["key"] != "before the window" and r["baseline_bytes"]:
            got[r["key"]] = got.get(r["key"], 0) + r["baseline_bytes"]
    assert got == expected


def test_absent_memory_events_get_a_message(client):
    from tb_pipeline_plugin.record.profiling import parse_schedule

    for (b, e), who in zip((("no_memory", "mem_scratch"), ("mem_base", "no_memory"), ("no_memory", "no_memory")),
                           ("The baseline run's trace has no memory events", "The experimental run's trace has no "
                            "memory events", "Neither run's trace has memory events")):
        out = diff_memory(client, b, e)
        assert out["devices"] == [] and out["sentence"] == ""
        message = out["message"]
        # Says whose trace lacks them, in one negation, then the command that records them and its cost.
        assert message.startswith(f"{who}: "), message
        negations = len(re.findall(r"\b(?:no|not|neither|never|nor)\b", message.split(":")[0], re.I))
        assert negations == 1, message
        commands = re.findall(r"`(tb-pipeline record [^`]*)`", message)
        assert commands and commands[0].startswith("tb-pipeline record --profile memory=1 -- "), message
        # Every schedule the message quotes is one `record --profile` accepts, with memory on.
        for spec in re.findall(r"`(?:tb-pipeline record )?--profile ([^`\s]+)", message):
            assert parse_schedule(spec)["memory"] == 1, spec
        assert "20-30 % longer" in message and "a fifth larger" in message


def test_hostile_memory_events_are_answered(client):
    out = diff_memory(client, "hostile", "mem_scratch")
    (cpu,) = out["devices"]
    # Unusable addresses: no free can be paired, so the split is the net one.
    assert cpu["basis"] == "net" and cpu["baseline"]["peak_bytes"] == 512
    resp = _get(client, "overview", run="hostile")
    assert resp.status_code == 200
    assert any("[memory]" in w for w in resp.get_json()["warnings"])


def test_a_trace_of_memory_events_alone(client):
    out = diff_memory(client, "memory_only", "mem_scratch")
    gpu = next(d for d in out["devices"] if d["device"] == "GPU 0")
    assert gpu["experimental"] is None and gpu["baseline"]["peak_bytes"] == 1536
    assert gpu["baseline"]["step"] is None and gpu["baseline"]["frees_before_window"] == 1
    # Live at the peak: both blocks, allocated outside any operator; the 256 B freed later came from
    # before, none of it alive at the peak (so no "before the window" row: the peak's field says 0).
    assert [(r["key"], r["baseline_bytes"]) for r in gpu["by_module"]] == [("(outside operators)", 1536)]
    assert gpu["baseline"]["before_window_bytes"] == 0
    # No device in common: the sentence is about the experimental run's.
    # Its peak is the 32 MiB scratch buffer plus whatever else the recording had alive then (a few
    # hundred KB, more when the recording ran at another moment of the allocator's life).
    assert out["device"] == "CPU"
    said = re.fullmatch(r"Only the experimental run has memory events on CPU \(peak ([0-9.]+) MiB\)\.", out["sentence"])
    assert said and 32 <= float(said[1]) < 32 * 1.05, out["sentence"]
    # The sentence's number is the route's peak in MiB (2^20 B), as the frontend prints it.
    peak = next(d for d in out["devices"] if d["device"] == "CPU")["experimental"]["peak_bytes"]
    assert said[1] == f"{peak / 2**20:.2f}".rstrip("0").rstrip("."), (said[1], peak)
    assert gpu["baseline_curve"]["peak_bytes"] == 1536


def test_cli_and_compare_say_the_same_sentence(client, logdir, capsys):
    from tb_pipeline_plugin.cli import main
    from tb_pipeline_plugin.compare import compare

    route = diff_memory(client, "mem_base", "mem_scratch")["sentence"]
    c = compare(str(logdir / "mem_base"), str(logdir / "mem_scratch"))
    assert c.memory["sentence"] == route
    assert c.memory_rows["key"].iloc[0].endswith("Head_0")
    capsys.readouterr()
    assert main(["diff", str(logdir / "mem_base"), str(logdir / "mem_scratch")]) == 0
    assert f"Memory: {route}" in capsys.readouterr().out


def test_steady_state_split_sums_to_the_overview_average(logdir):
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    path = _trace(logdir, "mem_scratch")
    tp = TraceProcessor.load(path)
    d, overview = tp.memory().main_device(), tp.overview()["memory"]
    assert d.peak_bytes == overview["peak_bytes"]
    assert d.steady["avg_bytes"].sum() == pytest.approx(overview["avg_bytes"], rel=1e-9)
    # The scratch blocks' share of the average, from the JSON: bytes x lifetime / window.
    doc = O.load(path)
    steps = [e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"]
    t0, t1 = min(e["ts"] for e in steps), max(e["ts"] + e["dur"] for e in steps)
    allocs: dict = {}
    share = 0.0
    for e in sorted(O.memory_events(doc), key=lambda e: e["ts"]):
        a = e["args"]
        if a["Bytes"] == SCRATCH_BYTES:
            allocs[a["Addr"]] = e["ts"]
        elif a["Bytes"] == -SCRATCH_BYTES and a["Addr"] in allocs:
            start = allocs.pop(a["Addr"])
            share += SCRATCH_BYTES * (min(e["ts"], t1) - max(start, t0)) / (t1 - t0)
    row = d.steady[(d.steady["operator"] == "aten::empty") & d.steady["part"].str.endswith("Head_0")]
    assert share > 0 and row["avg_bytes"].sum() == pytest.approx(share, rel=1e-6)


# A training loop as a user writes it, with no profiler: `tb-pipeline record --profile memory=1` brings one.
LAUNCHED_SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(TensorDataset(torch.randn(96, 64), torch.randn(96, 1)), batch_size=8):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
"""


@recording()
def launched_memory_pair(out: Path) -> None:
    """LAUNCHED_SCRIPT through `tb-pipeline record --profile memory=1` twice, runs a and b of `out/logs`."""
    import subprocess
    import sys

    (out / "train.py").write_text(LAUNCHED_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for run in ("a", "b"):
        done = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", "logs", "--run", run,
                               "--host-interval", "0", "--profile", "memory=1", "--", sys.executable, "train.py"],
                              cwd=out, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]


def test_call_paths_name_the_users_code_not_the_recorders(tmp_path):
    """Through the launcher the recorder's DataLoader wrapper is on every step's stack; a call path
    points at the user's script only (the way the Memory tab's empty state says to record)."""
    import subprocess
    import sys

    from tb_pipeline_plugin.compare import compare

    launched_memory_pair.copy_to(tmp_path)
    memory = compare(tmp_path / "logs" / "a", tmp_path / "logs" / "b").memory
    rows = [r for d in memory["devices"] for key in ("by_module", "by_operator") for r in d[key]]
    paths = [r["call_path"] for r in rows if r["call_path"]]
    assert paths and all("train.py" in p for p in paths), paths
    assert not [p for p in paths if "tb_pipeline_plugin/" in p], paths
