"""Scale benchmark: one command, inputs generated, every row in
the same run on the same machine.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 200,1024] [--inputs gpu,cpu,cpu_stack] [--ranks 64]
                                               [--no-ttp] [--keep] [--json rows.json]

Per input (a real trace replicated in time to each size, plus a second,
different trace of the same size as the experimental side of the diff):

  user     the headline (issue 34): TensorBoard started on a logdir holding
           this one trace, empty cache, until overview, operators, kernels
           and modules have answered, less the same TensorBoard's start on
           an empty logdir (`_tb_user.py`); best of 2, and on one core
  lean     read + msgspec decode into a Struct (ph name cat ts dur pid tid,
           args as msgspec.Raw), GC off: the reference floor
  cold     our loader, empty cache: parse in a worker process, map the
           columns back, then every per-run view
  warm     the same in a new process with the cache filled (a restart)
  diff     TensorBoard app, warm cache: both runs ready, then the four diff routes
  latency  worst / p50 latency of other routes while this file parses (cache off)
  ttp      torch-tb-profiler 0.4.3's RunLoader on the same file, in its own
           virtual environment (created here with `python -m venv` + pip)

and a run of `--ranks` worker files (HTA's two-rank sample, copied):
serial in-process load vs our parallel cold load vs warm, the `distributed`
route over all ranks (warm and cold cache) vs torch-tb-profiler.
Every measurement is a fresh interpreter (`_scale_measure.py`).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
OUT_DIR = os.path.join(HERE, "out", "scale")
SHARED = os.path.join(REPO_ROOT, "..", "shared", "traces", "hta")
MIB = 1 << 20
TTP_VERSION = "0.4.3"
STACK_PYTHON_DEPTH = 12

sys.path.insert(0, HERE)
from replicate import replicate_trace  # noqa: E402


def _sources(kind: str) -> tuple[str, str]:
    """(baseline source, experimental source) real traces for an input kind."""
    if kind == "gpu":
        return os.path.join(SHARED, "trace_diff", "control.json.gz"), os.path.join(SHARED, "trace_diff", "test.json.gz")
    sys.path.insert(0, os.path.join(REPO_ROOT, "samples"))
    from record_samples import record_run

    # cpu_stack: each block's layers called STACK_PYTHON_DEPTH Python frames
    # down, so most events are `python_function` (issue 23's slow input).
    python_depth = STACK_PYTHON_DEPTH if kind == "cpu_stack" else 0
    out = []
    for name, layers in (("base", 4), ("exp", 5)):
        d = os.path.join(OUT_DIR, f"{kind}_source_{name}")
        if not os.path.isdir(d) or not any(n.endswith(".pt.trace.json") for n in os.listdir(d)):
            shutil.rmtree(d, ignore_errors=True)
            record_run(d, layers=layers, with_stack=True, python_depth=python_depth)
        [trace] = [n for n in os.listdir(d) if n.endswith(".pt.trace.json")]
        out.append(os.path.join(d, trace))
    return out[0], out[1]


def build_input(kind: str, size_mb: int) -> str:
    """A logdir with runs `baseline` and `experimental` of ~size_mb each;
    returns the logdir. Reused when present."""
    logdir = os.path.join(OUT_DIR, f"{kind}_{size_mb}mb")
    base_src, exp_src = _sources(kind)
    for run, src in (("baseline", base_src), ("experimental", exp_src)):
        dst = os.path.join(logdir, run, "worker0.pt.trace.json")
        if os.path.exists(dst):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        t0 = time.perf_counter()
        stats = replicate_trace(src, dst + ".part", size_mb * MIB)
        os.rename(dst + ".part", dst)
        print(f"built {dst}: {stats.bytes_written / MIB:.0f} MiB, {stats.events:,} events ({time.perf_counter() - t0:.0f} s)", flush=True)
    return logdir


def build_ranks(n: int) -> str:
    run = os.path.join(OUT_DIR, f"ranks_{n}", "run")
    os.makedirs(run, exist_ok=True)
    srcs = [os.path.join(SHARED, "multi_rank", f"sampled_rank-{i}.json.gz") for i in (0, 1)]
    for i in range(n):
        dst = os.path.join(run, f"rank{i}.pt.trace.json.gz")
        if not os.path.exists(dst):
            shutil.copy(srcs[i % 2], dst)
    return run


def ttp_python() -> tuple[str | None, str]:
    """torch-tb-profiler's own venv (created once under benchmarks/out/)."""
    venv = os.path.join(HERE, "out", "ttp_venv")
    py = os.path.join(venv, "bin", "python")
    check = [py, "-c", "import torch_tb_profiler, sys; print(torch_tb_profiler.__version__)"]
    if os.path.exists(py) and subprocess.run(check, capture_output=True, text=True).stdout.strip() == TTP_VERSION:
        return py, "ok"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True, capture_output=True, text=True, timeout=600)
        proc = subprocess.run([py, "-m", "pip", "install", "-q", f"torch-tb-profiler=={TTP_VERSION}"],
                              capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            return None, "pip install failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"venv creation failed: {exc}"
    return py, "ok"


def measure(mode: str, *args: str, python: str | None = None, env_extra: dict | None = None, timeout_s: float = 3600,
            one_core: bool = False, script: str = "_scale_measure.py") -> dict:
    """`one_core`: pinned to CPU 0 (`taskset -c 0`), with everything it starts."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, **(env_extra or {}))
    cmd = [python or sys.executable, os.path.join(HERE, script), mode, *args]
    if one_core:
        cmd = ["taskset", "-c", "0", *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s"}
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
        return {"error": tail[0][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _rss(r: dict) -> float | None:
    if "error" in r or not ("peak_rss_bytes" in r or "children_peak_rss_bytes" in r):
        return None  # not measured (the user's rows: TensorBoard's processes)
    return max(r.get("peak_rss_bytes", 0), r.get("children_peak_rss_bytes", 0)) / MIB


def row(name: str, what: str, r: dict, ref_s: float | None, file_mb: float, note: str = "") -> dict:
    out = {"input": name, "what": what, "file_mb": file_mb, **{k: v for k, v in r.items()}}
    out["rss_mb"] = _rss(r)
    out["ratio"] = (r["wall_s"] / ref_s) if ref_s and "wall_s" in r else None
    out["note"] = note
    return out


def print_rows(rows: list[dict]) -> None:
    head = f"{'input':<14} {'measure':<34} {'s':>8} {'x lean':>7} {'peak RSS MB':>11} {'RSS/file':>8}  note"
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['input']:<14} {r['what']:<34} {'n/a':>8} {'':>7} {'':>11} {'':>8}  {r['error']}")
            continue
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else ""
        rss = f"{r['rss_mb']:.0f}" if r["rss_mb"] is not None else ""
        per_file = f"{r['rss_mb'] / r['file_mb']:.2f}" if r["rss_mb"] and r["file_mb"] else ""
        print(f"{r['input']:<14} {r['what']:<34} {r['wall_s']:>8.2f} {ratio:>7} {rss:>11} {per_file:>8}  {r['note']}")
    print("s: wall time, imports excluded; x lean: s / the lean decode of the same file; peak RSS: the larger of the "
          "measuring process and its largest child (parse worker / torch-tb-profiler process). MB = MiB.")


# TensorBoard starts (each with an empty logdir and with this trace) per input.
USER_ROUNDS = 2


def user_logdir(path: str, name: str) -> str:
    """A logdir holding `path` alone, as run `run` (a hard link)."""
    logdir = os.path.join(OUT_DIR, "user_" + name.replace(" ", "_"))
    dst = os.path.join(logdir, "run", "worker0.pt.trace.json")
    if not os.path.exists(dst):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.link(path, dst)
    return logdir


def user_round(path: str, logdir: str, one_core: bool) -> tuple[dict, dict, dict]:
    """(idle, views, plain): TensorBoard's start on an empty logdir, then on
    `logdir` until the run's first views answered, then its start without
    our plugin, each from a settled machine and an empty cache; `one_core`:
    under taskset -c 0, one worker."""
    empty = os.path.join(OUT_DIR, "user_empty")
    os.makedirs(empty, exist_ok=True)
    env = {"TB_PIPELINE_PARSE_WORKERS": "1"} if one_core else {}
    out = []
    for mode, args in (("up", (empty,)), ("views", (logdir, "run")), ("up", (empty, "--plain"))):
        settle(path)
        cache = tempfile.mkdtemp(prefix="tb_pipeline_bench_cache_")
        try:
            out.append(measure(mode, *args, script="_tb_user.py", one_core=one_core,
                               env_extra=dict(env, TB_PIPELINE_CACHE_DIR=cache)))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return out[0], out[1], out[2]


def user_row(rounds: list[tuple[dict, dict, dict]], one_core: bool) -> tuple[dict, str]:
    """The user's figure: the fastest start to the views less the fastest
    idle start (each the least disturbed of its rounds)."""
    failed = [r for measured in rounds for r in measured if "error" in r]
    if failed:
        return failed[0], ""
    idle = min(r["up_s"] for r, _, _ in rounds)
    plain = min(p["up_s"] for _, _, p in rounds)
    best = min((v for _, v, _ in rounds), key=lambda v: v["wall_s"])
    return ({"wall_s": best["wall_s"] - idle, "start_to_views_s": best["wall_s"], "idle_start_s": idle,
             "plain_start_s": plain, "routes_s": best["routes_s"]},
            f"start -> views {best['wall_s']:.2f} s less idle start {idle:.2f} s (without our plugin "
            f"{plain:.2f} s); best of {len(rounds)}; asked as the page asks (wait_ms=2000); "
            f"load average {os.getloadavg()[0]:.1f}" + ("; TB_PIPELINE_PARSE_WORKERS=1 under taskset -c 0" if one_core else ""))


def stage_timeline(path: str, logdir: str, one_core: bool = False) -> list[dict]:
    """One more start -> views with every process's stage times recorded
    (benchmarks/stages/: wrappers that cost a little, so this run is not
    one of the timed rounds): where the user's seconds go; `one_core` as
    in `user_round`."""
    from _tb_stages import timeline

    settle(path)
    cache = tempfile.mkdtemp(prefix="tb_pipeline_bench_cache_")
    stages = os.path.join(cache, "stages.jsonl")
    try:
        env = {"TB_PIPELINE_PARSE_WORKERS": "1"} if one_core else {}
        r = measure("views", logdir, "run", "--stages", stages, script="_tb_user.py", one_core=one_core,
                    env_extra=dict(env, TB_PIPELINE_CACHE_DIR=os.path.join(cache, "cache")))
        if "error" in r:
            return [{"error": r["error"]}]
        return timeline(stages, r["start_wall"]) + [{"stage": "4 views answered", "who": "client", "start_s": r["wall_s"],
                                                     "end_s": r["wall_s"]}]
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def print_timeline(name: str, stages: list[dict]) -> None:
    print(f"{name}: where the seconds go from TensorBoard's start (s from the process start)")
    for r in stages:
        if "error" in r:
            print("  n/a:", r["error"])
            continue
        print(f"  {r['start_s']:7.3f} {r['end_s']:7.3f} {r['end_s'] - r['start_s']:6.3f}  {r['who']:<8} {r['stage']}")


def bench_input(kind: str, size_mb: int, ttp_py: str | None, ttp_note: str, repeat: int = 3,
                stages: bool = False, only_user: bool = False) -> list[dict]:
    logdir = build_input(kind, size_mb)
    path = os.path.join(logdir, "baseline", "worker0.pt.trace.json")
    file_mb = os.path.getsize(path) / MIB
    name = f"{kind} {file_mb:.0f}MB"
    rows = []
    # The reference and our cold loads alternate, `repeat` rounds, fastest
    # of each kept: on a shared machine the slower runs measure the neighbours.
    load_before = os.getloadavg()[0]
    leans, colds, ones = [], [], []
    users: dict[bool, list[tuple[dict, dict]]] = {False: [], True: []}
    user_dir = user_logdir(path, name)
    taskset = shutil.which("taskset") is not None
    for i in range(max(1, repeat)):
        # Every measurement starts from the same state: the file in the page
        # cache and the memory it will touch backed by the host (`settle`).
        settle(path)
        leans.append(measure("lean", path))
        if i < USER_ROUNDS:
            for one_core in (False, True) if taskset else (False,):
                users[one_core].append(user_round(path, user_dir, one_core))
        if only_user:
            continue
        settle(path)
        colds.append(_fastest(1, "cold", path, cold=True))
        settle(path)
        ones.append(_fastest(1, "cold", path, cold=True, env_extra={"TB_PIPELINE_PARSE_WORKERS": "1"},
                             one_core=taskset))
    lean, cold, one = (min(rs, key=lambda r: r.get("wall_s", float("inf")), default={}) for rs in (leans, colds, ones))
    ref = lean.get("wall_s")
    rounds = f"best of {max(1, repeat)}, alternating; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    if stages:
        print_timeline(name, stage_timeline(path, user_dir))
        if taskset:
            print_timeline(f"{name}, one core (1 worker)", stage_timeline(path, user_dir, one_core=True))
    for one_core, label in ((False, "ours: TensorBoard start -> views"), (True, "  same, one core (1 worker)")):
        if users[one_core]:
            r, note = user_row(users[one_core], one_core)
            rows.append(row(name, label, r, ref, file_mb, note))
    rows.append(row(name, "lean bare decode (reference)", lean, ref, file_mb, f"{lean.get('events', 0):,} events; {rounds}"))
    if only_user:
        return rows
    rows.append(row(name, "ours cold: file -> every view", cold, ref, file_mb,
                    f"ready (mapped) after {cold.get('ready_s', 0):.2f} s; {cold.get('processes')} worker processes, "
                    f"one file decoded by up to that many; worker start {cold.get('pool_start_s', 0):.1f} s, once"))
    rows.append(row(name, "  same, one core (1 worker)", one, ref, file_mb,
                    "TB_PIPELINE_PARSE_WORKERS=1" + (" under taskset -c 0" if shutil.which("taskset") else "")
                    + ": what a single core does"))
    mem = _fastest(1, "coldmem", path, cold=True)
    if "error" not in mem:
        tree_mb, idle_mb = mem["peak_tree_pss_bytes"] / MIB, mem.get("idle_tree_pss_bytes", 0) / MIB
        rows.append(row(name, "  memory of a cold load", dict(mem, wall_s=mem["wall_s"]), None, file_mb,
                        f"peak PSS summed over the server and every worker and fork: {tree_mb:.0f} MB = "
                        f"{tree_mb / file_mb:.2f}x the file; over the idle tree's {idle_mb:.0f} MB (started "
                        f"workers, no trace): {tree_mb - idle_mb:.0f} MB = {(tree_mb - idle_mb) / file_mb:.2f}x "
                        "(sampled every 20 ms, which slows this run)"))
    cache = tempfile.mkdtemp(prefix="tb_pipeline_bench_cache_")
    try:
        measure("cold", cache, path)  # fills the cache
        warm = measure("warm", cache, path)
        rows.append(row(name, "ours warm (restart, cache hit)", warm, ref, file_mb,
                        f"ready after {warm.get('ready_s', 0):.3f} s"))
        measure("cold", cache, os.path.join(logdir, "experimental", "worker0.pt.trace.json"))
        d = measure("diff", cache, logdir)
        if "error" not in d:
            routes = ", ".join(f"{k.split('/')[1]} {v:.2f}" for k, v in d["routes_s"].items())
            d_routes = dict(d, wall_s=sum(d["routes_s"].values()))
            rows.append(row(name, "ours diff routes (warm, 4 routes)", d_routes, ref, file_mb, routes + f"; both ready {d['ready_s']:.2f} s"))
        else:
            rows.append(row(name, "ours diff routes", d, ref, file_mb))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    lat_dir = tempfile.mkdtemp(prefix="latency_", dir=OUT_DIR)
    try:
        os.makedirs(os.path.join(lat_dir, "small"))
        os.makedirs(os.path.join(lat_dir, "big"))
        os.link(path, os.path.join(lat_dir, "big", "worker0.pt.trace.json"))
        small = os.path.join(SHARED, "multi_rank", "sampled_rank-0.json.gz")
        shutil.copy(small, os.path.join(lat_dir, "small", "worker0.pt.trace.json.gz"))
        # With the start-up objects left out of GC passes (the default) and,
        # for comparison in the same run, without (TB_PIPELINE_GC_FREEZE=0).
        for label, freeze in (("other routes while it parses", "1"), ("  same, GC freeze off (before)", "0")):
            lat = measure("latency", lat_dir, env_extra={"TB_PIPELINE_GC_FREEZE": freeze})
            if "error" not in lat:
                rows.append(row(name, label, dict(lat, wall_s=lat["max_s"]), None, file_mb,
                                f"worst of {lat['requests']} requests; p50 {lat['p50_s'] * 1000:.0f} ms, "
                                f"p99 {lat['p99_s'] * 1000:.0f} ms; longest GC pass {lat['gc_max_s'] * 1000:.0f} ms "
                                f"({lat['gc_full_passes']} full); parse took {lat['wall_s']:.1f} s; "
                                f"load average {lat['load_average']:.1f}"))
            else:
                rows.append(row(name, label, lat, None, file_mb))
    finally:
        shutil.rmtree(lat_dir, ignore_errors=True)
    if ttp_py:
        t = measure("ttp", os.path.dirname(path), python=ttp_py)
        if "error" not in t and t.get("profiles", 0) == 0:
            t = {"error": "torch-tb-profiler loaded no profile from this file"}
        rows.append(row(name, f"torch-tb-profiler {TTP_VERSION}", t, ref, file_mb))
        if "error" not in t and "error" not in cold:
            rows[-1]["note"] = f"{t['wall_s'] / cold['wall_s']:.1f}x our cold load"
    else:
        rows.append(row(name, f"torch-tb-profiler {TTP_VERSION}", {"error": ttp_note}, ref, file_mb))
    return rows


# Memory touched before each load row, as a multiple of the file: more than
# the lean decode's peak (2.6x) and our process tree's (1.7x).
SETTLE_MEMORY_X = 3.5


def settle(path: str) -> None:
    """Reads `path` through (this VM keeps only 3-4 GB of page cache whatever
    memory is free, and a cold load writes half a GB of cache entry, so a
    1 GB row read the disk or not by chance), then touches and frees
    `SETTLE_MEMORY_X` times its size in a throwaway process. This VM hands
    freed memory back to its host (virtio balloon free page reporting), and
    a page touched again costs a host fault: 2.7 GB touched took 5.8 s
    after an idle spell and 0.17-0.25 s right after another process had
    used it, so the lean decode of one 1 GB file took 2.6 to 8.7 s. Settled,
    it takes 2.6-2.8 s, and every row of a run starts alike."""
    with open(path, "rb", buffering=0) as f:
        while f.read(8 * MIB):
            pass
    touch = int(SETTLE_MEMORY_X * os.path.getsize(path))
    subprocess.run([sys.executable, "-c", f"import numpy; numpy.ones({touch // 8})"], check=True)


def _vs_serial(ref: float | None, r: dict) -> str:
    if not ref or "error" in r:
        return ""
    cpu = r.get("cpu_s") or {}
    return (f"{ref / r['wall_s']:.2f}x faster than serial; CPU s server {cpu.get('self', 0):.1f}, "
            f"workers {cpu.get('children', 0):.1f}")


def _fastest(repeat: int, mode: str, *args: str, cold: bool = False, env_extra: dict | None = None,
             one_core: bool = False) -> dict:
    """The least disturbed of `repeat` runs (minimum wall time), as
    bench_load.py does: on a shared machine the rest is the neighbours.
    `cold`: each run gets a new, empty cache directory (the first argument)."""
    best: dict = {}
    for _ in range(max(1, repeat)):
        cache = tempfile.mkdtemp(prefix="tb_pipeline_bench_cache_") if cold else None
        try:
            r = measure(mode, *((cache,) if cold else ()), *args, env_extra=env_extra, one_core=one_core)
        finally:
            if cache:
                shutil.rmtree(cache, ignore_errors=True)
        if "error" in r:
            return r
        if not best or r["wall_s"] < best["wall_s"]:
            best = r
    return best


def bench_ranks(n: int, ttp_py: str | None, ttp_note: str, repeat: int = 1) -> list[dict]:
    run = build_ranks(n)
    files = sorted(os.path.join(run, f) for f in os.listdir(run))
    file_mb = sum(os.path.getsize(f) for f in files) / MIB
    name = f"{n} ranks"
    rows = []
    load_before = os.getloadavg()[0]
    s = _fastest(repeat, "serial", *files)
    ref = s.get("wall_s")
    rows.append(row(name, "serial in-process load (reference)", s, None, file_mb,
                    f"one by one, every view; CPU s {(s.get('cpu_s') or {}).get('self', 0):.1f}"))
    # The same cold load with one worker process: what the pool's
    # parallelism alone buys (its ceiling is the number of free cores).
    one = _fastest(repeat, "cold", *files, cold=True, env_extra={"TB_PIPELINE_PARSE_WORKERS": "1"})
    rows.append(row(name, "ours cold, 1 worker process", one, None, file_mb, _vs_serial(ref, one)))
    cold = _fastest(repeat, "cold", *files, cold=True)
    k = cold.get("processes") or 2
    ceiling = _fastest(repeat, "split", str(k), *files)
    rows.append(row(name, f"{k} forked in-process loaders", ceiling, None, file_mb,
                    f"{(ref or 0) / ceiling['wall_s']:.2f}x faster than serial: {k} processes here, no pool"
                    if ref and "error" not in ceiling else ""))
    rows.append(row(name, f"ours cold, {cold.get('processes', '?')} worker processes", cold, None, file_mb,
                    _vs_serial(ref, cold) + (f"; {one['wall_s'] / cold['wall_s']:.2f}x the 1-worker load"
                                             if "error" not in cold and "error" not in one else "")
                    + f"; best of {repeat}; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}"))
    cache = tempfile.mkdtemp(prefix="tb_pipeline_bench_cache_")
    try:
        measure("cold", cache, *files)  # fills the cache
        warm = measure("warm", cache, *files)
        rows.append(row(name, "ours warm (cache hit)", warm, None, file_mb, f"ready after {warm.get('ready_s', 0):.2f} s"))
        dist = measure("distributed", cache, os.path.dirname(run), "run")
        rows.append(row(name, "distributed route (warm cache)", dist, None, file_mb,
                        f"{dist.get('ranks', 0)} ranks, slowest rank {dist.get('slowest_rank')}"))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    cache = tempfile.mkdtemp(prefix="tb_pipeline_bench_cache_")
    try:
        dist = measure("distributed", cache, os.path.dirname(run), "run")
        rows.append(row(name, "distributed route (cold cache)", dist, None, file_mb,
                        f"{dist.get('ranks', 0)} ranks parsed in worker processes"))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if ttp_py:
        t = measure("ttp", run, python=ttp_py)
        rows.append(row(name, f"torch-tb-profiler {TTP_VERSION}", t, None, file_mb, f"{t.get('profiles', 0)} profiles"))
    else:
        rows.append(row(name, f"torch-tb-profiler {TTP_VERSION}", {"error": ttp_note}, None, file_mb))
    for r in rows:
        r["ratio"] = None
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="200,1024", help="comma-separated input sizes, MiB")
    p.add_argument("--inputs", default="gpu,cpu,cpu_stack", help="comma-separated subset of gpu,cpu,cpu_stack")
    p.add_argument("--ranks", type=int, default=64, help="worker files in the many-rank run (0: skip)")
    p.add_argument("--repeat", type=int, default=3, help="rounds of the lean/cold rows and of each many-rank load row; the fastest is kept")
    p.add_argument("--no-ttp", action="store_true", help="skip torch-tb-profiler")
    p.add_argument("--keep", action="store_true", help="keep generated inputs in benchmarks/out/scale (reused next time)")
    p.add_argument("--json", dest="json_out", help="also write the rows to this file")
    p.add_argument("--only-user", action="store_true",
                   help="only the user's rows (TensorBoard start -> views, on one core) and the lean decode")
    p.add_argument("--stages", action="store_true",
                   help="per input, one more TensorBoard start with every process's stage times, printed")
    args = p.parse_args(argv)
    os.makedirs(OUT_DIR, exist_ok=True)
    ttp_py, ttp_note = (None, "skipped (--no-ttp)") if args.no_ttp or args.only_user else ttp_python()
    if ttp_py is None:
        print(f"torch-tb-profiler {TTP_VERSION} unavailable: {ttp_note}", flush=True)
    rows: list[dict] = []
    try:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            for kind in [k for k in args.inputs.split(",") if k]:
                new_rows = bench_input(kind, size, ttp_py, ttp_note, args.repeat, args.stages,
                                       args.only_user)
                rows += new_rows
                print_rows(new_rows)
                print(flush=True)
        if args.ranks and not args.only_user:
            rows += bench_ranks(args.ranks, ttp_py, ttp_note, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(OUT_DIR, ignore_errors=True)
    print()
    print_rows(rows)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
