"""A stage's own threads: how many cores one call keeps busy by itself, and
oversubscription, from a sweep's levels (rows of
`analysis.diagnostic.sweep_frame`, one executor's curve ascending).

* Cores a call keeps busy per calling thread (`cores_per_caller`): the
  level's CPU over the CPU of the threads that call the stage. A stage whose
  library runs a pool of its own (torch's intra-op threads, a BLAS pool)
  keeps several busy for each caller. The ratio holds on a machine others
  keep busy, where the stage gets less of every core but its callers and
  its pool alike, so it is read instead of the CPU % itself. Results written
  before the callers' CPU was measured give the CPU % over the level (one
  core a worker): a lower bound.
* Oversubscribed: past the best level the QPS falls while the machine is at
  100 %, and the stage's own threads outnumber the cores (workers x the
  cores each kept busy alone), or, for a stage that runs on one core a
  worker, its own CPU fills most of the machine: more threads than cores
  then only wait for a core, switch and thrash caches. Other processes
  filling the machine are not this (diagnostic_spread.crowded says that).
"""
from __future__ import annotations

import math

import pandas as pd

PARALLEL_INSIDE_CORES = 1.5  # a call keeps >= 1.5 cores busy per calling thread: its own pool works beside it
# The ratio needs both parts well above what the harness's own threads and the CPU counters' 10 ms tick add to
# a level (about 3 % of a core, measured on a sleeping stage); a starved stage on a busy machine still clears
# them (callers at 20 %, its pool at 19 %, measured on 2 cores with a load of 6).
MIN_CALLER_CPU_PCT = 5.0
MIN_POOL_CPU_PCT = 8.0
OVERSUBSCRIBED_MACHINE = 0.9  # "the machine at 100 %": >= 90 % of all cores busy (the counters miss a little)
OVERSUBSCRIBED_FALL = 0.7  # the QPS falls below 0.7 x the best, as the contention rule reads a fall
STAGE_FILLS = 0.75  # one core a worker: the stage's own CPU fills >= 75 % of all cores (the saturated rule's)


def cores_per_caller(point) -> float:
    """Cores one call keeps busy per calling thread at a level (NaN: its callers mostly wait; at most 1 where
    the rest of the tree's CPU is within the harness's noise)."""
    caller, cpu = float(point.get("caller_cpu_pct") or 0.0), float(point["cpu_pct"])
    if caller > 0:
        if caller < MIN_CALLER_CPU_PCT:
            return math.nan
        return cpu / caller if cpu - caller >= MIN_POOL_CPU_PCT else min(cpu / caller, 1.0)
    return float(point["cpu_pct"]) / (100.0 * max(int(point["concurrency"]), 1))


def cores_text(cores: float) -> str:
    """2.04 -> "2", 1.73 -> "1.7", 15.8 -> "16"."""
    return f"{cores:.0f}" if cores >= 3 else f"{cores:.1f}".rstrip("0").rstrip(".")


PLURAL = {"thread": "threads", "process": "processes"}


def workers_text(n: int, executor: str) -> str:
    """"1 thread", "4 processes"."""
    return f"{n} {executor if n == 1 else PLURAL.get(executor, executor)}"


def inside(curve: pd.DataFrame) -> dict | None:
    """{executor, concurrency, cores, threads} of the curve's lowest level
    when a call there keeps PARALLEL_INSIDE_CORES or more busy; else None."""
    if curve.empty:
        return None
    low = curve.iloc[0]
    cores = cores_per_caller(low)
    if not cores >= PARALLEL_INSIDE_CORES:
        return None
    return {"executor": str(low["executor"]), "concurrency": int(low["concurrency"]), "cores": cores,
            "threads": int(low.get("intra_op_threads") or 0)}


def inside_text(found: dict) -> str:
    """"uses 2 cores by itself at 1 thread: torch intra-op threads (2 a worker)"."""
    threads = found["threads"]
    why = (f"torch intra-op threads ({threads} a worker)" if threads > 1 else
           f"threads of its own (a native library's pool; torch had {threads} intra-op thread)" if threads == 1 else
           "threads of its own (a native library's pool)")
    return (f"uses {cores_text(found['cores'])} cores by itself at "
            f"{workers_text(found['concurrency'], found['executor'])}: {why}")


def oversubscription(curve: pd.DataFrame, best, cores: int) -> dict | None:
    """The first level past `best` (the curve's best row) where the curve is
    oversubscribed (module docstring); None when none is."""
    if curve.empty or best is None:
        return None
    own = cores_per_caller(curve.iloc[0])
    own = own if own >= PARALLEL_INSIDE_CORES else 1.0
    for _, p in curve[curve["concurrency"] > int(best["concurrency"])].iterrows():
        level = int(p["concurrency"])
        falls = float(p["qps"]) < OVERSUBSCRIBED_FALL * float(best["qps"])
        full = float(p["machine_cpu_pct"]) >= OVERSUBSCRIBED_MACHINE * 100.0 * cores
        busy = level * own
        outnumber = busy > cores if own > 1.0 else (level > cores
                                                    and float(p["cpu_pct"]) >= STAGE_FILLS * 100.0 * cores)
        if falls and full and outnumber:
            return {"executor": str(p["executor"]), "best_concurrency": int(best["concurrency"]),
                    "best_qps": float(best["qps"]), "concurrency": level, "qps": float(p["qps"]),
                    "machine_cpu_pct": float(p["machine_cpu_pct"]), "cores_each": own, "busy": busy,
                    "threads": int(p.get("intra_op_threads") or 0), "cores": cores}
    return None


def oversubscription_text(found: dict) -> str:
    """"processes oversubscribe the 16 cores: QPS falls from 101 at 1 to 3.8 at 2 with the machine at
    100 % CPU (2 workers x 16 threads each = 32 busy threads)"."""
    level, cores = found["concurrency"], found["cores"]
    each = (f"{level} workers × {cores_text(found['cores_each'])} busy threads each ≈ {found['busy']:.0f}"
            if found["cores_each"] > 1.0 else f"{level} workers")
    return (f"{PLURAL[found['executor']]} oversubscribe the {cores} cores: QPS falls from {found['best_qps']:.3g} at "
            f"{found['best_concurrency']} to {found['qps']:.3g} at {level} with the machine at "
            f"{found['machine_cpu_pct']:.0f} % CPU ({each} on {cores} cores)")


ADVICE = ("give each worker fewer intra-op threads (torch.set_num_threads(k), in a DataLoader's worker_init_fn) "
          "or run fewer workers, so that workers × threads each stays within the cores")
