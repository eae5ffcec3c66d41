"""Run one stage function alone at one concurrency level, in threads or in
processes, and measure it.

Each worker pulls the next cached input (cycling over them) until the level's
bound: a warm-up whose calls are not counted, then a measured window bounded
by time (`duration_s`) and optionally by items (`max_items`). `hard_end` (the
session's time limit or the stage's share of it), `stop` (Ctrl-C, SIGTERM),
free memory falling under `memory_floor_bytes` and the level taking more
than `memory_limit_bytes` cut a level short; what finished until then is
kept.

Besides QPS and CPU, a level measures what its executor gave the stage:
torch's intra-op threads in the workers, and the CPU of the threads calling
the stage (what the stage's own thread pools add shows against it).
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
import pickle
import queue
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..formats.diagnostic import SLICES
from .intra_op import torch_threads
from .level_spread import CpuSlices, slice_qps
from .process_tree import CpuWindow, PeakRss, available_bytes, tree_rss_bytes

_WARM, _MEASURE, _STOP = 0, 1, 2
ABANDON_AFTER_S = 5.0  # past the time limit, stop waiting for calls still running


@dataclass
class LevelPlan:
    warmup_s: float
    duration_s: float
    max_items: int = 0  # 0: time bound only
    min_items: int = 2  # a slow stage still gets this many measured calls before duration_s ends it
    hard_end: float = math.inf  # time.monotonic() at which everything stops (time limit)
    memory_floor_bytes: int = 0  # stop the level when the machine's free memory falls below this (0: never)
    memory_limit_bytes: int = 0  # ... or when the level itself takes more than this (0: no limit)


@dataclass
class LevelResult:
    items: int = 0
    errors: int = 0
    qps: float = 0.0
    p50_latency_s: float = 0.0
    p90_latency_s: float = 0.0
    cpu_pct: float = 0.0
    machine_cpu_pct: float = 0.0
    peak_memory_bytes: int = 0
    duration_s: float = 0.0
    cut_short: bool = False
    interrupted: bool = False  # Ctrl-C arrived during this level
    first_error: str = ""
    failure: str = ""  # the level could not run at all (e.g. a worker process died)
    slice_qps: list = field(default_factory=list)  # level_spread.slice_qps: its mean is qps
    slice_cpu_pct: list = field(default_factory=list)
    slice_machine_cpu_pct: list = field(default_factory=list)
    intra_op_threads: int = 0  # torch's, in the workers (0: unknown)
    caller_cpu_pct: float = 0.0  # the calling threads' CPU, each over its measured span, summed
    low_memory: str = ""  # non-empty: why memory stopped the level (process_tree.PeakRss.low)
    memory_used_bytes: int = 0  # what the level took (process_tree.PeakRss.used_bytes)
    startup_s: float = 0.0  # process workers: from the first fork until all were ready


@dataclass
class _Calls:
    """What one worker measured."""

    latencies_s: list = field(default_factory=list)
    starts: list = field(default_factory=list)
    ends: list = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    cpu_s: float = 0.0  # this worker's calling thread, from its first measured call to its last


def _phase(plan: LevelPlan, t_measure: float, now: float, started: int) -> int:
    if now >= plan.hard_end:
        return _STOP
    if now < t_measure:
        return _WARM
    if plan.max_items and started >= plan.max_items:
        return _STOP
    if now >= t_measure + plan.duration_s and started >= plan.min_items:
        return _STOP
    return _MEASURE


def _call_loop(fn: Callable, inputs: list, claim: Callable[[], tuple[int, bool] | None]) -> _Calls:
    calls = _Calls()
    n = len(inputs)
    cpu0 = None
    while True:
        claimed = claim()
        if claimed is None:
            if cpu0 is not None:
                calls.cpu_s = time.thread_time() - cpu0
            return calls
        index, measuring = claimed
        if measuring and cpu0 is None:
            cpu0 = time.thread_time()  # once per level: a clock read per call would slow microsecond stages
        t0 = time.monotonic()
        error = None
        try:
            fn(inputs[index % n])
        except Exception as exc:  # a failing input is counted, never fatal
            error = exc
        t1 = time.monotonic()
        if measuring:
            calls.latencies_s.append(t1 - t0)
            calls.starts.append(t0)
            calls.ends.append(t1)
            if error is not None:
                calls.errors += 1
                if not calls.first_error:
                    calls.first_error = f"{type(error).__name__}: {error}"[:500]


def _percentile(sorted_values: list, q: float) -> float:
    if not sorted_values:
        return 0.0
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _summarise(parts: list[_Calls], result: LevelResult) -> LevelResult:
    """QPS is the sum of each worker's own rate over its measured span: a
    worker's first measured call starts only when its warm-up call ends, so
    one shared window would undercount by up to one call per worker."""
    parts = [p for p in parts if p.latencies_s]
    latencies = sorted(x for p in parts for x in p.latencies_s)
    result.items = len(latencies)
    result.errors = sum(p.errors for p in parts)
    result.first_error = next((p.first_error for p in parts if p.first_error), "")
    if parts:
        result.duration_s = max(max(p.ends) for p in parts) - min(min(p.starts) for p in parts)
        result.qps = sum(len(p.ends) / (max(p.ends) - min(p.starts)) for p in parts
                         if max(p.ends) > min(p.starts))
        result.slice_qps = slice_qps([(p.starts, p.ends) for p in parts], SLICES)
        result.caller_cpu_pct = sum(100.0 * p.cpu_s / (max(p.ends) - min(p.starts)) for p in parts
                                    if max(p.ends) > min(p.starts))
    result.p50_latency_s = _percentile(latencies, 0.5)
    result.p90_latency_s = _percentile(latencies, 0.9)
    return result


def _wait_until(deadline: float, stop) -> None:
    while not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        stop.wait(min(left, 0.2))


# ---------------------------------------------------------------- threads


def run_threads(fn: Callable, inputs: list, level: int, plan: LevelPlan, stop: threading.Event,
                during: Callable[[], None] | None = None) -> LevelResult:
    """`level` threads call fn. With `during`, it runs once the warm-up is
    over (e.g. a sampler) and the level ends when it returns."""
    lock = threading.Lock()
    state = {"next": 0, "started": 0}
    t_measure = time.monotonic() + plan.warmup_s
    own_stop = threading.Event()

    def claim():
        with lock:
            if stop.is_set() or own_stop.is_set():
                return None
            phase = _PHASE_DURING if during is not None else _phase(plan, t_measure, time.monotonic(), state["started"])
            if phase == _STOP:
                return None
            if phase == _MEASURE:
                state["started"] += 1
            index = state["next"]
            state["next"] += 1
            return index, phase == _MEASURE

    _PHASE_DURING = _WARM
    parts: list[_Calls] = [_Calls() for _ in range(level)]

    def work(slot: int) -> None:
        parts[slot] = _call_loop(fn, inputs, claim)

    threads = [threading.Thread(target=work, args=(i,), name=f"diagnose-{i}", daemon=True) for i in range(level)]
    result = LevelResult()
    cpu, slices = CpuWindow(), CpuSlices()
    rss = PeakRss(interval_s=3600.0 if during is not None else 0.1,  # sampling: keep the GIL to the stage
                  floor_bytes=plan.memory_floor_bytes, limit_bytes=plan.memory_limit_bytes, on_low=own_stop.set)
    try:
        with rss:
            for t in threads:
                t.start()
            _wait_until(t_measure, stop)
            cpu.start(time.monotonic())
            if during is None:
                slices.start(time.monotonic(), plan.duration_s, SLICES)
            else:
                during()
                own_stop.set()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
                    if time.monotonic() > plan.hard_end + ABANDON_AFTER_S:
                        break  # a call that never returns: leave the (daemon) thread, keep the rest
            result.cpu_pct, result.machine_cpu_pct = cpu.stop(time.monotonic())
    except KeyboardInterrupt:
        stop.set()
        result.interrupted = True
        # Ctrl-C may land before every worker started (inside `with rss:`).
        for t in threads:
            if t.ident is not None:
                t.join()
        result.cpu_pct, result.machine_cpu_pct = cpu.stop(time.monotonic())
    finally:
        result.slice_cpu_pct, result.slice_machine_cpu_pct = slices.stop()
    result.peak_memory_bytes, result.memory_used_bytes, result.low_memory = rss.peak_bytes, rss.used_bytes, rss.low
    result.intra_op_threads = torch_threads()  # read after the calls: a stage may set its own
    _summarise(parts, result)
    result.cut_short = (result.interrupted or stop.is_set() or time.monotonic() >= plan.hard_end
                        or bool(result.low_memory))
    return result


# ---------------------------------------------------------------- processes

_FORK_PAYLOAD: Any = None  # (fn, inputs, init), inherited by forked workers instead of pickled


def start_method(preferred: str | None = None) -> str:
    """fork where the OS has it (no pickling, as DataLoader on Linux), else spawn."""
    methods = mp.get_all_start_methods()
    if preferred:
        if preferred not in methods:
            raise ValueError(f"start method {preferred!r} is not available here ({', '.join(methods)})")
        return preferred
    return "fork" if "fork" in methods else "spawn"


def why_not_picklable(fn: Callable, inputs: list, method: str) -> str:
    """Empty when fn and inputs pickle (needed only where workers are not forked)."""
    for what, obj in (("the stage function", fn), ("its inputs", inputs)):
        try:
            pickle.dumps(obj)
        except Exception as exc:
            return f"{what} cannot be pickled for the {method} start method: {type(exc).__name__}: {exc}"
    return ""


def _process_worker(payload: bytes | None, plan: LevelPlan, t_measure_box, started, next_index, stop,
                    go, release, results, slot: int, level: int) -> None:
    # Ctrl-C reaches the whole process group: the parent decides, workers finish their call.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A forked worker inherits the parent's SIGTERM handler (the session's: end the sweep, keep the results);
    # the parent's terminate() must end a worker outright.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        fn, inputs, init = pickle.loads(payload) if payload is not None else _FORK_PAYLOAD
    except Exception as exc:
        results.put(("failed", slot, f"worker could not load the stage: {type(exc).__name__}: {exc}"))
        return
    if init is not None:
        try:
            init(slot, level)
        except Exception as exc:
            results.put(("failed", slot, f"the worker start-up ({getattr(init, '__name__', type(init).__name__)}) "
                                         f"raised: {type(exc).__name__}: {exc}"[:500]))
            return
    results.put(("ready", slot, None))
    go.wait()
    t_measure = t_measure_box.value

    def claim():
        if stop.is_set():
            return None
        with started.get_lock():
            phase = _phase(plan, t_measure, time.monotonic(), started.value)
            if phase == _STOP:
                return None
            if phase == _MEASURE:
                started.value += 1
            with next_index.get_lock():
                index = next_index.value
                next_index.value += 1
        return index, phase == _MEASURE

    calls = _call_loop(fn, inputs, claim)
    results.put(("done", slot, (calls.latencies_s, calls.starts, calls.ends, calls.errors, calls.first_error,
                                calls.cpu_s, torch_threads())))
    release.wait(120)  # stay alive until the parent has read our CPU time


def _collect(results, procs, want: str, count: int, stop, timeout_s: float) -> tuple[dict, str]:
    got: dict = {}
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        try:
            kind, slot, value = results.get(timeout=0.2)
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                return got, f"a worker process died (exit code {dead[0].exitcode})"
            if time.monotonic() > deadline:
                return got, f"workers did not report '{want}' within {timeout_s:.0f} s"
            continue
        if kind == "failed":
            return got, value
        if kind == want:
            got[slot] = value
    return got, ""


def run_processes(fn: Callable, inputs: list, level: int, plan: LevelPlan, stop: threading.Event,
                  method: str | None = None, init: Callable[[int, int], None] | None = None) -> LevelResult:
    """`init(worker_id, level)`: run in each worker before it reports ready
    (the pipeline's own worker start-up, e.g. DataLoader's)."""
    global _FORK_PAYLOAD
    method = start_method(method)
    ctx = mp.get_context(method)
    payload = None if method == "fork" else pickle.dumps((fn, inputs, init))
    _FORK_PAYLOAD = (fn, inputs, init)
    started, next_index = ctx.Value("q", 0), ctx.Value("q", 0)
    t_measure_box = ctx.Value("d", 0.0, lock=False)
    mp_stop, go, release, results = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_process_worker, name=f"diagnose-{i}", daemon=True,
                         args=(payload, plan, t_measure_box, started, next_index, mp_stop, go, release, results, i,
                               level))
             for i in range(level)]
    result = LevelResult()
    cpu, slices = CpuWindow(), CpuSlices()
    done: dict = {}
    available_before, rss_before = available_bytes(), tree_rss_bytes()
    t_start = time.monotonic()
    try:
        for p in procs:
            p.start()
        _FORK_PAYLOAD = None
        pids = [p.pid for p in procs]
        cpu, slices = CpuWindow(pids), CpuSlices(pids)
        # Worker start-up (fork, imports, unpickling) is excluded: the clock starts once all are ready.
        _, failure = _collect(results, procs, "ready", level, stop, timeout_s=120)
        if failure:
            result.failure = failure
            return result
        result.startup_s = time.monotonic() - t_start
        t_measure = time.monotonic() + plan.warmup_s
        t_measure_box.value = t_measure
        with PeakRss(pids, floor_bytes=plan.memory_floor_bytes, limit_bytes=plan.memory_limit_bytes, on_low=mp_stop.set,
                     available_before=available_before, rss_before=rss_before) as rss:
            go.set()
            _wait_until(t_measure, stop)
            cpu.start(time.monotonic())
            slices.start(time.monotonic(), plan.duration_s, SLICES)
            done, failure = _collect(results, procs, "done", level, stop,
                                     timeout_s=min(max(plan.duration_s * 20, 600),
                                                   plan.hard_end + ABANDON_AFTER_S - time.monotonic()))
            result.cpu_pct, result.machine_cpu_pct = cpu.stop(time.monotonic())
        result.peak_memory_bytes, result.memory_used_bytes, result.low_memory = rss.peak_bytes, rss.used_bytes, rss.low
        result.failure = failure
    except KeyboardInterrupt:
        stop.set()
        mp_stop.set()
        result.interrupted = True
        done, _ = _collect(results, procs, "done", level, threading.Event(), timeout_s=30)
        result.cpu_pct, result.machine_cpu_pct = cpu.stop(time.monotonic())
    finally:
        result.slice_cpu_pct, result.slice_machine_cpu_pct = slices.stop()
        _FORK_PAYLOAD = None
        mp_stop.set()
        release.set()
        go.set()
        for p in procs:
            if p.pid is not None:
                p.join(5)
                if p.is_alive():
                    p.terminate()
                    p.join(5)
        results.close()
    parts = [_Calls(lat, starts, ends, errors, first, cpu_s) for lat, starts, ends, errors, first, cpu_s, _ in
             done.values()]
    result.intra_op_threads = max((threads for *_, threads in done.values()), default=0)
    _summarise(parts, result)
    result.cut_short = (result.interrupted or stop.is_set() or time.monotonic() >= plan.hard_end
                        or bool(result.low_memory))
    return result


def cpu_count() -> int:
    """Cores this process may run on (affinity-aware where the OS says)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
