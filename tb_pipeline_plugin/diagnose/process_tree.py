"""CPU and memory of this process and its worker processes, and of the machine.

One busy core = 100 %, as in `top`. Workers are passed by pid (the process
executor keeps them alive until they are sampled) rather than discovered:
listing children makes psutil read every /proc/*/stat in Python, holding the
GIL long enough to disturb the very stage being measured. Reaped children
count through children_user/children_system of this process.
"""
from __future__ import annotations

import threading

import psutil


def processes(pids) -> list[psutil.Process]:
    """The live processes among `pids` (one that has exited is left out)."""
    out = []
    for pid in pids:
        try:
            out.append(psutil.Process(pid))
        except psutil.Error:
            pass
    return out


def tree_cpu_s(children: list[psutil.Process] = ()) -> float:
    """User + system CPU seconds used so far by this process and `children`."""
    me = psutil.Process()
    t = me.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in children:
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.Error:
            pass  # exited between listing and reading: counted once reaped
    return total


def machine_busy_s() -> float:
    """CPU seconds every core of the machine spent busy (not idle, not iowait)."""
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)


def tree_rss_bytes(children: list[psutil.Process] = ()) -> int:
    me = psutil.Process()
    total = 0
    for proc in [me, *children]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class CpuWindow:
    """CPU % of the tree and of the machine between start() and stop()."""

    def __init__(self, pids=()):
        self.children = processes(pids)
        self.started = False

    def start(self, now_s: float) -> None:
        self._t0, self._tree0, self._machine0 = now_s, tree_cpu_s(self.children), machine_busy_s()
        self.started = True

    def stop(self, now_s: float) -> tuple[float, float]:
        if not self.started:
            return 0.0, 0.0
        wall = max(now_s - self._t0, 1e-9)
        return (100.0 * (tree_cpu_s(self.children) - self._tree0) / wall,
                max(0.0, 100.0 * (machine_busy_s() - self._machine0) / wall))


def available_bytes() -> int:
    """Memory the machine can still give without swapping (free + reclaimable cache)."""
    return int(psutil.virtual_memory().available)


def total_bytes() -> int:
    return int(psutil.virtual_memory().total)


def gigabytes(n_bytes: float) -> str:
    return f"{n_bytes / 2 ** 30:.1f} GB"


class PeakRss:
    """Samples the tree's RSS in a thread; `peak_bytes` is the largest seen.

    It watches memory too: `used_bytes`, what the level took, is the tree's
    RSS growth over `rss_before`; with worker processes, the smaller of that
    (their RSS counts the pages they share with us once per worker) and the
    fall of the machine's free memory from `available_before` (other
    processes' allocations count there). When free memory falls under
    `floor_bytes`, or the level takes more than `limit_bytes`, `on_low()` is
    called once (the level stops) and `low` says why.

    Started only after process workers have forked: a thread alive at fork
    time could hold a lock the child then waits on forever.
    """

    def __init__(self, pids=(), interval_s: float = 0.1, floor_bytes: int = 0, limit_bytes: int = 0, on_low=None,
                 available_before: int | None = None, rss_before: int | None = None):
        self.children = processes(pids)
        self.rss_before = tree_rss_bytes() if rss_before is None else rss_before
        self.interval_s = interval_s
        self.peak_bytes = 0
        self.floor_bytes, self.limit_bytes, self.on_low = floor_bytes, limit_bytes, on_low
        self.available_before = available_bytes() if available_before is None else available_before
        self.min_available_bytes = self.available_before
        self.low = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="diagnose-rss", daemon=True)

    @property
    def used_bytes(self) -> int:
        grown = self.peak_bytes - self.rss_before
        if self.children:
            grown = min(grown, self.available_before - self.min_available_bytes)
        return max(0, grown)

    def _sample(self) -> None:
        self.peak_bytes = max(self.peak_bytes, tree_rss_bytes(self.children))
        free = available_bytes()
        self.min_available_bytes = min(self.min_available_bytes, free)
        if self.low:
            return
        if self.floor_bytes and free < self.floor_bytes:
            self.low = f"low memory: {gigabytes(free)} free, under the floor of {gigabytes(self.floor_bytes)}"
        elif self.limit_bytes and self.used_bytes > self.limit_bytes:
            self.low = f"low memory: the level took {gigabytes(self.used_bytes)}, over the limit of " \
                       f"{gigabytes(self.limit_bytes)}"
        if self.low and self.on_low is not None:
            self.on_low()

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.interval_s):
                return

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
