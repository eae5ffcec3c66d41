"""Which stage limits an SPDL pipeline whose threads take turns at the GIL.

Wall time per task cannot tell a worker that computes from one that waits:
after a sleep or I/O call a thread must take the GIL back from the
pure-Python workers that hold it, so a sleeping stage's task time grows and
its workers look busiest. The CPU time each worker spends inside the user's
function (recorded beside wall time, record/task_cpu.py) can:

- a stage is *on CPU* when its CPU time is at least CPU_BOUND_SHARE of its
  call's wall time: the thread ran, it did not wait (a GIL-holding thread
  runs alone; GIL-releasing code on busy cores is preempted and falls below);
- the pipeline is *GIL-bound* when its on-CPU stages together burn between
  GIL_MIN_CORES and GIL_MAX_CORES of CPU per second (threads taking turns at
  one lock use at most one core; more means the work releases the GIL) and
  another stage waits (CPU below WAITING_SHARE of its task time).

The stage rows also carry the sampled time a worker waited runnable for a
core (`task_runq_mean_s`, record/task_cpu.py); this verdict does not read
it: at load average 12-14 on 2 cores, CPU + run-queue made the GIL-bound
pure-Python stage and the NumPy stage (which takes the GIL back between
ufuncs) want 1.8 and 1.6 cores, too close to tell apart, while CPU alone
names them right on a box that is not oversubscribed (benchmarks/README.md).
The DataLoader verdict (analysis/statistics/loader.py), one thread per process, does.

Then the limit is the on-CPU stage with the most CPU seconds per task, and
more threads will not help. Where the recorder sampled GIL contention
(record/gil_contention.py: the share of time a thread asking for the GIL
waits), it is the direct evidence: a run whose median sample is below
GIL_CONTENDED_PCT had the GIL free, whatever the CPU figures suggest, and a
GIL-bound verdict quotes it. The thresholds come from measured mixes
(benchmarks/README.md, "GIL-bound pipelines").
"""
from __future__ import annotations

import pandas as pd

CPU_BOUND_SHARE = 0.6
WAITING_SHARE = 0.5
GIL_MIN_CORES = 0.4
GIL_MAX_CORES = 1.2
# Median host sample of GIL contention from which the GIL counts as
# contended: measured 1-2 % (sleeping stages) vs 41-82 % (pure-Python
# stages) per sample (benchmarks/README.md, "GIL-bound pipelines").
GIL_CONTENDED_PCT = 20.0


def _num(stages: pd.DataFrame, column: str) -> pd.Series:
    if column not in stages:
        return pd.Series(float("nan"), index=stages.index)
    return pd.to_numeric(stages[column], errors="coerce")


def gil_limit(stages: pd.DataFrame, contention: dict | None = None) -> dict | None:
    """{stage, busy_pct, cpu_s, waiting: [(stage, task_s, cpu_s)], cores,
    contention} when the stage table (stages.STAGE_COLUMNS) shows a
    GIL-bound pipeline, else None. `contention`: the run's host summary
    (gil_contention_pct_median / _mean / _max), when sampled."""
    if not len(stages):
        return None
    median = (contention or {}).get("gil_contention_pct_median")
    if median is not None and median < GIL_CONTENDED_PCT:
        return None
    cpu = _num(stages, "task_cpu_mean_s")
    call = _num(stages, "task_call_mean_s")
    task = _num(stages, "task_mean_s")
    on_cpu = (cpu >= CPU_BOUND_SHARE * call) & (call > 0)
    waiting = (cpu < WAITING_SHARE * task) & (task > 0) & ~on_cpu
    if not on_cpu.any() or not waiting.any():
        return None
    cores = float(_num(stages, "cpu_cores")[on_cpu].sum())
    if not GIL_MIN_CORES <= cores <= GIL_MAX_CORES:
        return None
    i = cpu[on_cpu].idxmax()
    busy = _num(stages, "busy_pct")[i]
    return {
        "stage": str(stages.at[i, "stage"]), "busy_pct": None if pd.isna(busy) else float(busy),
        "cpu_s": float(cpu[i]), "cores": cores, "contention": contention if median is not None else None,
        "waiting": [(str(stages.at[j, "stage"]), float(task[j]), float(cpu[j])) for j in stages.index[waiting]],
    }


def gil_summary(limit: dict) -> str:
    waits = ", ".join(f"{name} ({task_s * 1e3:.1f} ms a task for {cpu_s * 1e3:.2f} ms of CPU)"
                      for name, task_s, cpu_s in limit["waiting"])
    contention = limit.get("contention")
    said = (f" A thread asking for the GIL waited {contention['gil_contention_pct_mean']:.0f}% of the time "
            f"(peak {contention['gil_contention_pct_max']:.0f}%): the GIL is contended." if contention else "")
    return (f"Stage {limit['stage']} limits the pipeline: each task computes {limit['cpu_s'] * 1e3:.1f} ms "
            f"holding the GIL, and the pipeline's threads that compute use {limit['cores']:.2f} core between "
            f"them, the one core the GIL allows.{said} The stages that wait, {waits}, spend their task time off CPU "
            "(sleeping, in I/O, taking the GIL back), not working: they are not the bottleneck. More threads for any stage will not help; "
            f"run {limit['stage']} in processes (SPDL: a ProcessPoolExecutor as the stage's executor), replace "
            "it with an implementation that releases the GIL (NumPy, a C/C++ extension), or use free-threaded "
            "Python.")
