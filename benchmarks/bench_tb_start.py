"""Does our plugin slow torch-tb-profiler's start? TensorBoard with both vs with theirs alone.

    .venv/bin/python benchmarks/bench_tb_start.py [--logdir DIR] [--repeat 3]

Starts the real TensorBoard (tests/support/tb_launcher.py, the `tensorboard`
start-up minus the left-out plugins) on the same logdir, alternately
without our plugin (baseline) and with it (candidate), and times from the
process start to
- `first runs`: torch-tb-profiler's `runs` route first answers 200;
- `runs loaded`: its `runs` lists every run with `loading: false` (it has
  parsed every trace file, each in its own process).
Minimum over `--repeat` starts of each (least disturbed by other load on
the box). Default logdir: kineto's resnet50 samples (../shared/traces/kineto,
2 runs x 2 spans). Exit 0 when the candidate's times are within 1.25x of the
baseline's, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHER = os.path.join(REPO, "tests", "support", "tb_launcher.py")
DEFAULT_LOGDIR = os.path.join(os.path.dirname(REPO), "shared", "traces", "kineto")
RATIO_LIMIT = 1.25


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _runs(port: int):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugin/pytorch_profiler/runs", timeout=5) as r:
            return json.loads(r.read())
    except (urllib.error.URLError, ConnectionError, OSError):
        return None


def start_once(logdir: str, with_ours: bool, n_runs: int, timeout_s: float) -> tuple[float, float]:
    port = _free_port()
    cmd = [sys.executable, LAUNCHER] + ([] if with_ours else ["--without", "tb_pipeline"])
    cmd += ["--", "--logdir", logdir, "--port", str(port), "--host", "127.0.0.1"]
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    first = None
    try:
        while time.perf_counter() - t0 < timeout_s:
            if proc.poll() is not None:
                raise RuntimeError(f"TensorBoard exited with {proc.returncode}: {' '.join(cmd)}")
            body = _runs(port)
            if body is not None:
                first = first or time.perf_counter() - t0
                if len(body["runs"]) >= n_runs and not body["loading"]:
                    return first, time.perf_counter() - t0
            time.sleep(0.05)
        raise RuntimeError(f"torch-tb-profiler did not load {n_runs} runs within {timeout_s} s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logdir", default=DEFAULT_LOGDIR)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    try:
        import torch_tb_profiler  # noqa: F401
    except ImportError:
        print("torch-tb-profiler is not installed: pip install -r requirements-dev.txt", file=sys.stderr)
        return 2
    n_runs = sum(
        1 for _, _, files in os.walk(args.logdir, followlinks=True) if any(".pt.trace.json" in f for f in files)
    )
    times = {False: [], True: []}
    for _ in range(args.repeat):
        for with_ours in (False, True):  # alternated: drift in the box's load hits both
            times[with_ours].append(start_once(args.logdir, with_ours, n_runs, args.timeout))
    base = [min(t[i] for t in times[False]) for i in (0, 1)]
    cand = [min(t[i] for t in times[True]) for i in (0, 1)]
    print(f"logdir {args.logdir} ({n_runs} runs), min of {args.repeat} starts each\n")
    print("| TensorBoard with | first `runs` answer (s) | all runs loaded (s) |")
    print("|---|---:|---:|")
    print(f"| torch-tb-profiler alone | {base[0]:.2f} | {base[1]:.2f} |")
    print(f"| torch-tb-profiler + tb_pipeline | {cand[0]:.2f} | {cand[1]:.2f} |")
    ratios = [c / b for c, b in zip(cand, base)]
    print(f"| ratio | {ratios[0]:.2f} | {ratios[1]:.2f} |")
    return 0 if max(ratios) <= RATIO_LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
