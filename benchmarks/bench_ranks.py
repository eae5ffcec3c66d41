"""A many-rank job summarised ahead of time, then served: `tb-pipeline summarize`
over N rank files, then the `distributed` route in a fresh TensorBoard process
reading the summaries from the cache (cold: its first request; again: the
second, every rank's summary loaded).

    .venv/bin/python benchmarks/bench_ranks.py [--ranks 1000] [--processes N]

The run is `benchmarks/out/ranks_N/run/rank{i}.pt.trace.json.gz`, copies of
HTA's two real ranks (bench_scale.build_ranks): their distributedInfo ranks
repeat, so the route numbers the ranks from the worker names; the script
checks that `rankI` is rank I for every I.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_scale import REPO_ROOT, build_ranks, measure  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=1000)
    p.add_argument("--processes", type=int, default=0, help="summarize processes (0: its default)")
    args = p.parse_args()
    run = build_ranks(args.ranks)
    cache = tempfile.mkdtemp(prefix="tb_pipeline_bench_ranks_")
    try:
        load = os.getloadavg()[0]
        cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "summarize", run, "--cache-dir", cache]
        if args.processes:
            cmd += ["--processes", str(args.processes)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT,
                              env=dict(os.environ, PYTHONPATH=REPO_ROOT))
        summarize_s = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return 1
        dist = measure("distributed", cache, os.path.dirname(run), "run")
        if "error" in dist:
            print(f"distributed route failed: {dist['error']}", file=sys.stderr)
            return 1
        print(f"{args.ranks} ranks ({sum(os.path.getsize(os.path.join(run, f)) for f in os.listdir(run)) / 2**20:.0f} MiB "
              f"gzip), load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
        print(f"  summarize                       {summarize_s:7.2f} s")
        print(f"  distributed route, cold          {dist['wall_s']:7.3f} s  (fresh process, summaries from the cache)")
        print(f"  distributed route, asked again   {dist['again_s'] * 1000:7.1f} ms")
        print(f"  ranks {dist['ranks']}, numbered from {dist['rank_source']}, rankI is rank I: {dist['ranks_match_names']}")
        return 0 if dist["ranks"] == args.ranks and dist["ranks_match_names"] else 1
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
