"""The precision a run's matrix multiplies ran in (analysis/precision.py),
its comparability item and its clause in the sentence (issue 45):

- the H200 `amp` pair (fp32 → `torch.autocast("cuda", bfloat16)`) against
  an oracle that reads the trace JSON itself (gzip + json): the GEMM-like
  operators of the profiled steps, innermost, by their first floating
  input's dtype, their calls and the device time of the kernels they
  launched, and the casts made inside them; the `compile` pair (fp32 on
  both sides) lists no precision item;
- CPU traces recorded here with `record_shapes=True`, under
  `torch.autocast("cpu", torch.bfloat16)` and without: fp32 → bf16 too;
- traces without `Input type` (`record_shapes` off) say nothing and do not
  fail.
"""
from __future__ import annotations

import glob
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from support.json_oracle import DEVICE_WORK_CATEGORIES, category, launches_by_correlation, load_events
from tb_pipeline_plugin.analysis.gpu_work import work_per_step
from tb_pipeline_plugin.analysis.precision import first_floating, gemm_precision, short_dtype
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.compare import compare
from tb_pipeline_plugin.diff import comparability as C

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200"
h200 = pytest.mark.skipif(not H200.is_dir(), reason=f"H200 traces not found at {H200}")

# The oracle's own lists (it imports nothing of the code under test for its numbers).
ORACLE_GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
                "aten::convolution", "aten::_convolution", "aten::conv2d", "aten::convolution_backward"}
ORACLE_SHORT = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16"}


def _oracle_gemm(name: str) -> bool:
    return name in ORACLE_GEMMS or name.startswith("aten::_scaled_dot_product_")


def _trace(pair: str, side: str) -> str:
    return glob.glob(str(H200 / pair / side / "*.pt.trace.json.gz"))[0]


def _inside(outer: dict, inner: dict) -> bool:
    return outer is not inner and outer["tid"] == inner["tid"] and outer["pid"] == inner["pid"] and \
        outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


def precision_oracle(events: list[dict]) -> dict:
    """Per profiled step: innermost GEMM-like operators' calls and device time
    by their first floating input dtype, `aten::_to_copy` calls, and those
    whose nearest enclosing operator (other than `aten::to` / `aten::_to_copy`)
    is GEMM-like. A step is its `ProfilerStep#` annotation's host window."""
    steps = [e for e in events if e.get("ph") == "X" and category(e) == "user_annotation"
             and str(e.get("name", "")).startswith("ProfilerStep#")]

    def in_step(e: dict) -> bool:
        return any(s["ts"] <= e["ts"] < s["ts"] + s["dur"] for s in steps)

    ops = [e for e in events if e.get("ph") == "X" and category(e) == "cpu_op" and in_step(e)]
    gemms = [e for e in ops if _oracle_gemm(e["name"])]
    # Innermost: no other GEMM-like operator inside it (same thread, within its interval).
    by_thread = defaultdict(list)
    for g in gemms:
        by_thread[(g["pid"], g["tid"])].append(g)
    inner = [g for g in gemms if not any(_inside(g, h) for h in by_thread[(g["pid"], g["tid"])])]
    # Device time: kernels (memcpy, memset) whose launch lies in the operator's interval on its thread.
    launches = launches_by_correlation(events)
    device_by_thread = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and category(e) in DEVICE_WORK_CATEGORIES:
            launch = launches.get((e.get("args") or {}).get("correlation"))
            if launch is not None:
                device_by_thread[(launch["pid"], launch["tid"])].append((launch["ts"], e["dur"]))
    calls, device = Counter(), defaultdict(float)
    for g in inner:
        types = g["args"].get("Input type") or []
        dtype = next((ORACLE_SHORT[t] for t in types if t in ORACLE_SHORT), None)
        if dtype is None:
            continue
        calls[dtype] += 1
        device[dtype] += sum(d for ts, d in device_by_thread[(g["pid"], g["tid"])]
                             if g["ts"] <= ts <= g["ts"] + g["dur"])
    casts = [e for e in ops if e["name"] == "aten::_to_copy"]
    wrappers = {"aten::to", "aten::_to_copy"}
    ops_by_thread = defaultdict(list)
    for o in ops:
        ops_by_thread[(o["pid"], o["tid"])].append(o)
    gemm_casts = 0
    for c in casts:
        around = [o for o in ops_by_thread[(c["pid"], c["tid"])] if _inside(o, c) and o["name"] not in wrappers]
        if around and _oracle_gemm(min(around, key=lambda o: o["dur"])["name"]):
            gemm_casts += 1
    n = len(steps)
    return {"steps": n, "calls": {d: v / n for d, v in calls.items()}, "device_us": {d: v / n for d, v in device.items()},
            "casts": len(casts) / n, "gemm_casts": gemm_casts / n}


@pytest.fixture(scope="module")
def h200_runs():
    runs = {}
    for pair in ("amp", "compile"):
        for side in ("baseline", "experimental"):
            path = _trace(pair, side)
            linked = TraceProcessor.load(path).linked
            runs[pair, side] = ({**gemm_precision(linked), "casts_per_step": work_per_step(linked)["casts"]},
                                precision_oracle(load_events(path)[1]))
    return runs


@h200
@pytest.mark.parametrize("run", [(p, s) for p in ("amp", "compile") for s in ("baseline", "experimental")])
def test_gemm_dtypes_are_the_traces(h200_runs, run):
    got, oracle = h200_runs[run]
    assert got is not None and got["by"] == "device_time"
    assert {r["dtype"]: r["calls_per_step"] for r in got["dtypes"]} == {
        d: round(v, 1) for d, v in oracle["calls"].items()}
    for r in got["dtypes"]:
        assert r["device_us_per_step"] == pytest.approx(oracle["device_us"][r["dtype"]], rel=1e-6, abs=0.01)
    assert got["dtype"] == max(oracle["device_us"], key=oracle["device_us"].get)
    assert got["casts_per_step"] == round(oracle["casts"], 1)
    assert got["gemm_casts_per_step"] == round(oracle["gemm_casts"], 1)


@h200
def test_the_amp_pair_is_fp32_against_bf16_under_autocast(h200_runs):
    (b, bo), (e, eo) = h200_runs["amp", "baseline"], h200_runs["amp", "experimental"]
    # What the traces hold (measured by the oracle): 115 innermost GEMM-like calls a step on each side,
    # all fp32 before and all bf16 after; 2 → 186 casts a step, 83 of them inside the GEMMs.
    assert bo["calls"] == {"fp32": 115.0} and eo["calls"] == {"bf16": 115.0}
    assert (bo["casts"], eo["casts"], bo["gemm_casts"], eo["gemm_casts"]) == (2.0, 186.0, 0.0, 83.0)
    assert (b["dtype"], e["dtype"], b["share_pct"], e["share_pct"]) == ("fp32", "bf16", 100.0, 100.0)
    c = compare(H200 / "amp" / "baseline", H200 / "amp" / "experimental")
    items = {d["key"]: d for d in c.overview_answer["comparability"]}
    item = items["precision"]
    assert (item["label"], item["baseline"], item["experimental"], item["effect"]) == ("Precision", "fp32", "bf16",
                                                                                       C.NOTE)
    assert C.precision_change(item) == "GEMM inputs fp32 → bf16 (`torch.autocast`, dtype casts a step 2 → 186)"
    assert "83 `aten::_to_copy` a step inside GEMM-like operators" in item["text"]
    assert "casts_per_step" not in items  # said once, in the precision item
    sentence = c.explanation["sentence"]
    assert "what changed on the GPU: mixed precision, GEMM inputs fp32 → bf16 (`torch.autocast`" in sentence
    assert sentence.count("fp32 → bf16") == 1


@h200
def test_the_compile_pair_lists_no_precision(h200_runs):
    assert h200_runs["compile", "baseline"][0]["dtype"] == h200_runs["compile", "experimental"][0]["dtype"] == "fp32"
    c = compare(H200 / "compile" / "baseline", H200 / "compile" / "experimental")
    assert "precision" not in [d["key"] for d in c.overview_answer["comparability"]]
    assert "precision" not in c.explanation["sentence"]


def _record_cpu_run(directory: Path, autocast: bool, record_shapes: bool = True) -> Path:
    """A small MLP's CPU training steps profiled with ProfilerStep annotations."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    directory.mkdir(parents=True)
    path = directory / "worker0.1.pt.trace.json"
    # A schedule, so that each profiled step is a `ProfilerStep#N` annotation.
    with profile(activities=[ProfilerActivity.CPU], record_shapes=record_shapes,
                 schedule=schedule(wait=0, warmup=1, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(4):
            with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
                loss = model(x).float().sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    return path


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("precision_cpu")
    return {name: _record_cpu_run(root / name, autocast, shapes).parent
            for name, autocast, shapes in (("fp32", False, True), ("bf16", True, True),
                                           ("fp32_plain", False, False), ("bf16_plain", True, False))}


def test_a_cpu_autocast_pair_is_fp32_against_bf16(cpu_runs):
    runs = {}
    for name in ("fp32", "bf16"):
        [path] = cpu_runs[name].glob("*.pt.trace.json")
        runs[name] = (gemm_precision(TraceProcessor.load(str(path)).linked), precision_oracle(load_events(path)[1]))
    (b, bo), (e, eo) = runs["fp32"], runs["bf16"]
    # No device: the GEMMs are weighed by their calls.
    assert b["by"] == e["by"] == "calls"
    assert {r["dtype"]: r["calls_per_step"] for r in b["dtypes"]} == {d: round(v, 1) for d, v in bo["calls"].items()}
    assert {r["dtype"]: r["calls_per_step"] for r in e["dtypes"]} == {d: round(v, 1) for d, v in eo["calls"].items()}
    assert bo["calls"].keys() == {"fp32"} and max(eo["calls"], key=eo["calls"].get) == "bf16"
    assert (b["dtype"], e["dtype"]) == ("fp32", "bf16")
    assert e["gemm_casts_per_step"] == round(eo["gemm_casts"], 1) > 0 == b["gemm_casts_per_step"]
    c = compare(cpu_runs["fp32"], cpu_runs["bf16"])
    [item] = [d for d in c.overview_answer["comparability"] if d["key"] == "precision"]
    assert (item["baseline"], item["experimental"]) == ("fp32", "bf16")
    assert C.precision_change(item).startswith("GEMM inputs fp32 → bf16 (`torch.autocast`")
    assert "by calls" in item["text"]
    assert "fp32 → bf16" in c.explanation["sentence"] and "autocast" in c.explanation["sentence"]
    assert "what changed in the computation: " in c.explanation["sentence"] and "GPU" not in c.explanation["sentence"]


def test_without_input_types_nothing_is_said(cpu_runs):
    for name in ("fp32_plain", "bf16_plain"):
        [path] = cpu_runs[name].glob("*.pt.trace.json")
        assert not any("Input type" in (ev.get("args") or {}) for ev in load_events(path)[1])
        tp = TraceProcessor.load(str(path))
        assert (tp.linked.table.input_type_id == -1).all()
        assert gemm_precision(tp.linked) is None
    for b, e in (("fp32_plain", "bf16_plain"), ("fp32", "bf16_plain")):
        c = compare(cpu_runs[b], cpu_runs[e])
        keys = [d["key"] for d in c.overview_answer["comparability"]]
        assert "precision" not in keys and "precision" not in c.explanation["sentence"]
        assert "bf16" not in c.explanation["sentence"]


def test_dtype_names():
    assert [short_dtype(t) for t in ("float", "c10::BFloat16", "c10::Half", "double", "c10::Float8_e4m3fn",
                                     "c10::Float8_e5m2", "long int", "Scalar", "")] == [
        "fp32", "bf16", "fp16", "fp64", "fp8", "fp8", None, None, None]
    assert first_floating('["long int", "", "c10::BFloat16", "float"]') == "bf16"
    assert first_floating('["Scalar", "ScalarList"]') is None
    assert first_floating("null") is None and first_floating('"float"') is None and first_floating("[") is None
