"""Load benchmark: file -> all five views vs a bare typed decode.

Targets, for a ~200 MiB trace:
  * time from file to overview + operators (by name, by name and shape) +
    kernels + modules <= 2x a bare `msgspec` typed decode of the same file,
    measured in the same run on the same machine;
  * peak RSS of that process <= 2.5x the file size.

Inputs are real traces grown in time (see replicate.py): the HTA A100 trace
(GPU: kernels, launches, flows) and a CPU trace recorded here with
`with_stack=True` (deep Python call tree, module events, memory events).
Every measurement runs in a fresh interpreter (`_measure.py`).

    .venv/bin/python benchmarks/bench_load.py [--size-mb 200] [--keep] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
OUT_DIR = os.path.join(HERE, "out")
MIB = 1 << 20
GPU_SOURCE = os.path.join(REPO_ROOT, "..", "shared", "traces", "hta", "trace_diff", "control.json.gz")
MAX_TIME_RATIO = 2.0
MAX_RSS_TO_FILE = 2.5

sys.path.insert(0, HERE)
from replicate import replicate_trace  # noqa: E402


@dataclass
class Input:
    name: str
    path: str
    events: int


def build_inputs(size_mb: float, which: list[str], reuse: bool) -> list[Input]:
    os.makedirs(OUT_DIR, exist_ok=True)
    target_bytes = int(size_mb * MIB)
    inputs = []
    for name in which:
        dst = os.path.join(OUT_DIR, f"{name}_{size_mb:g}mb.json")
        meta_path = dst + ".meta.json"
        if reuse and os.path.exists(dst) and os.path.exists(meta_path):
            with open(meta_path) as f:
                meta = json.load(f)
            print(f"reusing {dst} ({meta['events']} events)")
            inputs.append(Input(name, dst, meta["events"]))
            continue
        t0 = time.perf_counter()
        src = _gpu_source() if name == "gpu" else _record_cpu_source()
        stats = replicate_trace(src, dst, target_bytes)
        with open(meta_path, "w") as f:
            json.dump({"source": os.path.basename(src), "events": stats.events, "copies": stats.copies}, f)
        print(
            f"built {dst}: {stats.bytes_written / MIB:.0f} MiB, {stats.events} events, "
            f"{stats.copies} copies of {os.path.basename(src)} in {time.perf_counter() - t0:.1f} s"
        )
        inputs.append(Input(name, dst, stats.events))
    return inputs


def _gpu_source() -> str:
    if not os.path.exists(GPU_SOURCE):
        raise SystemExit(f"GPU source trace missing: {GPU_SOURCE} (expects ../shared beside the repo)")
    return GPU_SOURCE


def _record_cpu_source() -> str:
    sys.path.insert(0, os.path.join(REPO_ROOT, "samples"))
    from record_samples import record_run

    src_dir = os.path.join(OUT_DIR, "cpu_source")
    shutil.rmtree(src_dir, ignore_errors=True)
    record_run(src_dir, with_stack=True)
    [name] = [n for n in os.listdir(src_dir) if n.endswith(".pt.trace.json")]
    return os.path.join(src_dir, name)


def measure(mode: str, path: str, repeat: int) -> dict:
    """Best of `repeat` fresh processes (min wall time: least disturbed by
    other load on the machine); peak RSS is the max over them."""
    runs = []
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, os.path.join(HERE, "_measure.py"), mode, path],
            capture_output=True, text=True, env=env, cwd=REPO_ROOT,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            return {"error": tail[0]}
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    best = min(runs, key=lambda r: r["wall_s"])
    best["wall_s_all"] = [r["wall_s"] for r in runs]
    best["wall_s_median"] = statistics.median(best["wall_s_all"])
    best["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in runs)
    best["imports_rss_bytes"] = max(r["imports_rss_bytes"] for r in runs)
    return best


def evaluate(inp: Input, base: dict, cand: dict) -> dict:
    file_bytes = os.path.getsize(inp.path)
    row = {
        "input": inp.name,
        "file_mb": file_bytes / MIB,
        "events": inp.events,
        "baseline_s": base.get("wall_s"),
        "baseline_peak_rss_mb": base["peak_rss_bytes"] / MIB if "peak_rss_bytes" in base else None,
        "candidate_s": cand.get("wall_s"),
        "candidate_peak_rss_mb": cand["peak_rss_bytes"] / MIB if "peak_rss_bytes" in cand else None,
        "candidate_imports_rss_mb": cand["imports_rss_bytes"] / MIB if "imports_rss_bytes" in cand else None,
        "error": base.get("error") or cand.get("error"),
    }
    if row["error"]:
        row.update(time_ratio=None, rss_to_file=None, passed=None)
        return row
    row["time_ratio"] = cand["wall_s"] / base["wall_s"]
    row["rss_to_file"] = cand["peak_rss_bytes"] / file_bytes
    row["passed"] = row["time_ratio"] <= MAX_TIME_RATIO and row["rss_to_file"] <= MAX_RSS_TO_FILE
    return row


def print_table(rows: list[dict]) -> None:
    head = (
        f"{'input':<6} {'file MB':>8} {'events':>9} {'base s':>7} {'base RSS MB':>11} {'cand s':>7} {'ratio':>6} "
        f"{'cand RSS MB':>11} {'RSS/file':>8} {'imports MB':>10}  result"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if r["error"]:
            base_s = f"{r['baseline_s']:>7.2f}" if r["baseline_s"] is not None else f"{'n/a':>7}"
            base_rss = r["baseline_peak_rss_mb"]
            base_rss = f"{base_rss:>11.0f}" if base_rss is not None else f"{'n/a':>11}"
            print(f"{r['input']:<6} {r['file_mb']:>8.0f} {r['events']:>9} {base_s} {base_rss}  n/a: {r['error']}")
            continue
        verdict = "PASS" if r["passed"] else "FAIL"
        why = []
        if r["time_ratio"] > MAX_TIME_RATIO:
            why.append(f"time > {MAX_TIME_RATIO:g}x")
        if r["rss_to_file"] > MAX_RSS_TO_FILE:
            why.append(f"RSS > {MAX_RSS_TO_FILE:g}x file")
        print(
            f"{r['input']:<6} {r['file_mb']:>8.0f} {r['events']:>9} {r['baseline_s']:>7.2f} "
            f"{r['baseline_peak_rss_mb']:>11.0f} {r['candidate_s']:>7.2f} {r['time_ratio']:>6.2f} {r['candidate_peak_rss_mb']:>11.0f} "
            f"{r['rss_to_file']:>8.2f} {r['candidate_imports_rss_mb']:>10.0f}  {verdict}"
            + (f" ({', '.join(why)})" if why else "")
        )
    print(
        f"targets: candidate <= {MAX_TIME_RATIO:g}x baseline time (min of repeats, excluding imports); "
        f"candidate peak RSS (absolute, imports included) <= {MAX_RSS_TO_FILE:g}x file size. MB = MiB."
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="file -> five views vs bare msgspec decode")
    parser.add_argument("--size-mb", type=float, default=200, help="target size of each input, MiB")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) built inputs in benchmarks/out/")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per measurement")
    parser.add_argument("--inputs", default="gpu,cpu", help="comma-separated subset of gpu,cpu")
    parser.add_argument("--json", dest="json_out", help="also write the rows to this file")
    args = parser.parse_args(argv)
    which = [w for w in args.inputs.split(",") if w]
    unknown = set(which) - {"gpu", "cpu"}
    if unknown:
        parser.error(f"unknown inputs: {sorted(unknown)}")

    inputs = build_inputs(args.size_mb, which, reuse=args.keep)
    rows = []
    try:
        for inp in inputs:
            base = measure("baseline", inp.path, args.repeat)
            cand = measure("candidate", inp.path, args.repeat)
            rows.append(evaluate(inp, base, cand))
    finally:
        if not args.keep:
            for inp in inputs:
                for p in (inp.path, inp.path + ".meta.json"):
                    if os.path.exists(p):
                        os.remove(p)
            shutil.rmtree(os.path.join(OUT_DIR, "cpu_source"), ignore_errors=True)
    print()
    print_table(rows)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=2)
    if any(r["error"] for r in rows):
        return 2
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
