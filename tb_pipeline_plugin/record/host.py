"""Background sampler of the training process tree's resource use."""
from __future__ import annotations

import os
import threading
import time

import psutil

from ..formats.pipeline import HostSample
from .gil_contention import GilContention


class _Nvml:
    """GPU utilisation and memory through NVML (`nvidia-ml-py`), if both the
    package and a GPU are there; otherwise every reading is None."""

    def __init__(self) -> None:
        self.handles = []
        try:
            import pynvml  # nvidia-ml-py; optional

            pynvml.nvmlInit()
            self._nvml = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception:  # no package, no driver, no GPU: all mean "no GPU metrics"
            self.handles = []

    def read(self) -> tuple[float | None, int | None, int | None]:
        if not self.handles:
            return None, None, None
        try:
            util = [self._nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self.handles]
            mem = [self._nvml.nvmlDeviceGetMemoryInfo(h).used for h in self.handles]
        except Exception:
            return None, None, None
        return float(sum(util)) / len(util), int(sum(mem)), len(self.handles)


class HostSampler:
    """Samples every `interval_s` on its own thread; `gil=True` adds the GIL
    contention of this process over each interval (gil_contention.py)."""

    def __init__(self, write, interval_s: float = 1.0, pid: int | None = None, gil: bool = False):
        if interval_s <= 0:
            raise ValueError("host sampling interval must be > 0 seconds")
        self.write = write
        self.interval_s = interval_s
        self.root = psutil.Process(pid or os.getpid())
        self._procs: dict[int, psutil.Process] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: _Nvml | None = None
        self._gil = GilContention.create(interval_s) if gil else None

    def start(self) -> "HostSampler":
        self._thread = threading.Thread(target=self._run, name="tb-pipeline-host-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5 * self.interval_s + 1)

    def _run(self) -> None:
        self._nvml = _Nvml()
        gil, self._gil = self._gil, None
        self.sample()  # primes cpu_percent; its CPU reading is 0 (and no GIL reading yet)
        self._gil = gil.start() if gil is not None else None
        try:
            while not self._stop.wait(self.interval_s):
                self.sample()
            self.sample()
        finally:
            if self._gil is not None:
                self._gil.stop()

    def _tree(self) -> list[psutil.Process]:
        try:
            current = [self.root] + self.root.children(recursive=True)
        except psutil.Error:
            return []
        # Keep Process objects between samples: cpu_percent() measures since
        # the previous call on the same object.
        alive = {}
        for p in current:
            alive[p.pid] = self._procs.get(p.pid, p)
        self._procs = alive
        return list(alive.values())

    def sample(self) -> HostSample | None:
        procs = self._tree()
        if not procs:
            return None
        cpu = 0.0
        rss = 0
        read = write = 0
        io_ok = True
        for p in procs:
            try:
                with p.oneshot():
                    cpu += p.cpu_percent(None)
                    rss += p.memory_info().rss
                    if io_ok:
                        io = p.io_counters()
                        read += io.read_bytes
                        write += io.write_bytes
            except (psutil.AccessDenied, AttributeError):
                io_ok = False
            except psutil.Error:
                continue
        if not io_ok:
            disk = psutil.disk_io_counters()
            read, write = (disk.read_bytes, disk.write_bytes) if disk else (None, None)
        net = psutil.net_io_counters()
        gpu_util, gpu_mem, gpu_count = self._nvml.read() if self._nvml else (None, None, None)
        # Since the previous call, as the tree's readings: in one core's units, as cpu_pct.
        system = psutil.cpu_percent(None) * (psutil.cpu_count() or 1)
        sample = HostSample(
            wall_time_s=time.time(), cpu_pct=round(cpu, 2), rss_bytes=int(rss), num_processes=len(procs),
            disk_read_bytes=read, disk_write_bytes=write,
            net_sent_bytes=net.bytes_sent if net else None, net_recv_bytes=net.bytes_recv if net else None,
            gpu_util_pct=gpu_util, gpu_mem_used_bytes=gpu_mem, gpu_count=gpu_count,
            gil_contention_pct=self._gil.read_pct() if self._gil is not None else None,
            system_cpu_pct=round(system, 2),
        )
        self.write(sample)
        return sample
