"""Record the demo logdir the way the README tells users to record their runs:
one unmodified script (samples/train_demo.py), two variants, each through

    tb-pipeline record --logdir OUT --run VARIANT --profile SCHEDULE -- python samples/train_demo.py --variant VARIANT
    TB_PIPELINE_DIAGNOSTIC_MODE=1 tb-pipeline record --logdir OUT --run VARIANT -- python samples/train_demo.py ...

so `baseline` and `experimental` each hold a trace, pipeline statistics and
diagnostic results: every tab has something true to show.

    python samples/record_demo.py [--out samples/runs]
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, "train_demo.py")
VARIANTS = ("baseline", "experimental")
# Steps 0-6 left out (first iterations: allocator and caches warming), 5
# traced, with profile_memory: the Overview's memory rows have data too.
SCHEDULE = "wait=5,warmup=2,active=5,memory=1"
STEPS = 40
# Small sweeps (levels 1, 2, 4; 0.3 s a level): the demo's diagnostic results in seconds.
DIAGNOSTIC_ENV = {
    "TB_PIPELINE_DIAGNOSTIC_MODE": "1",
    "TB_PIPELINE_DIAGNOSTIC_LEVELS": "1,2,4",
    "TB_PIPELINE_DIAGNOSTIC_DURATION_S": "0.3",
    "TB_PIPELINE_DIAGNOSTIC_WARMUP_S": "0.05",
    "TB_PIPELINE_DIAGNOSTIC_NUM_INPUTS": "64",
    "TB_PIPELINE_DIAGNOSTIC_GIL_DURATION_S": "0.5",
}
# What diagnostic mode exits with: it profiled instead of training (diagnose/hooks.py).
DIAGNOSTIC_EXIT = 1


def _tb_pipeline(out: str, run: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", out, "--run", run, *args,
            "--", sys.executable, SCRIPT, "--variant", run, "--steps", str(STEPS)]


def _run(cmd: list[str], env_extra: dict, expect: int, quiet: bool) -> float:
    shown = " ".join(f"{k}={v}" for k, v in env_extra.items() if k == "TB_PIPELINE_DIAGNOSTIC_MODE")
    print(f"$ {shown + ' ' if shown else ''}tb-pipeline {shlex.join(cmd[3:])}", flush=True)
    env = dict(os.environ, **env_extra)
    env["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE if quiet else None,
                          stderr=subprocess.PIPE if quiet else None, text=True)
    if done.returncode != expect:
        if quiet:
            sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"record_demo: exit status {done.returncode}, expected {expect}: {shlex.join(cmd)}")
    return time.perf_counter() - t0


def record_demo(out: str, quiet: bool = False) -> None:
    """Records both variants into `out` (their old contents replaced)."""
    os.makedirs(out, exist_ok=True)
    for run in VARIANTS:
        shutil.rmtree(os.path.join(out, run), ignore_errors=True)
        traced_s = _run(_tb_pipeline(out, run, "--profile", SCHEDULE), {}, 0, quiet)
        swept_s = _run(_tb_pipeline(out, run), DIAGNOSTIC_ENV, DIAGNOSTIC_EXIT, quiet)
        print(f"recorded {run}: trace and statistics {traced_s:.1f} s, diagnostic mode {swept_s:.1f} s", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(HERE, "runs"))
    parser.add_argument("--quiet", action="store_true", help="only the commands and timings, not their output")
    args = parser.parse_args(argv)
    record_demo(args.out, args.quiet)


if __name__ == "__main__":
    main()
