"""Which part of a PyTorch DataLoader limits loading, and what to do.

The recorder times two parts per batch (record/loader_clocks.py): the fetch
(the dataset's `__getitem__` calls, `collate_fn` included) and `collate_fn`
alone, CPU and wall time, in the training loop's thread (`num_workers=0`)
or in the worker processes (the record's concurrency is `num_workers`).
`__getitem__` is the fetch less the collate. The part with the most wall
time per batch limits; its CPU share says why:

- it *computes* (CPU, plus the sampled time it waited runnable for a core,
  >= CPU_BOUND_SHARE of its wall time): with
  `num_workers=0` it runs in the loop's thread, sharing its GIL; when the
  process's GIL is contended (record/gil_contention.py) it holds the GIL and
  only processes help; when not, the work releases it (NumPy) and worker
  processes still spread it over the cores. With workers: N workers give at
  most N / (wall per batch) batches a second, up to the machine's cores;
- it *waits* (CPU < WAITING_SHARE): I/O, sleeps, locks; more workers or
  prefetching overlap the waits, CPU is not what it lacks.
"""
from __future__ import annotations

import math

import pandas as pd

from .gil import CPU_BOUND_SHARE, GIL_CONTENDED_PCT, WAITING_SHARE

LOADER_PIPELINE_ID = -1


def _row(stages: pd.DataFrame, name: str) -> pd.Series | None:
    ids = pd.to_numeric(stages["pipeline_id"], errors="coerce")
    rows = stages[(ids == LOADER_PIPELINE_ID) & (stages["stage_name"] == name)]
    return rows.iloc[-1] if len(rows) else None


def _f(row: pd.Series, column: str) -> float:
    v = pd.to_numeric(pd.Series([row.get(column)]), errors="coerce")[0]
    return float(v) if pd.notna(v) else math.nan


def loader_limit(stages: pd.DataFrame, contention_pct: float | None = None) -> dict | None:
    """{stage, part, wall_s, cpu_s, workers, kind: computes|waits|mixed,
    gil_contention_pct} for the DataLoader part with the most wall time per
    batch; None without DataLoader CPU figures."""
    if not len(stages) or "pipeline_id" not in stages:
        return None
    fetch, collate = _row(stages, "fetch"), _row(stages, "collate_fn")
    if fetch is None or not math.isfinite(_f(fetch, "task_cpu_mean_s")):
        return None
    f_wall, f_cpu = _f(fetch, "task_call_mean_s"), _f(fetch, "task_cpu_mean_s")
    f_runq = _f(fetch, "task_runq_mean_s")
    f_runq = f_runq if math.isfinite(f_runq) else 0.0
    c_wall = c_cpu = c_runq = 0.0
    if collate is not None and math.isfinite(_f(collate, "task_cpu_mean_s")):
        # collate_fn runs inside the fetch: per fetch, its calls' share.
        per_fetch = _f(collate, "tasks") / _f(fetch, "tasks") if _f(fetch, "tasks") > 0 else 1.0
        c_wall, c_cpu = _f(collate, "task_call_mean_s") * per_fetch, _f(collate, "task_cpu_mean_s") * per_fetch
        runq = _f(collate, "task_runq_mean_s")
        c_runq = runq * per_fetch if math.isfinite(runq) else 0.0
    parts = [("__getitem__", fetch, max(f_wall - c_wall, 0.0), max(f_cpu - c_cpu, 0.0), max(f_runq - c_runq, 0.0))]
    if collate is not None:
        parts.append(("collate_fn", collate, c_wall, c_cpu, c_runq))
    part, row, wall, cpu, runq = max(parts, key=lambda p: p[2])
    if not wall > 0:
        return None
    # Time waiting runnable for a core counts as computing: an oversubscribed
    # machine preempts a computing thread (analysis/statistics/gil.py).
    share = min((cpu + runq) / wall, 1.0)
    kind = "computes" if share >= CPU_BOUND_SHARE else "waits" if share < WAITING_SHARE else "mixed"
    workers = _f(fetch, "concurrency")
    return {"stage": str(row["stage"]), "part": part, "wall_s": wall, "cpu_s": cpu, "runq_s": runq, "share": share,
            "workers": int(workers) if math.isfinite(workers) and workers > 0 else 0, "kind": kind,
            "gil_contention_pct": contention_pct}


def loader_summary(limit: dict, cores: int, keeps_up: bool) -> str:
    part, workers, wall, cpu = limit["part"], limit["workers"], limit["wall_s"], limit["cpu_s"]
    where = (f"in each of its {workers} worker processes" if workers
             else "in the training loop's thread (num_workers=0)")
    head = (f"DataLoader {part} {'is its costliest part' if keeps_up else 'limits loading'}: "
            f"{wall * 1e3:.1f} ms a batch, {cpu * 1e3:.1f} ms of it on CPU, {where}.")
    if keeps_up:
        return f"The DataLoader keeps up with the training loop. {head}"
    contention = limit["gil_contention_pct"]
    if limit["kind"] == "waits":
        more = f"num_workers above {workers}" if workers else "num_workers > 0"
        return (f"{head} It waits ({100 * limit['share']:.0f}% of its time on or waiting for a CPU): I/O, sleeps "
                "or locks, not "
                f"computing. Overlap the waits: more workers ({more}), a larger prefetch_factor, or "
                "asynchronous reads; more CPU will not help.")
    if limit["kind"] == "mixed":
        return f"{head} Raise num_workers, or make {part} cheaper."
    if workers:
        rate = workers / wall
        room = (f"Raise num_workers towards the machine's {cores} cores" if workers < cores
                else f"num_workers already matches the machine's {cores} cores: more will not help")
        return (f"{head} It computes: {workers} workers supply at most {rate:.0f} batches a second. {room}; "
                f"beyond that, make {part} cheaper (vectorise it, or a library that releases the GIL).")
    if contention is not None and contention < GIL_CONTENDED_PCT:
        return (f"{head} It computes with the GIL mostly free (a thread asking for it waited {contention:.0f}% "
                f"of the time: the work releases it, like NumPy): worker processes (num_workers > 0) spread it "
                f"over the machine's {cores} cores; beyond that, make {part} cheaper.")
    said = (f" (a thread asking for the GIL waited {contention:.0f}% of the time)" if contention is not None
            else "")
    return (f"{head} It computes in Python holding the GIL{said}, in the thread that also runs the training "
            f"step: threads will not help; worker processes will (num_workers > 0, up to the machine's {cores} "
            f"cores), or make {part} cheaper (vectorise it, or a library that releases the GIL).")
