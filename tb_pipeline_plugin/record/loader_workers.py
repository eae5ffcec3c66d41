"""CPU time of DataLoader parts inside worker processes (`num_workers > 0`).

Every worker process runs `torch.utils.data._utils.worker._worker_loop`,
looked up when a loader starts its workers. The recording process replaces
it with `worker_loop` (module level, so the `spawn` start method pickles it
by name and a fresh interpreter imports it). In the worker it zeroes the
clocks a fork inherited, patches the fetchers (loader_cpu.install: a spawned
interpreter has none patched), runs torch's loop, and writes the clocks'
sums to `{dir}/{pid}.json` every FLUSH_S and when the loop ends (a worker
still running when the recorder closes has its last second missing). The
recorder adds the files to the DataLoader parts' final records
(loader_cpu.final_records) and removes the directory.

No user code changes and nothing in the batches: the figures travel by file,
the directory by an environment variable that worker processes inherit.
"""
from __future__ import annotations

import glob
import inspect
import json
import os
import shutil
import tempfile
import threading

ENV_DIR = "TB_PIPELINE_LOADER_WORKERS_DIR"
FLUSH_S = 1.0
PARTS = ("fetch", "collate_fn")


def _torch_worker_module():
    from torch.utils.data._utils import worker

    return worker


def install() -> str | None:
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
    from . import loader_cpu

    try:
        num_workers = inspect.signature(original).bind(*args, **kwargs).arguments.get("num_workers")
    except TypeError:
        num_workers = None
    for clock in loader_cpu.CLOCKS.values():
        clock.reset()
    loader_cpu.install()
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
        from . import loader_cpu

        parts = {name: clock.totals() for name, clock in loader_cpu.CLOCKS.items()}
        tmp = f"{self.path}.tmp{threading.get_ident()}"
        try:
            with open(tmp, "w") as f:
                json.dump({"num_workers": self.num_workers, "parts": parts}, f)
            os.replace(tmp, self.path)  # a reader sees the previous file or this one, whole
        except OSError:
            pass  # the recording's figures miss this worker; training goes on


def collect(directory: str | None) -> tuple[dict[str, tuple[int, ...]], int | None]:
    """({part: TaskClock.totals()} summed over the workers, the largest
    num_workers seen); unreadable files are skipped."""
    sums = {name: (0, 0, 0, 0, 0) for name in PARTS}
    workers = None
    for path in glob.glob(os.path.join(directory or "", "*.json")) if directory else []:
        try:
            with open(path) as f:
                data = json.load(f)
            parts = {name: tuple(int(v) for v in data["parts"].get(name, (0,) * 5)) for name in PARTS}
            if any(len(v) != 5 for v in parts.values()):
                continue
            for name in PARTS:
                sums[name] = tuple(a + b for a, b in zip(sums[name], parts[name]))
            if isinstance(data.get("num_workers"), int):
                workers = max(workers or 0, data["num_workers"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sums, workers


def remove(directory: str | None) -> None:
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
