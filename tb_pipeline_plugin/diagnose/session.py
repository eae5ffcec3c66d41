"""A diagnostic session: one results file, one or more chains of stages.

For each chain the source's first `num_inputs` items are cached; each stage
then runs alone on its cached inputs at every level (threads, then
processes), and its outputs over those inputs, computed once, become the next
stage's cached inputs. So one stage's contention is never blamed on another.

The sweep lives within a time budget (`time_limit_s`, shared among the
stages: level_budget.py) and the machine's free memory; it ends with an
`end` record however it ends: finished, time limit, Ctrl-C or SIGTERM.
"""
from __future__ import annotations

import itertools
import math
import os
import signal
import socket
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, TextIO

import msgspec

from ..formats import diagnostic as fmt
from . import gil_sampler, level_budget, run_levels
from .intra_op import thread_env, torch_threads
from .process_tree import available_bytes, total_bytes
from .stages import MAP, Stage, as_stage, flattens

DEFAULT_LEVELS = (1, 2, 4, 8, 16, 32)  # asked; run up to the cores and one above (level_budget.fitted_levels)
DEFAULT_TIME_LIMIT_S = 180.0  # the whole sweep's budget unless asked otherwise (0 or None: none)
MAX_THREADS = 32  # more threads than this only measure the scheduler
CACHE_THREADS = 4  # threads that compute the next stage's inputs (order kept)
GIL_STARTUP_S = 2.0  # py-spy's start on top of its sampling seconds: what a GIL sample needs left of the budget


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt, so the sweep ends
    the same way: what was measured kept, the end record written."""


def default_out_dir() -> Path:
    """{TB_PIPELINE_LOGDIR}/{TB_PIPELINE_RUN}/diagnostic, as the launcher sets them."""
    logdir = os.environ.get("TB_PIPELINE_LOGDIR") or "tb_pipeline_logs"
    run = os.environ.get("TB_PIPELINE_RUN") or _default_run_name()
    return Path(logdir) / run / fmt.DIAGNOSTIC_DIR


def _default_run_name() -> str:
    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] not in ("", "-c", "-m") else "python"
    return f"{script or 'python'}-{time.strftime('%Y%m%d-%H%M%S')}"


def levels_for(executor: str, levels: Iterable[int], cores: int) -> tuple[list[int], list[int]]:
    """(levels to run, levels threads may go on to while the stage gains
    like I/O): up to the cores and one above; threads never past MAX_THREADS."""
    fit, more = level_budget.fitted_levels([x for x in levels if executor == "process" or int(x) <= MAX_THREADS],
                                           cores)
    return fit, (more if executor == "thread" else [])


def gil_level(points: dict[int, float]) -> int:
    """The thread level where the stage stops scaling: the first level that
    adds less than 15 % QPS over the one before it; else the top level."""
    levels = sorted(points)
    for prev, cur in zip(levels, levels[1:]):
        if points[cur] < 1.15 * points[prev]:
            return cur
    return levels[-1] if levels else 0


@dataclass
class Result:
    """What diagnose() returns; `records` are the formats' Structs as written."""

    path: Path
    records: list = field(default_factory=list)
    cut_short: bool = False
    reason: str = ""


class Session:
    def __init__(self, out_dir: str | os.PathLike | None = None, *, levels: Iterable[int] = DEFAULT_LEVELS,
                 executors: Iterable[str] = ("thread", "process"), warmup_s: float = 0.3,
                 duration_s: float = 2.0, max_items: int = 0, num_inputs: int = 256,
                 time_limit_s: float | None = DEFAULT_TIME_LIMIT_S, gil: bool = True, gil_duration_s: float = 1.0,
                 progress: TextIO | None = sys.stderr, source: str = "function", start_method: str | None = None,
                 memory_limit_bytes: int = 0, process_intra_op_threads: int = 0):
        self.out_dir = Path(out_dir) if out_dir is not None else default_out_dir()
        self.levels = [int(x) for x in levels]
        self.executors = [e for e in executors]
        bad = [e for e in self.executors if e not in ("thread", "process")]
        if bad or not self.levels or min(self.levels) < 1:
            raise ValueError(f"executors must be thread/process and levels >= 1, got {self.executors} {self.levels}")
        self.warmup_s, self.duration_s, self.max_items = warmup_s, duration_s, max_items
        self.num_inputs, self.gil, self.gil_duration_s = num_inputs, gil, gil_duration_s
        self.progress = progress
        self.cores = run_levels.cpu_count()
        self.start_method = run_levels.start_method(start_method)
        self.t0 = time.monotonic()
        self.hard_end = self.t0 + time_limit_s if time_limit_s else math.inf
        self.time_limit_s = time_limit_s or 0.0
        # Free memory under which a level stops, whatever the limit: a share of the machine is always left.
        self.memory_floor_bytes = int(level_budget.LOW_MEMORY_FRACTION * total_bytes())
        self.memory_limit_bytes = int(memory_limit_bytes or 0)
        self.stop = threading.Event()
        self.cut_reason = ""
        self.signal_name = ""  # "SIGTERM" once one arrived (Ctrl-C otherwise)
        self.stage_names: set[str] = set()
        self.stages_left = 0  # swept stages not started yet, among which the time left is shared
        self._counted = False  # run_chains counted every chain's stages up front
        self.last_failure = ""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / fmt.RESULTS_FILE
        self._fh = open(self.path, "wb")
        self._enc = msgspec.json.Encoder()
        self.records: list = []
        self._write(fmt.Environment(
            wall_time_s=time.time(), cpu_count=self.cores, python=sys.version,
            implementation=sys.implementation.name,
            free_threaded=bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
            gil_enabled=bool(getattr(sys, "_is_gil_enabled", lambda: True)()),
            process_start_method=self.start_method, levels=self.levels, executors=self.executors,
            warmup_s=warmup_s, duration_s=duration_s, source=source, command=list(sys.argv),
            pid=os.getpid(), hostname=socket.gethostname(), max_items=max_items, intra_op_threads=torch_threads(),
            process_intra_op_threads=process_intra_op_threads, thread_env=thread_env(),
            time_limit_s=self.time_limit_s, memory_limit_bytes=int(self._memory_left())))
        self._previous_sigterm = self._catch_sigterm()  # last: finish() puts it back

    def _catch_sigterm(self):
        """SIGTERM ends the sweep as Ctrl-C does (signal handlers live in the main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return None

        def on_sigterm(signum, frame):
            self.signal_name = "SIGTERM"
            raise Terminated()

        return signal.signal(signal.SIGTERM, on_sigterm)

    def _interrupted(self) -> str:
        return self.signal_name or "Ctrl-C"

    # ------------------------------------------------------------ output

    def _write(self, record) -> None:
        # One line per record, flushed: the file is readable while written and
        # a crash leaves at worst one torn last line.
        self._fh.write(self._enc.encode(record) + b"\n")
        self._fh.flush()
        self.records.append(record)

    def say(self, text: str) -> None:
        if self.progress is not None:
            print(f"[diagnose] {text}", file=self.progress, flush=True)

    @property
    def cut(self) -> bool:
        return bool(self.cut_reason)

    def _mark_cut(self, reason: str) -> None:
        if not self.cut_reason:
            self.cut_reason = reason
            self.stop.set()
            self.say(f"cut short ({reason}): keeping what was measured")

    def _check_limit(self) -> bool:
        if not self.cut and time.monotonic() >= self.hard_end:
            self._mark_cut(f"time limit {self.time_limit_s:g} s")
        return self.cut

    # ------------------------------------------------------------ chains

    def run_chains(self, chains: Iterable[tuple[Iterable[Any], Iterable]]) -> None:
        """Several chains in one results file, the time budget shared among all their stages."""
        chains = [([as_stage(s) for s in stages], source) for stages, source in chains]
        self.stages_left += sum(s.kind == MAP for stages, _ in chains for s in stages)
        self._counted = True
        try:
            for stages, source in chains:
                if self.cut:
                    break
                self.run_chain(stages, source)
        except KeyboardInterrupt:  # between two chains
            self._mark_cut(self._interrupted())

    def run_chain(self, stages: Iterable[Any], source: Iterable) -> None:
        stages = [as_stage(s) for s in stages]
        if not self._counted:
            self.stages_left += sum(s.kind == MAP for s in stages)
        try:
            self.say(f"caching {self.num_inputs} inputs from the source")
            inputs, source_error = self._take(source)
            for index, stage in enumerate(stages):
                name = self._unique(stage.name)
                if self._check_limit():
                    self.stages_left -= stage.kind == MAP
                    self._write(fmt.StageSummary(stage=name, index=index, kind=stage.kind, inputs=len(inputs),
                                                 skipped=f"not run: cut short ({self.cut_reason})"))
                    continue
                if not inputs:
                    self.stages_left -= stage.kind == MAP
                    why = f"no inputs ({source_error})" if source_error else "no inputs reached this stage"
                    self._write(fmt.StageSummary(stage=name, index=index, kind=stage.kind, inputs=0, skipped=why))
                    continue
                inputs = self._run_stage(index, name, stage, inputs, last=index == len(stages) - 1)
        except KeyboardInterrupt:
            self._mark_cut(self._interrupted())

    def _unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self.stage_names:
            candidate, n = f"{name} #{n}", n + 1
        self.stage_names.add(candidate)
        return candidate

    def _take(self, source: Iterable) -> tuple[list, str]:
        items: list = []
        try:
            for item in itertools.islice(iter(source), self.num_inputs):
                items.append(item)
        except Exception as exc:
            return items, f"the source raised after {len(items)} items: {type(exc).__name__}: {exc}"
        return items, ""

    def _run_stage(self, index: int, name: str, stage: Stage, inputs: list, last: bool) -> list:
        if stage.kind != MAP:
            self.say(f"stage {name}: regrouping {len(inputs)} inputs (applied once, not swept)")
            try:
                outputs = list(stage.fn(list(inputs)))
                error = ""
            except Exception as exc:
                outputs, error = [], f"{type(exc).__name__}: {exc}"[:500]
            self._write(fmt.StageSummary(stage=name, index=index, kind=stage.kind, inputs=len(inputs),
                                         input_errors=1 if error else 0, first_error=error,
                                         skipped="a batching stage, run once: nothing to scale over workers"))
            return outputs
        now = time.monotonic()
        share_s = level_budget.stage_share_s(self.hard_end - now, self.stages_left)
        self.stages_left -= 1
        stage_end = min(now + share_s, self.hard_end)
        fn = stage.call()
        thread_qps: dict[int, float] = {}
        skipped: list[fmt.SkippedLevel] = []
        process_skipped = ""
        first_error = ""
        for executor in self.executors:
            if executor == "process":
                process_skipped = self._why_no_processes(fn, inputs)
                if process_skipped:
                    self.say(f"stage {name}: no process pool: {process_skipped}")
                    continue
            failed, error = self._sweep(name, executor, stage, fn, inputs, stage_end, share_s, skipped, thread_qps)
            if failed:
                process_skipped = process_skipped or f"worker processes failed: {failed}"
            first_error = first_error or error
            if self.cut:
                break
        gil_at = 0
        if self.gil and "thread" in self.executors and thread_qps and not self._check_limit():
            gil_at = gil_level(thread_qps)
            self._sample_gil(name, fn, inputs, gil_at, stage_end)
        outputs, input_errors = ([], 0) if last or self.cut else self._outputs(stage, fn, inputs)
        self._write(fmt.StageSummary(stage=name, index=index, kind=stage.kind, inputs=len(inputs),
                                     input_errors=input_errors, process_skipped=process_skipped,
                                     gil_concurrency=gil_at, first_error=first_error, skipped_levels=skipped,
                                     budget_s=share_s if math.isfinite(share_s) else 0.0))
        return outputs

    def _sweep(self, name, executor, stage: Stage, fn, inputs, stage_end: float, share_s: float,
               skipped: list, thread_qps: dict) -> tuple[str, str]:
        """One executor's levels of a stage; returns (why worker processes
        failed, the first error a call raised), "" for none. Levels that do
        not fit the time or memory left are appended to `skipped`, each with
        its estimate."""
        queue, more = levels_for(executor, self.levels, self.cores)
        prev: level_budget.Measured | None = None
        seen: list[tuple[int, float, float]] = []
        first_error = ""
        while queue:
            level = queue.pop(0)
            if self._check_limit():
                break
            budget = level_budget.Budget(stage_end, share_s, self._memory_left(), self.cores, self.warmup_s,
                                         self.duration_s)
            why = budget.why_skip(prev, level, time.monotonic())
            if why is not None:
                for later in [level, *queue]:
                    cause, reason = budget.why_skip(prev, later, time.monotonic()) or why
                    skipped.append(fmt.SkippedLevel(executor=executor, concurrency=later, cause=cause, reason=reason))
                    self.say(f"stage {name}: {executor} x{later} skipped: {reason}")
                break
            # The lowest level always runs, bounded by the sweep's limit only; the others stop at the stage's share.
            point, r = self._sweep_point(name, executor, level, fn, inputs, stage,
                                         self.hard_end if prev is None else stage_end, share_s)
            if point is None:
                return (self.last_failure if executor == "process" else ""), first_error
            first_error = first_error or point.first_error
            if executor == "thread":
                thread_qps[level] = point.qps
            if self.cut:
                break
            if r.low_memory:
                skipped += [fmt.SkippedLevel(executor=executor, concurrency=later, cause="memory",
                                             reason=f"level {level} stopped on {r.low_memory}") for later in queue]
                break
            prev = level_budget.Measured(level, r.startup_s, r.p90_latency_s, r.cpu_pct, r.memory_used_bytes)
            seen.append((level, r.qps, r.cpu_pct))
            if not queue and more and level_budget.gains_like_io(seen, self.cores):
                queue.append(more.pop(0))
        return "", first_error

    def _memory_left(self) -> float:
        """What a level may take: the free memory above the floor, and no more than the limit asked."""
        free = max(0.0, available_bytes() - self.memory_floor_bytes)
        return min(free, self.memory_limit_bytes) if self.memory_limit_bytes else free

    def _why_no_processes(self, fn, inputs) -> str:
        if self.start_method == "fork":
            return ""
        return run_levels.why_not_picklable(fn, inputs, self.start_method)

    def _plan(self, hard_end: float | None = None) -> run_levels.LevelPlan:
        return run_levels.LevelPlan(warmup_s=self.warmup_s, duration_s=self.duration_s,
                                    max_items=self.max_items, hard_end=self.hard_end if hard_end is None else hard_end,
                                    memory_floor_bytes=self.memory_floor_bytes,
                                    memory_limit_bytes=self.memory_limit_bytes)

    def _cut_reason(self, r: run_levels.LevelResult, hard_end: float, share_s: float) -> str:
        if r.interrupted:
            return self._interrupted()
        if r.low_memory:
            return r.low_memory
        if not r.cut_short:
            return ""
        if time.monotonic() >= self.hard_end:
            return f"time limit {self.time_limit_s:g} s"
        if time.monotonic() >= hard_end:
            return f"the stage's {share_s:.0f} s share of the time budget"
        return ""

    def _sweep_point(self, name, executor, level, fn, inputs, stage: Stage, hard_end: float,
                     share_s: float) -> tuple[fmt.SweepPoint | None, run_levels.LevelResult]:
        plan = self._plan(hard_end)
        if executor == "thread":
            r = run_levels.run_threads(fn, inputs, level, plan, self.stop)
        else:
            r = run_levels.run_processes(fn, inputs, level, plan, self.stop, self.start_method, stage.process_init)
        if r.interrupted:
            self._mark_cut(self._interrupted())
        elif r.cut_short:
            self._check_limit()
        if r.failure and not r.items:
            self.say(f"stage {name}: {executor} x{level} failed: {r.failure}")
            if executor == "process":
                self.last_failure = r.failure
                return None, r
        cut_reason = self._cut_reason(r, hard_end, share_s)
        point = fmt.SweepPoint(
            stage=name, executor=executor, concurrency=level, items=r.items, errors=r.errors, qps=r.qps,
            p50_latency_s=r.p50_latency_s, p90_latency_s=r.p90_latency_s, cpu_pct=r.cpu_pct,
            machine_cpu_pct=r.machine_cpu_pct, peak_memory_bytes=r.peak_memory_bytes,
            duration_s=r.duration_s, cut_short=r.cut_short, first_error=r.first_error, slice_qps=r.slice_qps,
            slice_cpu_pct=r.slice_cpu_pct, slice_machine_cpu_pct=r.slice_machine_cpu_pct,
            intra_op_threads=r.intra_op_threads, caller_cpu_pct=r.caller_cpu_pct, cut_reason=cut_reason)
        self._write(point)
        errors = f"  errors {r.errors}/{r.items}" if r.errors else ""
        threads = f"  torch threads {r.intra_op_threads}" if r.intra_op_threads else ""
        cut = f"  (cut short: {cut_reason})" if r.cut_short else ""
        self.say(f"stage {name}: {executor:7s} x{level:<3d} QPS {r.qps:9.1f}  p50 {r.p50_latency_s * 1e3:8.2f} ms"
                 f"  CPU {r.cpu_pct:5.0f} %  machine {r.machine_cpu_pct:5.0f} %{threads}{errors}{cut}")
        return point, r

    def _sample_gil(self, name, fn, inputs, level, stage_end: float) -> None:
        self.say(f"stage {name}: sampling the GIL holder with {level} threads")
        holder: dict = {}
        reason = gil_sampler.why_no_gil_sampling()
        need_s = self.warmup_s + max(1.0, self.gil_duration_s) + GIL_STARTUP_S
        if not reason and time.monotonic() + need_s > stage_end:
            reason = "not sampled: the stage's share of the time budget was spent"
        if reason:
            sample = gil_sampler.GilSample(skipped=reason)
        else:
            run = run_levels.run_threads(
                fn, inputs, level, self._plan(), self.stop,
                during=lambda: holder.setdefault("s", gil_sampler.sample_gil(self.gil_duration_s)))
            if run.interrupted:
                self._mark_cut(self._interrupted())
            sample = holder.get("s") or gil_sampler.GilSample(skipped="cut short before sampling")
        top = [fmt.GilFrame(**row) for row in sample.top]
        self._write(fmt.GilRecord(stage=name, concurrency=level, sampler=sample.command,
                                  total_samples=sample.total_samples, held_share=sample.held_share,
                                  rate_hz=sample.rate_hz, duration_s=sample.duration_s, top=top,
                                  skipped=sample.skipped))
        if top:
            self.say(f"stage {name}: GIL held most by {top[0].function} ({top[0].file}:{top[0].line}),"
                     f" {100 * top[0].share:.0f} % of {sample.total_samples} samples; GIL held"
                     f" {100 * sample.held_share:.0f} % of the time")
        else:
            self.say(f"stage {name}: no GIL holder: {sample.skipped or 'the GIL was never held while sampling'}")

    def _outputs(self, stage: Stage, fn, inputs: list) -> tuple[list, int]:
        """The stage's outputs over its inputs, the next stage's inputs; past
        the sweep's time limit the rest are dropped (the sweep is cut then)."""
        self.say(f"stage {stage.name}: computing {len(inputs)} outputs as the next stage's inputs")

        def one(item):
            try:
                return True, fn(item)
            except Exception:
                return False, None

        flat = flattens(fn)  # a generator stage: each call yields several next inputs
        outputs, errors = [], 0
        left_s = self.hard_end - time.monotonic()
        pool = ThreadPoolExecutor(CACHE_THREADS)
        finished = False
        try:
            for ok, out in pool.map(one, inputs, timeout=max(0.0, left_s) if math.isfinite(left_s) else None):
                if not ok:
                    errors += 1
                elif flat:
                    outputs.extend(out)
                else:
                    outputs.append(out)
            finished = True
        except FutureTimeout:
            self._check_limit()
        finally:
            # On Ctrl-C or the time limit: drop the calls not started, and do not wait for those running.
            pool.shutdown(wait=finished, cancel_futures=True)
        return outputs, errors

    # ------------------------------------------------------------ end

    def finish(self) -> Result:
        if self._previous_sigterm is not None:
            # A second SIGTERM while the end record is written must not tear it: ignored until it is.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        elapsed = time.monotonic() - self.t0
        self._write(fmt.End(wall_time_s=time.time(), elapsed_s=elapsed, cut_short=self.cut, reason=self.cut_reason))
        self._fh.close()
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
        return Result(self.path, self.records, self.cut, self.cut_reason)

