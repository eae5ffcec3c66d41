"""The recorder's DataLoader clocks: CPU time per DataLoader part beside
wall time, in the training process and in its loader worker processes.

A *fetch* (the dataset's `__getitem__` / iteration for one batch, its
collate included) and the `collate_fn` alone are measured in the thread that
runs them (record/task_cpu.py). With `num_workers=0` that thread is the
training loop's: a fetch whose CPU time is close to its wall time computes
(decoding, augmenting in Python); one far below waits (disk, network).

With `num_workers > 0` the same clocks run in each worker process. Every
worker runs `torch.utils.data._utils.worker._worker_loop`, looked up when a
loader starts its workers; the recording process replaces it with
`worker_loop` (module level, so the `spawn` start method pickles it by name
and a fresh interpreter imports it). In the worker it zeroes the clocks a
fork inherited, patches the fetchers (a spawned interpreter has none
patched), runs torch's loop, and writes the clocks' sums to
`{dir}/{pid}.json` every FLUSH_S and when the loop ends (a worker still
running when the recorder closes has its last second missing). No user
code changes and nothing in the batches: the figures travel by file, the
directory by an environment variable that worker processes inherit.

The fetcher classes of `torch.utils.data._utils.fetch` are patched once per
process (they are what every DataLoader iterator calls); the clocks are
process-wide, written as final `stage_tasks` records with `pipeline_id` -1
when the recorder closes, the workers' sums added and their records then
carrying the number of workers as their concurrency.
"""
from __future__ import annotations

import glob
import inspect
import json
import os
import shutil
import tempfile
import threading
import time

from ..formats.pipeline import StageTasks
from .task_cpu import TaskClock, runq_ns, timed

LOADER_PIPELINE_ID = -1
FETCH = TaskClock()
COLLATE = TaskClock()
CLOCKS = {"fetch": FETCH, "collate_fn": COLLATE}
ENV_DIR = "TB_PIPELINE_LOADER_WORKERS_DIR"
FLUSH_S = 1.0
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
    loop; False without torch."""
    global _workers_dir
    try:
        from torch.utils.data._utils import fetch as torch_fetch
    except ImportError:
        return False
    for cls in (torch_fetch._MapDatasetFetcher, torch_fetch._IterableDatasetFetcher):
        if not getattr(cls.fetch, "_tb_pipeline", False):
            cls.fetch = _timed_fetch(cls.fetch)
    if workers:
        _workers_dir = _install_worker_loop()
    return True


def final_records() -> list[StageTasks]:
    """The parts measured over the whole run, this process and its loader
    workers together, one record each (no percentiles: the clocks keep sums
    only); `stage` is `DataLoader:{part}`, `[{num_workers}]` appended when
    workers ran it. Removes the workers' files."""
    global _workers_dir
    in_workers, num_workers = _collect(_workers_dir)
    _remove(_workers_dir)
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


# ---- loader worker processes -------------------------------------------------

def _torch_worker_module():
    from torch.utils.data._utils import worker

    return worker


def _install_worker_loop() -> str | None:
    """Patches the worker loop (once per process); the directory the workers
    write to (a new one when a closed recorder removed the last), None
    without torch."""
    try:
        worker = _torch_worker_module()
    except ImportError:
        return None
    if not getattr(worker._worker_loop, "_tb_pipeline", False):
        worker_loop.__wrapped__ = worker._worker_loop
        worker._worker_loop = worker_loop
    directory = os.environ.get(ENV_DIR)
    if not directory or not os.path.isdir(directory):
        directory = tempfile.mkdtemp(prefix="tb-pipeline-loader-workers-")
        os.environ[ENV_DIR] = directory
    return directory


def _original():
    fn = _torch_worker_module()._worker_loop
    return getattr(fn, "__wrapped__", fn)


def worker_loop(*args, **kwargs):
    original = _original()
    directory = os.environ.get(ENV_DIR)
    if not directory:
        return original(*args, **kwargs)
    try:
        num_workers = inspect.signature(original).bind(*args, **kwargs).arguments.get("num_workers")
    except TypeError:
        num_workers = None
    for clock in CLOCKS.values():
        clock.reset()
    install()
    flusher = _Flusher(os.path.join(directory, f"{os.getpid()}.json"), num_workers)
    flusher.start()
    try:
        return original(*args, **kwargs)
    finally:
        flusher.stop()


worker_loop._tb_pipeline = True


class _Flusher(threading.Thread):
    def __init__(self, path: str, num_workers: int | None):
        super().__init__(name="tb-pipeline-loader-worker-flush", daemon=True)
        self.path = path
        self.num_workers = num_workers
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(FLUSH_S):
            self.write()

    def stop(self) -> None:
        self._stop_event.set()
        self.write()

    def write(self) -> None:
        parts = {name: clock.totals() for name, clock in CLOCKS.items()}
        tmp = f"{self.path}.tmp{threading.get_ident()}"
        try:
            with open(tmp, "w") as f:
                json.dump({"num_workers": self.num_workers, "parts": parts}, f)
            os.replace(tmp, self.path)  # a reader sees the previous file or this one, whole
        except OSError:
            pass  # the recording's figures miss this worker; training goes on


def _collect(directory: str | None) -> tuple[dict[str, tuple[int, ...]], int | None]:
    """({part: TaskClock.totals()} summed over the workers, the largest
    num_workers seen); unreadable files are skipped."""
    sums = {name: (0, 0, 0, 0, 0) for name in CLOCKS}
    workers = None
    for path in glob.glob(os.path.join(directory or "", "*.json")) if directory else []:
        try:
            with open(path) as f:
                data = json.load(f)
            parts = {name: tuple(int(v) for v in data["parts"].get(name, (0,) * 5)) for name in CLOCKS}
            if any(len(v) != 5 for v in parts.values()):
                continue
            for name in CLOCKS:
                sums[name] = tuple(a + b for a, b in zip(sums[name], parts[name]))
            if isinstance(data.get("num_workers"), int):
                workers = max(workers or 0, data["num_workers"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sums, workers


def _remove(directory: str | None) -> None:
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
