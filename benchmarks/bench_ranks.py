"""A many-rank job summarised ahead of time, then served: `tb-pipeline summarize`
over N rank files (records only, or full cache entries), then the
`distributed` route in a fresh TensorBoard process reading the rank roll-up
(issue 38; issue 24 before it).

    .venv/bin/python benchmarks/bench_ranks.py [--ranks 10000] [--source cpu|hta|cpu_only]
        [--mode summaries|full] [--processes N] [--keep] [--json out.json]

Inputs, built under /tmp and deleted afterwards (unless `--keep`):
`cpu` (issue 38's input): one CPU trace recorded on the spot with
`samples/record_samples.py` (`record_run(active_steps=10)`: 4 layers,
`with_stack`, shapes and memory, 2.6 MB of JSON, 254 KB at gzip level 1;
kept in `benchmarks/out/ranks_cpu_source/`), copied to `rankI` (no
distributedInfo: ranks are numbered from the worker names); `hta`: copies of HTA's two real ranks (`multi_rank`, 116-124 KB gzip each;
their distributedInfo ranks repeat, so ranks are numbered from the worker
names); `cpu_only`: HTA's real 2.4 KB gloo trace with its distributedInfo.rank
rewritten to I for `rankI` (tests/support/rank_logdir.py). The script fails
unless the route answers every rank and `rankI` is rank I.

Reported: summarize's wall and CPU time and the cache directory's size (du), the
roll-up's bytes; the route's first complete answer in a fresh process (cold,
discovery of the N files included), asked again, asked again after the scan
went stale, the run against itself (a pair of N ranks); the serving
process's resident memory before the first ask and after; the load average.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_scale import REPO_ROOT, SHARED, measure  # noqa: E402

sys.path.insert(0, os.path.join(REPO_ROOT, "tests"))
from support.rank_logdir import CPU_ONLY, write_ranks  # noqa: E402


CPU_SOURCE_DIR = os.path.join(HERE, "out", "ranks_cpu_source")
CPU_ACTIVE_STEPS = 10


def cpu_source() -> str:
    """The recorded CPU trace, gzipped (level 1, as the profiler's own
    `use_gzip` writes it): recorded once, reused."""
    gz = os.path.join(CPU_SOURCE_DIR, "rank.pt.trace.json.gz")
    if os.path.exists(gz):
        return gz
    import gzip

    sys.path.insert(0, os.path.join(REPO_ROOT, "samples"))
    from record_samples import record_run

    rec = os.path.join(CPU_SOURCE_DIR, "recorded")
    shutil.rmtree(rec, ignore_errors=True)
    record_run(rec, active_steps=CPU_ACTIVE_STEPS)
    [trace] = [n for n in os.listdir(rec) if n.endswith(".pt.trace.json")]
    with open(os.path.join(rec, trace), "rb") as f:
        data = gzip.compress(f.read(), compresslevel=1, mtime=0)
    with open(gz + ".tmp", "wb") as f:
        f.write(data)
    os.replace(gz + ".tmp", gz)
    shutil.rmtree(rec, ignore_errors=True)
    return gz


def build(kind: str, n: int, root: str) -> str:
    run = os.path.join(root, "logdir", "run")
    os.makedirs(run)
    if kind == "cpu":
        src = cpu_source()
        for i in range(n):
            shutil.copy(src, os.path.join(run, f"rank{i}.pt.trace.json.gz"))
    elif kind == "cpu_only":
        write_ranks(os.path.join(SHARED, CPU_ONLY), run, range(n))
    else:
        srcs = [os.path.join(SHARED, "multi_rank", f"sampled_rank-{i}.json.gz") for i in (0, 1)]
        for i in range(n):
            shutil.copy(srcs[i % 2], os.path.join(run, f"rank{i}.pt.trace.json.gz"))
    return run


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children and
    theirs (summarize and its pool): what a loaded machine does not inflate."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def du_bytes(path: str) -> int:
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=10_000)
    p.add_argument("--source", choices=("cpu", "hta", "cpu_only"), default="cpu")
    p.add_argument("--mode", choices=("summaries", "full"), default="summaries",
                   help="summaries: `summarize --summaries-only` (rank records); full: cache entries too")
    p.add_argument("--processes", type=int, default=0, help="summarize processes (0: its default)")
    p.add_argument("--keep", action="store_true", help="keep the logdir and cache under /tmp")
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    root = tempfile.mkdtemp(prefix="tb_pipeline_bench_ranks_", dir="/tmp")
    try:
        t0 = time.perf_counter()
        run = build(args.source, args.ranks, root)
        build_s = time.perf_counter() - t0
        cache = os.path.join(root, "cache")
        # Niced: minutes of both cores on a machine others share; the route's seconds are not.
        cmd = ["nice", "-n", "5", sys.executable, "-m", "tb_pipeline_plugin.cli", "summarize", os.path.dirname(run),
               "--cache-dir", cache]
        cmd += ["--summaries-only"] if args.mode == "summaries" else []
        cmd += ["--processes", str(args.processes)] if args.processes else []
        load_before = os.getloadavg()[0]
        t0, cpu0 = time.perf_counter(), _children_cpu()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
        summarize_s, summarize_cpu_s = time.perf_counter() - t0, _children_cpu() - cpu0
        load_after = os.getloadavg()[0]
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return 1
        rollup_bytes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(cache, "rollups", "*", "*")))
        figures = {"ranks": args.ranks, "source": args.source, "mode": args.mode, "build_s": build_s,
                   "logdir_bytes": du_bytes(run),
                   "rank0_bytes": os.path.getsize(os.path.join(run, "rank0.pt.trace.json.gz")), "summarize_s": summarize_s,
                   "summarize_cpu_s": summarize_cpu_s, "cache_bytes": du_bytes(cache),
                   "rollup_bytes": rollup_bytes, "summarize_load": [load_before, load_after],
                   "summarize_report": proc.stdout.strip().splitlines()[-1]}
        load_before = os.getloadavg()[0]
        dist = measure("distributed", cache, os.path.dirname(run), "run")
        if "error" in dist:
            print(f"distributed route failed: {dist['error']}", file=sys.stderr)
            return 1
        figures.update(route=dist, route_load=[load_before, os.getloadavg()[0]])
        mib = 2 ** 20
        print(f"{args.ranks} ranks of {args.source} ({figures['rank0_bytes'] / 1000:,.0f} KB each, "
              f"{figures['logdir_bytes'] / mib:,.0f} MiB), summarize --mode {args.mode}, "
              f"load average {figures['summarize_load'][0]:.1f} -> {figures['summarize_load'][1]:.1f}")
        print(f"  summarize                          {summarize_s:8.1f} s    ({summarize_cpu_s:.0f} s CPU, its pool included) cache {figures['cache_bytes'] / mib:,.1f} MiB "
              f"(roll-up {rollup_bytes / mib:.2f} MiB)")
        print(f"  distributed, cold (first ask)      {dist['wall_s']:8.3f} s    ({dist['cold_cpu_s']:.3f} s CPU) answer "
              f"{dist['answer_bytes'] / mib:.1f} MiB (load {figures['route_load'][0]:.1f})")
        print(f"  distributed, asked again           {dist['again_s'] * 1000:8.1f} ms")
        print(f"  asked after the scan went stale    {', '.join(f'{s * 1000:.1f}' for s in dist['after_rescan_s'])} ms")
        print(f"  the run against itself            {dist['pair_s']:8.3f} s, again {dist['pair_again_s'] * 1000:.1f} ms, "
              f"answer {dist['pair_answer_bytes'] / mib:.1f} MiB")
        print(f"  TensorBoard RSS                    {dist['rss_before_bytes'] / mib:8.0f} MiB before, "
              f"{dist['rss_after_bytes'] / mib:.0f} MiB after, peak {dist['peak_rss_bytes'] / mib:.0f} MiB")
        print(f"  ranks {dist['ranks']}, numbered from {dist['rank_source']}, rankI is rank I: {dist['ranks_match_names']}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
        return 0 if dist["ranks"] == args.ranks and dist["ranks_match_names"] else 1
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
