"""Our numbers next to torch-tb-profiler's, for the same trace files.

    .venv/bin/python benchmarks/compare_tb_profiler.py [--no-record] [TRACE ...]

Default inputs: the last span of each of kineto's resnet50 samples
(../shared/traces/kineto/, PyTorch 1.9, V100), HTA's single-rank PyTorch
2.x GPU trace (../shared/traces/hta/single_rank/) and one CPU run recorded
here with the installed PyTorch 2.x (samples/record_samples.py, DataLoader
20 ms per batch): the last two are where the two plugins part ways. Each file goes through our
`TraceProcessor` and through torch-tb-profiler's own parser and generator
(`RunProfileData.parse` + `RunGenerator`, what its plugin runs per file), in
this process. Prints one markdown table per file (pasted into the README's
"With torch-tb-profiler"): step count and time, the step-time breakdown,
GPU utilisation, and the top operators and kernels as each ranks them.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
KINETO = os.path.join(os.path.dirname(REPO), "shared", "traces", "kineto")
HTA_SINGLE = os.path.join(os.path.dirname(REPO), "shared", "traces", "hta", "single_rank")

# Our breakdown category -> torch-tb-profiler's name for it.
CATEGORIES = (
    ("kernel", "Kernel"), ("memcpy", "Memcpy"), ("memset", "Memset"), ("communication", "Communication"),
    ("runtime", "Runtime"), ("data_loading", "DataLoader"), ("cpu_exec", "CPU Exec"), ("other", "Other"),
)
TOP = 3


def default_inputs() -> list[str]:
    out = []
    for run in sorted(glob.glob(os.path.join(KINETO, "resnet50_*"))):
        files = sorted(glob.glob(os.path.join(run, "*.pt.trace.json*")))
        if files:
            out.append(files[-1])
    return out + sorted(glob.glob(os.path.join(HTA_SINGLE, "*.pt.trace.json*")))


def record_pytorch2(tmp: str) -> str:
    sys.path.insert(0, os.path.join(REPO, "samples"))
    import record_samples  # noqa: E402 - samples/ is not a package

    record_samples.record_run(os.path.join(tmp, "pytorch2_cpu"), layers=4, loader_delay_s=0.02)
    (path,) = glob.glob(os.path.join(tmp, "pytorch2_cpu", "*.pt.trace.json*"))
    return path


def ours(path: str) -> dict:
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    t0 = time.perf_counter()
    tp = TraceProcessor.load(path)
    ov = tp.overview()
    ops = tp.operators("name")
    col = "device_self_us" if tp.has_device else "host_self_us"
    ops = ops.sort_values(col, ascending=False).head(TOP)
    kernels = tp.kernels().sort_values("total_us", ascending=False).head(TOP)
    return {
        "steps": ov["steps"] if isinstance(ov["steps"], int) else len(ov["steps"]),
        "step_us": ov["avg_step_time_us"],
        "breakdown": ov["breakdown_us"],
        "gpu_util_pct": ov["gpu_utilization_pct"],
        "op_column": col,
        "ops": [(r["name"], r[col]) for _, r in ops.iterrows()],
        "kernels": [(r["name"], r["total_us"]) for _, r in kernels.iterrows()],
        "seconds": time.perf_counter() - t0,
    }


def theirs(path: str) -> dict:
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        data = RunProfileData.parse("w", 1, path, cache)
        prof = RunGenerator("w", 1, data).generate_run_profile()
    (avg,) = prof.overview["performance"]
    breakdown = {c["name"]: c["value"] for c in avg["children"]}
    has_device = prof.has_kernel or prof.has_memcpy_or_memset
    col = "device_self_duration" if has_device else "host_self_duration"
    ops = sorted(prof.operation_table_by_name["data"], key=lambda r: -r[col])[:TOP]
    kernels = []
    if prof.kernel_table:
        names = [c["name"] for c in prof.kernel_table["data"]["columns"]]
        i_name, i_total = names.index("Name"), names.index("Total Duration (us)")
        rows = sorted(prof.kernel_table["data"]["rows"], key=lambda r: -r[i_total])[:TOP]
        kernels = [(r[i_name], r[i_total]) for r in rows]
    util = next((float(i["value"].rstrip(" %")) for i in (prof.gpu_summary or []) if i["title"] == "GPU Utilization"), None)
    return {
        "steps": len(prof.overview["steps"]["rows"]),
        "step_us": avg["value"],
        "breakdown": breakdown,
        "gpu_util_pct": util,
        "ops": [(r["name"], r[col]) for r in ops],
        "kernels": kernels,
        "seconds": time.perf_counter() - t0,
    }


def _num(v) -> str:
    if v is None:
        return "—"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"


def _name(n: str, width: int = 48) -> str:
    n = n.replace("|", "\\|")
    return "`" + (n if len(n) <= width else n[: width - 1] + "…") + "`"


def table(label: str, a: dict, b: dict) -> str:
    rows = [
        ("steps", str(a["steps"]), str(b["steps"])),
        ("avg step time (µs)", _num(a["step_us"]), _num(b["step_us"])),
    ]
    for ours_key, their_key in CATEGORIES:
        va, vb = a["breakdown"].get(ours_key), b["breakdown"].get(their_key)
        if (va or 0) == 0 and (vb or 0) == 0:
            continue
        rows.append((f"· {their_key} (µs/step)", _num(va), _num(vb) if vb is not None else "not shown"))
    rows.append(("GPU utilisation (%)", _num(a["gpu_util_pct"]), _num(b["gpu_util_pct"])))
    what = "device self" if a["op_column"] == "device_self_us" else "host self"
    for i in range(TOP):
        oa = a["ops"][i] if i < len(a["ops"]) else None
        ob = b["ops"][i] if i < len(b["ops"]) else None
        rows.append((f"operator #{i + 1} by {what} (µs)",
                     f"{_name(oa[0])} {_num(oa[1])}" if oa else "—",
                     f"{_name(ob[0])} {_num(ob[1])}" if ob else "—"))
    for i in range(TOP):
        ka = a["kernels"][i] if i < len(a["kernels"]) else None
        kb = b["kernels"][i] if i < len(b["kernels"]) else None
        if ka or kb:
            rows.append((f"kernel #{i + 1} by total (µs)",
                         f"{_name(ka[0])} {_num(ka[1])}" if ka else "—",
                         f"{_name(kb[0])} {_num(kb[1])}" if kb else "—"))
    rows.append(("analysis time (s, this box)", f"{a['seconds']:.1f}", f"{b['seconds']:.1f}"))
    lines = [f"**{label}**", "", "| | tb_pipeline | torch-tb-profiler 0.4.3 |", "|---|---:|---:|"]
    lines += [f"| {m} | {x} | {y} |" for m, x, y in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", help="trace files (default: kineto resnet50 samples + a recorded run)")
    ap.add_argument("--no-record", action="store_true", help="skip recording the PyTorch 2.x CPU run")
    args = ap.parse_args(argv)
    try:
        import torch_tb_profiler
    except ImportError:
        print("torch-tb-profiler is not installed: pip install -r requirements-dev.txt", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        inputs = [(p, p) for p in (args.traces or default_inputs())]
        if not args.traces and not args.no_record:
            import torch

            inputs.append((record_pytorch2(tmp), f"recorded with PyTorch {torch.__version__} (CPU)"))
        if not inputs:
            print(f"no inputs: {KINETO} not found and nothing given", file=sys.stderr)
            return 2
        print(f"torch-tb-profiler {torch_tb_profiler.__version__}\n")
        for path, label in inputs:
            if label == path:
                label = os.path.relpath(path, os.path.dirname(REPO))
            print(table(label, ours(path), theirs(path)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
