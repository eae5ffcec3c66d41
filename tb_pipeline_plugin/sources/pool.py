"""The parse worker processes, startable while TensorBoard starts.

Light on purpose: TensorBoard's entry point (`server/loader.py`) imports this
before the plugin's own modules, to start a worker that imports the parser
(seconds of imports) while the server imports the rest; the worker then
waits for its first parse instead of the first parse waiting for it
(benchmarks/README.md, "TensorBoard's start to every view").
`TB_PIPELINE_PARSE_WORKERS` sets the number of processes (0: parse in the
calling thread), `TB_PIPELINE_PARSE_NICE` how far below the server's
priority they run (`nice`; 0: the same).
"""
from __future__ import annotations

import gc
import importlib
import logging
import os
import sys
import threading
import time
import types
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.context import SpawnContext, SpawnProcess

from ..cores import usable_cores

logger = logging.getLogger(__name__)

MIB = 1 << 20
_MAX_WORKERS = 8
# The longest a load waits for the parses begun at TensorBoard's start to be planned.
_PLAN_WAIT_S = 30.0
# What a worker runs: imported by it before its first parse.
WORKER_MODULE = "tb_pipeline_plugin.sources.workers"
# Parse workers (and the decoders they fork) run this much below the server's priority: a request that arrives
# while every core decodes a big trace then preempts a decoder instead of waiting for its time slice to end
# (benchmarks/README.md: the slowest other request while a 1 GB trace parses). On an idle machine the decoders
# still have every core; beside other work (a training job on the same host) they yield to it.
DEFAULT_NICE = 10


@dataclass(frozen=True)
class WorkerConfig:
    processes: int  # 0: parse in the calling thread
    budget_bytes: int

    @classmethod
    def from_env(cls, env=os.environ) -> "WorkerConfig":
        import psutil

        processes = cls.processes_from_env(env)
        raw_budget = env.get("TB_PIPELINE_MEMORY_BUDGET_MB", "").strip()
        budget = int(float(raw_budget) * MIB) if raw_budget else psutil.virtual_memory().total // 2
        return cls(processes, budget)

    @staticmethod
    def processes_from_env(env=os.environ) -> int:
        return max(0, int(env.get("TB_PIPELINE_PARSE_WORKERS", min(usable_cores(), _MAX_WORKERS))))


def nice_from_env(env=os.environ) -> int:
    """`TB_PIPELINE_PARSE_NICE` (0-19), DEFAULT_NICE when unset or not a number."""
    try:
        return min(19, max(0, int(env.get("TB_PIPELINE_PARSE_NICE", DEFAULT_NICE))))
    except ValueError:
        logger.warning("TB_PIPELINE_PARSE_NICE=%r is not a whole number: using %d",
                       env.get("TB_PIPELINE_PARSE_NICE"), DEFAULT_NICE)
        return DEFAULT_NICE


def _lower_priority(increment: int) -> None:
    """A new worker's initializer: `increment` below the priority it was started with."""
    if increment:
        try:
            os.nice(increment)
        except OSError:  # not permitted here: the worker runs at the server's priority
            pass


def _import(module: str) -> types.ModuleType:
    """`module`, imported with the cyclic GC off the first time: the parser's
    imports (numpy, pandas, the analyses) create hundreds of thousands of
    objects and almost no garbage, and the passes they trigger cost 0.07-0.13 s
    of a worker's 0.65-0.77 s import on one core. What they created is then
    frozen out of every later pass."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(module)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _import_worker() -> int:
    """Runs in a new worker: imports what a parse runs."""
    _import(WORKER_MODULE)
    return os.getpid()


def _call(module: str, name: str, *args, **kwargs):
    """Runs in a worker: `module.name(*args, **kwargs)`, named rather than
    pickled, so the server submits it without importing `module`."""
    return getattr(_import(module), name)(*args, **kwargs)


def _started() -> int:
    _import_worker()
    time.sleep(0.2)  # held long enough that each start task lands on another worker
    return os.getpid()


_MAIN_LOCK = threading.Lock()


class _WorkerProcess(SpawnProcess):
    """A spawned worker that does not run the parent's main script again.

    spawn imports the parent's `__main__` in each new process, so that
    functions defined there can be unpickled. A worker runs only functions of
    this package, and TensorBoard's main script imports all of TensorBoard
    (0.9 s here, before the worker can import the parser). Its preparation
    data is taken while `__main__` is a bare module."""

    def start(self) -> None:
        with _MAIN_LOCK:
            main = sys.modules["__main__"]
            sys.modules["__main__"] = types.ModuleType("__main__")
            try:
                super().start()
            finally:
                sys.modules["__main__"] = main


class _WorkerContext(SpawnContext):
    Process = _WorkerProcess


class ParsePool:
    """A lazily started process pool; restarted if a worker dies."""

    def __init__(self, processes: int):
        self.processes = processes
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._in_flight = 0
        self._warming: Future | None = None
        # Parses begun at TensorBoard's start (`parse_early`), by
        # (path, size, mtime, cache root), until a load adopts them; `_planned`
        # is set once they are all submitted (or none will be).
        self._early: dict[tuple, Future] = {}
        self._planned: threading.Event | None = None
        self.early_adopted = 0

    def decode_share(self) -> int:
        """Processes a parse submitted now may use to decode one file: the
        pool's share of the cores divided among the parses in flight. 1 when
        parsing in the server's own thread (forking a threaded process can
        deadlock)."""
        with self._lock:
            return max(1, self.processes // (self._in_flight + 1))

    def _get(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                # spawn: forking a multi-threaded server process can deadlock.
                self._executor = ProcessPoolExecutor(self.processes, mp_context=_WorkerContext(),
                                                     initializer=_lower_priority, initargs=(nice_from_env(),))
            return self._executor

    def warm(self) -> None:
        """Starts one worker now, without waiting: it imports the parser
        while the caller goes on (TensorBoard's start). The other workers
        start when parses need them."""
        if self.processes:
            executor = self._get()
            with self._lock:
                if self._warming is None:
                    self._warming = executor.submit(_import_worker)

    def start(self) -> None:
        """Starts every worker and waits until each has imported the parser
        (seconds), so the first parse does not pay for it."""
        if self.processes:
            executor = self._get()
            for f in [executor.submit(_started) for _ in range(self.processes)]:
                f.result()

    def _wait_warm(self) -> None:
        """A worker still starting (`warm`) takes the next parse: submitted
        before it is idle, the pool would start another process for it."""
        warming = self._warming
        if warming is not None:
            try:
                warming.result()
            except Exception:  # noqa: BLE001 - a failed start shows in the parse that follows
                pass

    def run(self, fn, *args, **kwargs):
        if self.processes == 0:
            return fn(*args, **kwargs)
        executor = self._get()
        self._wait_warm()
        with self._lock:
            self._in_flight += 1
        try:
            return executor.submit(fn, *args, **kwargs).result()
        except BrokenProcessPool:
            with self._lock:
                if self._executor is executor:
                    self._executor = None
                    self._warming = None
            executor.shutdown(wait=False, cancel_futures=True)
            raise RuntimeError(
                "the parse worker process died (killed for lack of memory?); "
                "lower TB_PIPELINE_MEMORY_BUDGET_MB or TB_PIPELINE_PARSE_WORKERS"
            ) from None
        finally:
            with self._lock:
                self._in_flight -= 1

    def parse_early(self, logdir: str, budget, settings: dict[str, str]) -> None:
        """TensorBoard's start: a worker finds the traces the run listing
        will prefetch first (`workers.early_parses`, within `budget`) and
        parses them now, while this process still imports the plugin; the
        plugin's loads then adopt them (`take_early`) instead of parsing again.
        `settings`: the TB_PIPELINE_* environment the worker reads the
        cache's place from. Runs on a thread; returns at once."""
        if not self.processes:
            return
        with self._lock:
            if self._planned is not None:
                return
            planned = self._planned = threading.Event()

        def plan() -> None:
            try:
                executor = self._get()
                self._wait_warm()
                plans = executor.submit(_call, WORKER_MODULE, "early_parses", logdir, self.processes,
                                        budget.budget_bytes, settings).result()
                for need, args, kwargs in plans:
                    budget.acquire(need)  # reserved as any parse is (the plan fits the budget on its own)
                    with self._lock:
                        self._in_flight += 1
                    future = executor.submit(_call, WORKER_MODULE, "parse_to_entry", *args, **kwargs)
                    future.add_done_callback(lambda _f, need=need: self._early_done(budget, need))
                    with self._lock:
                        self._early[tuple(args[:4])] = future  # path, size, mtime, cache root: take_early's key
            except Exception:  # noqa: BLE001 - the plugin's own loads parse then, and report what fails
                logger.debug("parsing at TensorBoard's start failed", exc_info=True)
            finally:
                planned.set()

        threading.Thread(target=plan, name="tb_pipeline_early_parse", daemon=True).start()

    def _early_done(self, budget, need: int) -> None:
        budget.release(need)
        with self._lock:
            self._in_flight -= 1

    def take_early(self, path: str, size: int, mtime: float, cache_root: str | None,
                   wait: bool = True) -> Future | None:
        """The parse `parse_early` began of this file version into this
        cache, once; None when there is none. `wait`: until the early parses
        are submitted (a second or so after TensorBoard's start), so that a
        load does not parse a file one of them is parsing; at most
        `_PLAN_WAIT_S` (a logdir slow to list, on remote storage), after
        which the load parses on its own. A load of a file the cache holds
        has nothing to wait for (the plan leaves cached files out)."""
        planned = self._planned
        if planned is None or not planned.wait(_PLAN_WAIT_S if wait else 0):
            return None
        with self._lock:
            future = self._early.pop((path, size, mtime, cache_root), None)
            if future is not None:
                self.early_adopted += 1
            return future

    def shutdown(self, wait: bool = False) -> None:
        with self._lock:
            executor, self._executor, self._warming = self._executor, None, None
            self._early = {}
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)


_POOLS: dict[int, ParsePool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(processes: int) -> ParsePool:
    """One pool per size per process: every plugin instance (tests build many) shares it."""
    with _POOLS_LOCK:
        pool = _POOLS.get(processes)
        if pool is None:
            pool = _POOLS[processes] = ParsePool(processes)
        return pool


def warm_shared_pool(env=os.environ) -> None:
    """TensorBoard's start: one worker of the pool the plugin will use starts
    importing now, beside the server's own imports. Not on a single core,
    where it would only take that core from TensorBoard's start: the first
    parse starts the worker then, and waits for it either way."""
    if usable_cores() >= 2:
        shared_pool(WorkerConfig.processes_from_env(env)).warm()


def parse_early(logdir: str, env=os.environ) -> None:
    """TensorBoard's start: the first traces of `logdir` begin parsing now
    (`ParsePool.parse_early`), with the cache on and two cores or more
    (on one, the parse would only take the core from TensorBoard's start)."""
    from .budget import shared_budget

    if usable_cores() < 2 or env.get("TB_PIPELINE_CACHE_DIR", "").strip().lower() == "off":
        return
    config = WorkerConfig.from_env(env)
    settings = {k: v for k, v in env.items() if k.startswith("TB_PIPELINE_")}
    shared_pool(config.processes).parse_early(logdir, shared_budget(config.budget_bytes), settings)
