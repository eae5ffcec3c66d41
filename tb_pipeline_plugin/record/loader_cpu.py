"""CPU time per DataLoader part, beside wall time: a fetch (the dataset's
`__getitem__` / iteration for one batch, its collate included) and the
`collate_fn` alone, measured in the thread that runs them (record/task_cpu.py).

With `num_workers=0` that thread is the training loop's: a fetch whose CPU
time is close to its wall time computes (decoding, augmenting in Python);
one far below waits (disk, network). With `num_workers > 0` the same clocks
run in each worker process and come back by file (record/loader_workers.py);
the records then carry the number of workers as their concurrency.

The fetcher classes of `torch.utils.data._utils.fetch` are patched once per
process (they are what every DataLoader iterator calls); the clocks are
process-wide, written as final `stage_tasks` records with `pipeline_id` -1
when the recorder closes, the workers' sums added.
"""
from __future__ import annotations

import time

from ..formats.pipeline import StageTasks
from . import loader_workers
from .task_cpu import TaskClock, runq_ns, timed

LOADER_PIPELINE_ID = -1
FETCH = TaskClock()
COLLATE = TaskClock()
CLOCKS = {"fetch": FETCH, "collate_fn": COLLATE}
_workers_dir: str | None = None
# One fetch in 16 reads the run-queue clock, as task_cpu.py samples a task:
# one in 8 cost 0.12 µs more per timed call, past the 2 µs budget
# (benchmarks/bench_record.py), and a run's fetches still give the mean
# dozens of samples a minute.
_FETCH_SAMPLE_MASK = 15
_cpu_ns = time.thread_time_ns
_wall_ns = time.perf_counter_ns


def _timed_fetch(original):
    push = FETCH.push

    def fetch(self, possibly_batched_index):
        collate = self.collate_fn
        if not getattr(collate, "_tb_pipeline", False):
            self.collate_fn = timed(collate, COLLATE)
            self.collate_fn._tb_pipeline = True
        c0 = _cpu_ns()
        w0 = _wall_ns()
        q0 = -1 if w0 & _FETCH_SAMPLE_MASK else runq_ns()
        batch = original(self, possibly_batched_index)
        # Successful fetches only: an iterable dataset ends with a StopIteration.
        if q0 < 0:
            push((_cpu_ns() - c0, _wall_ns() - w0))
        else:
            q1 = runq_ns()
            push((_cpu_ns() - c0, _wall_ns() - w0, q1 - q0 if q1 >= 0 else -1))
        return batch

    fetch._tb_pipeline = True
    fetch.__wrapped__ = original
    return fetch


def install(workers: bool = False) -> bool:
    """Patches the fetchers (once) and, with `workers`, the worker processes'
    loop (loader_workers.py); False without torch."""
    global _workers_dir
    try:
        from torch.utils.data._utils import fetch as torch_fetch
    except ImportError:
        return False
    for cls in (torch_fetch._MapDatasetFetcher, torch_fetch._IterableDatasetFetcher):
        if not getattr(cls.fetch, "_tb_pipeline", False):
            cls.fetch = _timed_fetch(cls.fetch)
    if workers:
        _workers_dir = loader_workers.install()
    return True


def final_records() -> list[StageTasks]:
    """The parts measured over the whole run, this process and its loader
    workers together, one record each (no percentiles: the clocks keep sums
    only); `stage` is `DataLoader:{part}`, `[{num_workers}]` appended when
    workers ran it. Removes the workers' files."""
    global _workers_dir
    in_workers, num_workers = loader_workers.collect(_workers_dir)
    loader_workers.remove(_workers_dir)
    _workers_dir = None
    out = []
    for name, clock in CLOCKS.items():
        here = clock.totals()
        calls, cpu_ns, wall_ns, runq_calls, runq = (a + b for a, b in zip(here, in_workers[name]))
        w_calls = in_workers[name][0]
        if not calls:
            continue
        cpu_s, call_s = cpu_ns / calls * 1e-9, wall_ns / calls * 1e-9
        runq_s = runq / runq_calls * 1e-9 if runq_calls else None
        workers = num_workers if w_calls else None
        out.append(StageTasks(
            wall_time_s=time.time(), stage=f"DataLoader:{name}" + (f"[{workers}]" if workers else ""),
            stage_name=name, tasks=calls, failures=0, task_mean_s=call_s, task_cpu_mean_s=cpu_s,
            task_call_mean_s=call_s, task_runq_mean_s=runq_s, pipeline_id=LOADER_PIPELINE_ID, stage_id=name, concurrency=workers,
            final=True))
    return out
