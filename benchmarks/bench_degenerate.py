"""Degenerate traces (benchmarks/degenerate.py): time and memory from the
file to every first view and the diff against itself (issue 23).

    .venv/bin/python benchmarks/bench_degenerate.py [--scale 1.0] [--families a,b] [--json rows.json]
                                                    [--code DIR]   # another checkout's plugin (a baseline)

Each family is written to a temporary file and measured in a fresh
interpreter: `load s` (TraceProcessor.load), `views s` (overview,
operators by name and by name and shape, kernels, modules, each encoded as
the route does), `diff s` (the four diff views of the trace against
itself), `CPU s` (the process's CPU time over the three: what the
neighbours on a shared box disturb least), `growth MB` (peak RSS above the
interpreter after its imports,
VmHWM) and its ratio to the file size against the bound of
`_views.memory_bound_bytes` (100x a file of a few MB, 3x a large one). A trace the
loader refuses is reported with its reason (`refused`). The load average is
printed with each row: the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 1 << 20
sys.path.insert(0, HERE)
from _views import memory_bound_bytes  # noqa: E402
from degenerate import FAMILIES, size_of, trace_bytes  # noqa: E402


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith(key)).split()[1])


def child(path: str, code: str) -> dict:
    sys.path.insert(0, HERE)
    sys.path.insert(0, code)
    from _views import view_calls

    import tb_pipeline_plugin

    load, per_run, diff = view_calls(path)
    base = _status_kb("VmRSS:") * 1024
    out = {"refused": None, "plugin": os.path.dirname(tb_pipeline_plugin.__file__)}
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    try:
        tp = load()
    except ValueError as exc:
        out["refused"] = str(exc)
        out["load_s"] = time.perf_counter() - t0
        out["cpu_s"] = time.process_time() - cpu0
        out["growth_bytes"] = _status_kb("VmHWM:") * 1024 - base
        return out
    t1 = time.perf_counter()
    per_run(tp)
    t2 = time.perf_counter()
    diff(tp)
    t3 = time.perf_counter()
    out.update(load_s=t1 - t0, views_s=t2 - t1, diff_s=t3 - t2, cpu_s=time.process_time() - cpu0,
               warnings=list(tp.warnings),
               growth_bytes=_status_kb("VmHWM:") * 1024 - base)
    return out


def measure(family: str, scale: float, workdir: str, timeout_s: float, code: str) -> dict:
    path = os.path.join(workdir, f"{family}.pt.trace.json")
    with open(path, "wb") as f:
        f.write(trace_bytes(family, scale))
    size = os.path.getsize(path)
    row = {"family": family, "n": size_of(family, scale), "file_bytes": size, "load_avg": os.getloadavg()[0]}
    env = {**os.environ, "PYTHONPATH": code + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", path, "--code", code], capture_output=True,
                              text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        row.update(outcome="hang", total_s=time.perf_counter() - t0)
        return row
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        row.update(outcome="error", detail=proc.stderr[-2000:])
        return row
    row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    row["outcome"] = "refused" if row["refused"] else "loaded"
    row["total_s"] = sum(row.get(k, 0.0) for k in ("load_s", "views_s", "diff_s"))
    row["bound_bytes"] = memory_bound_bytes(size)
    row["within_bound"] = row["growth_bytes"] <= row["bound_bytes"]
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--timeout-s", type=float, default=300)
    p.add_argument("--json")
    p.add_argument("--code", default=REPO_ROOT, help="checkout whose tb_pipeline_plugin is measured")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.code)))
        return 0
    rows = []
    print(f"{'family':<16} {'n':>9} {'file MB':>8} {'load s':>7} {'views s':>8} {'diff s':>7} {'CPU s':>6} {'growth MB':>10} "
          f"{'x file':>7} {'bound x':>8} {'load avg':>8}  outcome")
    with tempfile.TemporaryDirectory(prefix="bench_degenerate_") as work:
        for family in args.families.split(","):
            r = measure(family, args.scale, work, args.timeout_s, os.path.abspath(args.code))
            rows.append(r)
            mb = r["file_bytes"] / MIB
            g = r.get("growth_bytes")
            print(f"{family:<16} {r['n']:>9,} {mb:>8.1f} {r.get('load_s', float('nan')):>7.2f} "
                  f"{r.get('views_s', float('nan')):>8.2f} {r.get('diff_s', float('nan')):>7.2f} "
                  f"{r.get('cpu_s', float('nan')):>6.2f} "
                  f"{(g or 0) / MIB:>10.0f} {(g or 0) / r['file_bytes']:>7.1f} "
                  f"{r.get('bound_bytes', 0) / r['file_bytes']:>8.1f} {r['load_avg']:>8.2f}  {r['outcome']}"
                  + (f": {r['refused']}" if r.get("refused") else "") + (f"\n{r['detail']}" if r.get("detail") else ""),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r for r in rows if r["outcome"] in ("hang", "error") or not r.get("within_bound", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
