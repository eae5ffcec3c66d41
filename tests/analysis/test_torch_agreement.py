"""Numbers that agree with torch and torch-tb-profiler.

Small traces written here in Kineto's shape (one case each), read through
the real TensorBoard app; kineto's own 2021 resnet50 samples checked against
torch's rules re-implemented on the JSON (json_oracle.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PLUGIN_PREFIX, wait_ready
from support.json_oracle import load_events, operator_key_averages, step_windows

KINETO_SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "traces" / "kineto"
DEVICE_PROPERTIES = [{"id": 0, "name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16 << 30,
                      "computeMajor": 7, "computeMinor": 0}]


# ------------------------------------------------------------ trace builders


def x(name, cat, ts, dur, tid=1, pid=1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def op(name, ts, dur, ext, tid=1, cat="cpu_op") -> dict:
    return x(name, cat, ts, dur, tid, **{"External id": ext})


def step(n, ts, dur, cat="user_annotation") -> dict:
    return x(f"ProfilerStep#{n}", cat, ts, dur)


def launch(ts, corr, ext=None, tid=1, dur=2) -> dict:
    args = {"correlation": corr, **({"External id": ext} if ext is not None else {})}
    return x("cudaLaunchKernel", "cuda_runtime", ts, dur, tid, **args)


def kernel(name, ts, dur, corr) -> dict:
    return x(name, "kernel", ts, dur, tid=7, pid=0, device=0, stream=7, correlation=corr)


def memory(ts, delta, device_type=1, device_id=0, **totals) -> dict:
    """A `[memory]` instant as Kineto wrote it from mid-2021 to spring 2022: no `cat`."""
    args = {"Device Type": device_type, "Device Id": device_id, "Bytes": delta}
    args.update({{"total": "Total Allocated", "reserved": "Total Reserved"}[k]: v for k, v in totals.items()})
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args}


def write_run(logdir: Path, run: str, events: list[dict]) -> None:
    """One event per line, like Kineto writes them (device properties when it ran kernels)."""
    (logdir / run).mkdir(parents=True)
    gpu = any(e.get("cat") == "kernel" for e in events)
    meta = {"schemaVersion": 1, **({"deviceProperties": DEVICE_PROPERTIES} if gpu else {})}
    head = json.dumps(meta)[:-1] + ', "traceEvents": [\n'
    body = ",\n".join("  " + json.dumps(e) for e in events)
    (logdir / run / "worker0.1.pt.trace.json").write_text(head + body + "\n]}")


def get(client, route: str) -> dict:
    resp = client.get(f"{PLUGIN_PREFIX}/{route}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


@pytest.fixture
def serve(tmp_path, make_tb_client):
    """serve({run: events}) -> a client over a logdir with those runs, all loaded."""

    def make(runs: dict[str, list[dict]]):
        for run, events in runs.items():
            write_run(tmp_path, run, events)
        client = make_tb_client(tmp_path)
        for run in runs:
            assert wait_ready(client, run)["status"] == "ready"
        return client

    return make


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


# ------------------------------------------------------------ 1. same-name nesting


def test_same_name_nested_operators_are_folded_like_key_averages(serve):
    events = [
        step(1, 0, 100),
        # aten::div > aten::div (only child) > launch: folded, kernel lifted.
        op("aten::div", 10, 20, 1), op("aten::div", 11, 15, 2), launch(12, 100, ext=2),
        kernel("div_kernel", 40, 6, 100),
        # A chain of three: all fold into the top one.
        op("aten::sum", 40, 20, 3), op("aten::sum", 41, 18, 4), op("aten::sum", 42, 16, 5),
        op("aten::empty", 43, 2, 6), launch(46, 101, ext=5), kernel("sum_kernel", 50, 4, 101),
        # aten::add > aten::add beside another child: not folded.
        op("aten::add", 70, 20, 7), op("aten::add", 71, 10, 8), launch(72, 102, ext=8),
        op("aten::empty", 85, 2, 9), kernel("add_kernel", 80, 3, 102),
    ]
    client = serve({"run": events})
    got = by_name(get(client, "operators?run=run")["rows"])
    expected = {
        "aten::div": dict(calls=1, host_total_us=20, host_self_us=18, device_self_us=6, device_total_us=6),
        "aten::sum": dict(calls=1, host_total_us=20, host_self_us=16, device_self_us=4, device_total_us=4),
        "aten::add": dict(calls=2, host_total_us=30, host_self_us=16, device_self_us=3, device_total_us=6),
        "aten::empty": dict(calls=2, host_total_us=4, host_self_us=4, device_self_us=0, device_total_us=0),
    }
    # By hand, and by torch's rule run on the JSON.
    assert operator_key_averages(events) == expected
    assert {name: {k: row[k] for k in expected[name]} for name, row in got.items()} == expected
    # The module diff counts the same calls.
    diff = get(client, "diff/modules?baseline=run&experimental=run&path=0")
    assert diff["node"]["baseline_calls"] == sum(r["calls"] for r in expected.values())


# ------------------------------------------------------------ 2. launches on another thread


def test_launch_on_another_thread_follows_an_unambiguous_external_id(serve):
    events = [
        step(1, 0, 100),
        op("aten::mm", 10, 30, 11),
        launch(15, 200, ext=11, tid=2),  # no operator around it on its own thread
        kernel("gemm", 20, 8, 200),
        # External id 12 names two operators: fall back to the enclosing one.
        op("aten::copy_", 50, 5, 12), op("aten::copy_", 50, 5, 12, tid=3),
        op("aten::to", 51, 4, 13, tid=2), launch(52, 201, ext=12, tid=2),
        kernel("copy_kernel", 60, 5, 201),
    ]
    client = serve({"run": events})
    ops = by_name(get(client, "operators?run=run")["rows"])
    assert ops["aten::mm"]["device_self_us"] == 8
    assert ops["aten::to"]["device_self_us"] == 5
    assert ops["aten::copy_"]["device_self_us"] == 0
    kernels = get(client, "kernels?run=run")["rows"]
    assert sum(r["device_self_us"] for r in ops.values()) == sum(k["total_us"] for k in kernels) == 13


# ------------------------------------------------------------ 3. CPU collectives


def test_gloo_is_communication_with_and_without_gpu_activity(serve):
    gloo = x("gloo:all_reduce", "user_annotation", 40, 30)
    gpu_events = [
        step(1, 0, 100), gloo,
        op("aten::mm", 5, 10, 1), launch(6, 300, ext=1), kernel("volta_sgemm", 10, 20, 300),
        # NCCL's host call only enqueues its kernel: the kernel is the communication.
        x("nccl:all_reduce", "user_annotation", 75, 10), launch(76, 301),
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 80, 15, 301),
    ]
    cpu_events = [step(1, 0, 100), gloo, op("aten::mm", 5, 10, 1)]
    client = serve({"gpu": gpu_events, "cpu": cpu_events})
    gpu = get(client, "overview?run=gpu")
    assert gpu["device"]["type"] == "GPU"
    assert gpu["breakdown_us"]["communication"] == 30 + 15
    assert gpu["breakdown_us"]["kernel"] == 20
    cpu = get(client, "overview?run=cpu")
    assert cpu["device"]["type"] == "CPU"
    assert cpu["breakdown_us"]["communication"] == 30
    assert cpu["breakdown_us"]["cpu_exec"] == 10


# ------------------------------------------------------------ 4. memory events without `cat`


def test_memory_events_without_category(serve):
    ops = [step(1, 0, 100), op("aten::empty", 5, 50, 1)]
    with_totals = [memory(10, 100, total=1100, reserved=2048), memory(20, 50, total=1150, reserved=2048),
                   memory(30, -100, total=1050, reserved=2048), memory(40, -200, total=850, reserved=2048)]
    bytes_only = [memory(10, 100), memory(20, 50), memory(30, -100), memory(40, -200),
                  {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 50, "args": {}}]
    client = serve({"totals": ops + with_totals, "bytes": ops + bytes_only})

    totals = get(client, "overview?run=totals")
    assert totals["warnings"] == []
    assert totals["memory"]["device"] == "GPU 0"
    assert totals["memory"]["peak_bytes"] == 1150
    assert totals["memory"]["devices"][0]["peak_reserved_bytes"] == 2048
    # 1000 before the first event, then 1100, 1150, 1050, 850 until the step's end.
    assert totals["memory"]["avg_bytes"] == pytest.approx((1000 * 10 + 1100 * 10 + 1150 * 10 + 1050 * 10 + 850 * 60) / 100)

    rebuilt = get(client, "overview?run=bytes")
    # Running sum 100, 150, 50, -150: at least 150 bytes were held before the trace.
    assert rebuilt["memory"]["peak_bytes"] == 300
    assert rebuilt["memory"]["avg_bytes"] == pytest.approx((150 * 10 + 250 * 10 + 300 * 10 + 200 * 10) / 100)
    assert rebuilt["memory"]["devices"][0]["peak_reserved_bytes"] is None
    warnings = rebuilt["warnings"]
    assert len(warnings) == 2
    assert any(w.startswith("4 `[memory]` events have no `Total Allocated`") for w in warnings)
    assert any(w.startswith("1 `[memory]` events without `Device Type`") for w in warnings)


# ------------------------------------------------------------ 5. DataPipe / DataLoader2 / StatefulDataLoader


def _loader_steps(cat: str) -> list[dict]:
    return [
        step(1, 0, 100, cat),
        x("enumerate(DataPipe)#ShufflerIterDataPipe", cat, 5, 20),
        x("enumerate(DataPipe)#MapperIterDataPipe", cat, 6, 14),
        op("aten::add", 30, 10, 1, cat=cat.replace("user_annotation", "cpu_op")),
        step(2, 100, 100, cat),
        x("enumerate(DataLoader)#_StatefulSingleProcessDataLoaderIter.__next__", cat, 105, 30),
        op("aten::add", 140, 10, 2, cat=cat.replace("user_annotation", "cpu_op")),
    ]


def test_datapipe_and_stateful_loader_iteration_is_data_loading(serve):
    # Current Kineto files them as user annotations, 2021 Kineto as `Operator`.
    client = serve({"now": _loader_steps("user_annotation"), "old": _loader_steps("Operator")})
    for run in ("now", "old"):
        ov = get(client, f"overview?run={run}")
        assert [s["breakdown_us"]["data_loading"] for s in ov["steps"]] == [20, 30]
        assert [r["name"] for r in get(client, f"operators?run={run}")["rows"]] == ["aten::add"]
    level = get(client, "diff/modules?baseline=now&experimental=old&path=0")
    loaders = [c for c in level["children"] if c["kind"] == "data_loading"]
    assert [(c["name"], c["key"], c["status"]) for c in loaders] == [
        ("enumerate(DataPipe)#ShufflerIterDataPipe", "enumerate(DataPipe)", "matched")]
    assert loaders[0]["baseline_host_us"] == 20
    level = get(client, "diff/modules?baseline=now&experimental=old&path=1")
    assert [c["key"] for c in level["children"] if c["kind"] == "data_loading"] == ["enumerate(DataLoader)"]


# ------------------------------------------------------------ (a) work launched before the first step


def _pre_step_trace(pre_kernel_end: float) -> list[dict]:
    return [
        op("aten::copy_", 0, 6, 1), launch(1, 1, ext=1), kernel("copy_kernel", 5, pre_kernel_end - 5, 1),
        step(1, 10, 20), op("aten::mm", 12, 6, 2), launch(13, 2, ext=2), kernel("gemm", 21, 19, 2),
        step(2, 30, 20), op("aten::mm", 32, 6, 3), launch(33, 3, ext=3), kernel("gemm", 41, 4, 3),
    ]


@pytest.mark.parametrize("pre_kernel_end, step1_start", [
    (20, 20),  # still running when step 1 starts: step 1 starts when it ends
    (35, 21),  # overlaps step 1's own kernel: step 1 starts at its first kernel
    (8, 10),  # ended before step 1: no effect
])
def test_device_work_launched_before_the_first_step(serve, pre_kernel_end, step1_start):
    events = _pre_step_trace(pre_kernel_end)
    client = serve({"run": events})
    steps = get(client, "overview?run=run")["steps"]
    # Step 1 ends with its kernel (40); step 2 starts there and ends with its annotation (50).
    assert [(s["start_us"], s["duration_us"]) for s in steps] == [(0, 40 - step1_start), (40 - step1_start, 10)]
    assert [(name, start, end) for name, start, end in step_windows(events)] == [
        ("ProfilerStep#1", step1_start, 40), ("ProfilerStep#2", 40, 50)]


# ------------------------------------------------------------ (b) trailing steps without device work


def _three_steps(last_has_kernel: bool, gpu: bool = True) -> list[dict]:
    events = []
    for n in range(3):
        t0 = 100 * n
        events += [step(n + 1, t0, 100), op("aten::mm", t0 + 10, 20, n + 1)]
        if gpu and (n < 2 or last_has_kernel):
            events += [launch(t0 + 12, n + 1, ext=n + 1), kernel("gemm", t0 + 20, 30, n + 1)]
    return events


def test_trailing_steps_without_device_work_are_kept_and_said(serve):
    client = serve({"lost": _three_steps(False), "full": _three_steps(True), "cpu": _three_steps(False, gpu=False)})
    lost = get(client, "overview?run=lost")
    assert [s["name"] for s in lost["steps"]] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert lost["steps"][2]["duration_us"] == 100
    assert lost["warnings"] == [
        "the last 1 step(s) (ProfilerStep#3) launched no device work although earlier steps did "
        "(the profiler may have lost their kernels); they are kept, with their host time only "
        "(torch-tb-profiler leaves them out)"
    ]
    assert get(client, "overview?run=full")["warnings"] == []
    assert get(client, "overview?run=cpu")["warnings"] == []


# ------------------------------------------------------------ kineto's 2021 resnet50 samples


KINETO_FILES = sorted(str(p.relative_to(KINETO_SAMPLES)) for p in KINETO_SAMPLES.glob("*/*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def kineto_samples():
    if not KINETO_FILES:
        pytest.skip(f"kineto samples not found at {KINETO_SAMPLES}")
    return KINETO_SAMPLES


def _running_level(mem: list[dict], t0: float, t1: float) -> tuple[float, float]:
    """(peak, time-weighted mean) over [t0, t1] of allocated bytes rebuilt
    from `Bytes`: running sum, raised so it never goes below zero."""
    levels, running = [], 0
    for e in mem:
        running += e["args"]["Bytes"]
        levels.append((e["ts"], running))
    base = max(0, -min(level for _, level in levels))
    before = [level for ts, level in levels if ts <= t0]
    at_t0 = base + (before[-1] if before else 0)
    inside = [(ts, base + level) for ts, level in levels if t0 < ts <= t1]
    peak = max([at_t0] + [level for _, level in inside])
    area, last_ts, last = 0.0, t0, at_t0
    for ts, level in inside:
        area += last * (ts - last_ts)
        last_ts, last = ts, level
    area += last * (t1 - last_ts)
    return peak, area / (t1 - t0)


@pytest.mark.parametrize("rel", KINETO_FILES)
def test_kineto_2021_resnet50_samples(kineto_samples, rel, tmp_path, make_tb_client):
    path = kineto_samples / rel
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / path.name).write_bytes(path.read_bytes())
    client = make_tb_client(tmp_path)
    assert wait_ready(client, "run")["status"] == "ready"
    _, events = load_events(path)

    # Operators: torch's rule run on the JSON. aten::div nests an aten::div
    # in the model's normalisation six times.
    expected = operator_key_averages(events)
    ops = by_name(get(client, "operators?run=run")["rows"])
    aten = {name for name in expected if name.startswith("aten::")}
    assert aten and aten <= set(ops)
    for name in aten:
        for column, value in expected[name].items():
            assert ops[name][column] == pytest.approx(value, rel=1e-9, abs=1e-6), (name, column)
    raw_div = sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "aten::div")
    assert ops["aten::div"]["calls"] == expected["aten::div"]["calls"] < raw_div
    if rel.startswith("resnet50_num_workers_0/"):
        # What torch-tb-profiler shows for it (204 calls / 288 µs before folding).
        assert (ops["aten::div"]["calls"], ops["aten::div"]["device_total_us"]) == (198, 144) and raw_div == 204

    # Memory: `[memory]` events without `cat` or totals, rebuilt from `Bytes`.
    ov = get(client, "overview?run=run")
    windows = step_windows(events)
    t0, t1 = windows[0][1], windows[-1][2]
    mem = sorted((e for e in events if e.get("name") == "[memory]" and "cat" not in e), key=lambda e: e["ts"])
    assert mem
    devices = {d["device"]: d for d in ov["memory"]["devices"]}
    assert set(devices) == {"CPU", "GPU 0"}
    for label, device_type in (("CPU", 0), ("GPU 0", 1)):
        mine = [e for e in mem if e["args"]["Device Type"] == device_type]
        peak, mean = _running_level(mine, t0, t1)
        assert devices[label]["samples"] == len(mine)
        assert devices[label]["peak_allocated_bytes"] == peak
        assert devices[label]["avg_allocated_bytes"] == pytest.approx(mean, rel=1e-9)
    assert ov["memory"]["device"] == "GPU 0"
    assert ov["warnings"] == [
        f"{len(mem):,} `[memory]` events have no `Total Allocated` (Kineto before 2022): allocated memory is the "
        "running sum of their `Bytes`, counted from the least level that explains the frees (memory allocated "
        "before the trace and never freed in it is not seen); reserved memory is unknown"
    ]
    assert [s["name"] for s in ov["steps"]] == [name for name, _, _ in windows]
