"""CPU time per DataLoader part, beside wall time: a fetch (the dataset's
`__getitem__` / iteration for one batch, its collate included) and the
`collate_fn` alone, measured in the thread that runs them (record/task_cpu.py).

With `num_workers=0` that thread is the training loop's: a fetch whose CPU
time is close to its wall time computes (decoding, augmenting in Python);
one far below waits (disk, network). Worker processes (`num_workers > 0`)
are not measured: their clocks would need a channel back to the recorder.

The fetcher classes of `torch.utils.data._utils.fetch` are patched once per
process (they are what every DataLoader iterator calls); the clocks are
process-wide, written as final `stage_tasks` records with `pipeline_id` -1
when the recorder closes.
"""
from __future__ import annotations

import time

from ..formats.pipeline import StageTasks
from .task_cpu import TaskClock, timed

LOADER_PIPELINE_ID = -1
FETCH = TaskClock()
COLLATE = TaskClock()
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
        batch = original(self, possibly_batched_index)
        # Successful fetches only: an iterable dataset ends with a StopIteration.
        push((_cpu_ns() - c0, _wall_ns() - w0))
        return batch

    fetch._tb_pipeline = True
    return fetch


def install() -> bool:
    """Patches the fetchers (once); False without torch."""
    try:
        from torch.utils.data._utils import fetch as torch_fetch
    except ImportError:
        return False
    for cls in (torch_fetch._MapDatasetFetcher, torch_fetch._IterableDatasetFetcher):
        if not getattr(cls.fetch, "_tb_pipeline", False):
            cls.fetch = _timed_fetch(cls.fetch)
    return True


def final_records() -> list[StageTasks]:
    """The parts measured over the whole run, one record each (no
    percentiles: the clocks keep sums only)."""
    out = []
    for name, clock in (("fetch", FETCH), ("collate_fn", COLLATE)):
        cpu_s, call_s = clock.means_s(lap=False)
        if cpu_s is None:
            continue
        out.append(StageTasks(
            wall_time_s=time.time(), stage=f"DataLoader:{name}", stage_name=name, tasks=clock.calls, failures=0,
            task_mean_s=call_s, task_cpu_mean_s=cpu_s, task_call_mean_s=call_s, pipeline_id=LOADER_PIPELINE_ID,
            stage_id=name, final=True))
    return out
