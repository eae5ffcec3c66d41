"""A diagnostic session: one results file, one or more chains of stages.

For each chain the source's first `num_inputs` items are cached; each stage
then runs alone on its cached inputs at every level (threads, then
processes), and its outputs over those inputs, computed once, become the next
stage's cached inputs. So one stage's contention is never blamed on another.
"""
from __future__ import annotations

import itertools
import math
import os
import socket
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, TextIO

import msgspec

from ..formats import diagnostic as fmt
from . import gil_sampler, run_levels
from .stages import MAP, Stage, as_stage, flattens

DEFAULT_LEVELS = (1, 2, 4, 8, 16, 32)
MAX_THREADS = 32  # more threads than this only measure the scheduler
CACHE_THREADS = 4  # threads that compute the next stage's inputs (order kept)


def default_out_dir() -> Path:
    """{TB_PIPELINE_LOGDIR}/{TB_PIPELINE_RUN}/diagnostic, as the launcher sets them."""
    logdir = os.environ.get("TB_PIPELINE_LOGDIR") or "tb_pipeline_logs"
    run = os.environ.get("TB_PIPELINE_RUN") or _default_run_name()
    return Path(logdir) / run / fmt.DIAGNOSTIC_DIR


def _default_run_name() -> str:
    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] not in ("", "-c", "-m") else "python"
    return f"{script or 'python'}-{time.strftime('%Y%m%d-%H%M%S')}"


def levels_for(executor: str, levels: Iterable[int], cores: int) -> list[int]:
    """Threads up to MAX_THREADS; processes up to twice the cores, since more
    processes than that cannot help a CPU-bound stage and each costs memory."""
    cap = MAX_THREADS if executor == "thread" else max(2, 2 * cores)
    return sorted({int(x) for x in levels if 1 <= int(x) <= cap})


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
                 time_limit_s: float | None = None, gil: bool = True, gil_duration_s: float = 1.0,
                 progress: TextIO | None = sys.stderr, source: str = "function", start_method: str | None = None):
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
        self.time_limit_s = time_limit_s
        self.stop = threading.Event()
        self.cut_reason = ""
        self.stage_names: set[str] = set()
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
            pid=os.getpid(), hostname=socket.gethostname(), max_items=max_items))

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

    def run_chain(self, stages: Iterable[Any], source: Iterable) -> None:
        stages = [as_stage(s) for s in stages]
        try:
            self.say(f"caching {self.num_inputs} inputs from the source")
            inputs, source_error = self._take(source)
            for index, stage in enumerate(stages):
                name = self._unique(stage.name)
                if self._check_limit():
                    self._write(fmt.StageSummary(stage=name, index=index, kind=stage.kind, inputs=len(inputs),
                                                 skipped=f"not run: cut short ({self.cut_reason})"))
                    continue
                if not inputs:
                    why = f"no inputs ({source_error})" if source_error else "no inputs reached this stage"
                    self._write(fmt.StageSummary(stage=name, index=index, kind=stage.kind, inputs=0, skipped=why))
                    continue
                inputs = self._run_stage(index, name, stage, inputs, last=index == len(stages) - 1)
        except KeyboardInterrupt:
            self._mark_cut("Ctrl-C")

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
        fn = stage.call()
        thread_qps: dict[int, float] = {}
        process_skipped = ""
        first_error = ""
        for executor in self.executors:
            levels = levels_for(executor, self.levels, self.cores)
            if executor == "process":
                process_skipped = self._why_no_processes(fn, inputs)
                if process_skipped:
                    self.say(f"stage {name}: no process pool: {process_skipped}")
                    continue
            for level in levels:
                if self._check_limit():
                    break
                point = self._sweep_point(name, executor, level, fn, inputs)
                if point is None:
                    process_skipped = process_skipped or f"worker processes failed: {self.last_failure}"
                    break
                first_error = first_error or point.first_error
                if executor == "thread":
                    thread_qps[level] = point.qps
                if self.cut:
                    break
        gil_at = 0
        if self.gil and "thread" in self.executors and thread_qps and not self._check_limit():
            gil_at = gil_level(thread_qps)
            self._sample_gil(name, fn, inputs, gil_at)
        outputs, input_errors = ([], 0) if last or self.cut else self._outputs(stage, fn, inputs)
        self._write(fmt.StageSummary(stage=name, index=index, kind=stage.kind, inputs=len(inputs),
                                     input_errors=input_errors, process_skipped=process_skipped,
                                     gil_concurrency=gil_at, first_error=first_error))
        return outputs

    def _why_no_processes(self, fn, inputs) -> str:
        if self.start_method == "fork":
            return ""
        return run_levels.why_not_picklable(fn, inputs, self.start_method)

    def _plan(self) -> run_levels.LevelPlan:
        return run_levels.LevelPlan(warmup_s=self.warmup_s, duration_s=self.duration_s,
                                    max_items=self.max_items, hard_end=self.hard_end)

    def _sweep_point(self, name, executor, level, fn, inputs) -> fmt.SweepPoint | None:
        if executor == "thread":
            r = run_levels.run_threads(fn, inputs, level, self._plan(), self.stop)
        else:
            r = run_levels.run_processes(fn, inputs, level, self._plan(), self.stop, self.start_method)
        if r.interrupted:
            self._mark_cut("Ctrl-C")
        elif r.cut_short:
            self._check_limit()
        if r.failure and not r.items:
            self.say(f"stage {name}: {executor} x{level} failed: {r.failure}")
            if executor == "process":
                self.last_failure = r.failure
                return None
        point = fmt.SweepPoint(
            stage=name, executor=executor, concurrency=level, items=r.items, errors=r.errors, qps=r.qps,
            p50_latency_s=r.p50_latency_s, p90_latency_s=r.p90_latency_s, cpu_pct=r.cpu_pct,
            machine_cpu_pct=r.machine_cpu_pct, peak_memory_bytes=r.peak_memory_bytes,
            duration_s=r.duration_s, cut_short=r.cut_short, first_error=r.first_error, slice_qps=r.slice_qps,
            slice_cpu_pct=r.slice_cpu_pct, slice_machine_cpu_pct=r.slice_machine_cpu_pct)
        self._write(point)
        errors = f"  errors {r.errors}/{r.items}" if r.errors else ""
        cut = "  (cut short)" if r.cut_short else ""
        self.say(f"stage {name}: {executor:7s} x{level:<3d} QPS {r.qps:9.1f}  p50 {r.p50_latency_s * 1e3:8.2f} ms"
                 f"  CPU {r.cpu_pct:5.0f} %  machine {r.machine_cpu_pct:5.0f} %{errors}{cut}")
        return point

    def _sample_gil(self, name, fn, inputs, level) -> None:
        self.say(f"stage {name}: sampling the GIL holder with {level} threads")
        holder: dict = {}
        reason = gil_sampler.why_no_gil_sampling()
        if reason:
            sample = gil_sampler.GilSample(skipped=reason)
        else:
            run = run_levels.run_threads(
                fn, inputs, level, self._plan(), self.stop,
                during=lambda: holder.setdefault("s", gil_sampler.sample_gil(self.gil_duration_s)))
            if run.interrupted:
                self._mark_cut("Ctrl-C")
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
        self.say(f"stage {stage.name}: computing {len(inputs)} outputs as the next stage's inputs")

        def one(item):
            try:
                return True, fn(item)
            except Exception:
                return False, None

        flat = flattens(fn)  # a generator stage: each call yields several next inputs
        outputs, errors = [], 0
        pool = ThreadPoolExecutor(CACHE_THREADS)
        try:
            for ok, out in pool.map(one, inputs):
                if not ok:
                    errors += 1
                elif flat:
                    outputs.extend(out)
                else:
                    outputs.append(out)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # on Ctrl-C: drop the calls not started
        return outputs, errors

    # ------------------------------------------------------------ end

    def finish(self) -> Result:
        elapsed = time.monotonic() - self.t0
        self._write(fmt.End(wall_time_s=time.time(), elapsed_s=elapsed, cut_short=self.cut, reason=self.cut_reason))
        self._fh.close()
        return Result(self.path, self.records, self.cut, self.cut_reason)
