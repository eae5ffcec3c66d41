"""What `tb-pipeline record --profile` costs, on the demo's training script.

    .venv/bin/python benchmarks/bench_record_profile.py [--repeat 3] [--steps 40] [--variant baseline] [--json out.json]

Records samples/train_demo.py through the launcher `--repeat` times in each
mode, modes interleaved (same machine state for all three):

- `off`: `record` without `--profile` (pipeline statistics only);
- `profile`: `record --profile` (default schedule: steps 2-4 traced);
- `profile_memory`: `record --profile memory=1` (profile_memory on too).

Per mode, medians over the recordings of: the launch's wall time; the step
time (statistics) of the traced steps 2-4 and of the steps after the
schedule (5 to the end), each against the same steps of `off`; the trace's
size on disk. The traced steps carry the profiler's cost (the user sees it in
the trace); the steps after the schedule must cost what `off` costs: the
profiler is stopped and detached once its schedule is over.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(REPO, "samples", "train_demo.py")
MODES = {"off": [], "profile": ["--profile"], "profile_memory": ["--profile", "memory=1"]}
TRACED = range(2, 5)  # the default schedule's active steps


def record_once(logdir: str, run: str, mode_args: list[str], steps: int, variant: str) -> dict:
    env = dict(os.environ, PYTHONPATH=REPO)
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", logdir, "--run", run,
           "--host-interval", "0", *mode_args, "--", sys.executable, DEMO, "--steps", str(steps), "--variant", variant]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    wall_s = time.perf_counter() - t0
    run_dir = os.path.join(logdir, run)
    records = [json.loads(line) for f in glob.glob(os.path.join(run_dir, "pipeline", "*.jsonl")) for line in open(f)]
    durations = {r["step"]: r["duration_s"] for r in records if r["type"] == "step"}
    traces = glob.glob(os.path.join(run_dir, "*.pt.trace.json*"))
    return {
        "wall_s": wall_s,
        "traced_step_ms": statistics.median(durations[s] for s in TRACED) * 1e3,
        "after_step_ms": statistics.median(d for s, d in durations.items() if s > max(TRACED)) * 1e3,
        "trace_bytes": sum(os.path.getsize(t) for t in traces),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--variant", default="baseline")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench_record_profile_")
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    try:
        for i in range(args.repeat):
            for mode, mode_args in MODES.items():
                results[mode].append(record_once(tmp, f"{mode}_{i}", mode_args, args.steps, args.variant))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in results.items()}
    off = summary["off"]
    print(f"samples/train_demo.py --variant {args.variant} --steps {args.steps}, {args.repeat} recordings per mode "
          f"(medians; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")
    print(f"{'mode':<16}{'launch s':>10}{'steps 2-4 ms':>14}{'vs off':>8}{'steps 5+ ms':>13}{'vs off':>8}{'trace MB':>10}")
    for mode, s in summary.items():
        print(f"{mode:<16}{s['wall_s']:>10.2f}{s['traced_step_ms']:>14.2f}{s['traced_step_ms'] / off['traced_step_ms']:>8.2f}"
              f"{s['after_step_ms']:>13.2f}{s['after_step_ms'] / off['after_step_ms']:>8.2f}{s['trace_bytes'] / 1e6:>10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "runs": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
