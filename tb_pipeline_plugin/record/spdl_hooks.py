"""SPDL 0.8 stage statistics into our records, through SPDL's own config
hooks (`spdl.pipeline.config.set_default_hook_class` /
`set_default_queue_class`): every pipeline the script builds without an
explicit hook or queue gets these, with no change to the script.

Both subclasses keep SPDL's behaviour (its log lines included) and add one
record per interval report and one for the whole run (`final`).

CPU time per task: SPDL times a task from its event loop, where a worker
computing and a worker waiting for the GIL look the same. SPDL 0.8 has no
hook that runs in the worker thread, so the stage builder's `_pipe` /
`_ordered_pipe` (looked up by name in `spdl.pipeline._components._node` at
build time) get the stage's op wrapped with task_cpu.timed when the op is a
plain function run in a thread pool (async ops run on the event loop,
generators step per item, other executors get the user's function as is).
"""
from __future__ import annotations

import dataclasses
import inspect
import time

from ..formats.pipeline import StageQueue, StageTasks
from .task_cpu import TaskClock, timed


class _IntervalLap:
    """Tells the stats SPDL logs from its interval callback (a lap) apart
    from the final ones it logs once at the end of a stage."""

    _tb_lap = False

    async def interval_stats_callback(self, stats) -> None:
        self._tb_lap = True
        try:
            await super().interval_stats_callback(stats)
        finally:
            self._tb_lap = False


def _identity(info) -> dict:
    return dict(stage=str(info), stage_name=info.stage_name, pipeline_id=int(info.pipeline_id),
                stage_id=str(info.stage_id), concurrency=info.concurrency)


def install(write, interval_s: float) -> None:
    """Registers the hook and queue classes; `write(record)` stores a record.
    Pipelines built with report_stats_interval <= 0 (SPDL's default) report
    every `interval_s` seconds instead, so long runs get a time series."""
    from spdl.pipeline import StatsQueue, TaskStatsHook
    from spdl.pipeline import config as spdl_config

    class RecordingTaskStatsHook(_IntervalLap, TaskStatsHook):
        def __init__(self, info, interval: float = -1) -> None:
            super().__init__(info, interval=interval if interval > 0 else interval_s)
            self.tb_clock = TaskClock()

        def _log_stats(self, stats) -> None:
            # Called for interval reports (through the callback above) and
            # once at the end of the stage with the whole run's numbers.
            super()._log_stats(stats)
            cpu_s, call_s, runq_s = self.tb_clock.means_s(lap=self._tb_lap, runq=True)
            write(StageTasks(
                wall_time_s=time.time(), tasks=int(stats.num_tasks), failures=int(stats.num_failures),
                task_mean_s=float(stats.ave_time), task_p90_s=float(stats.p90_time),
                task_p99_s=float(stats.p99_time), task_cpu_mean_s=cpu_s, task_call_mean_s=call_s,
                task_runq_mean_s=runq_s, final=not self._tb_lap, **_identity(self.info),
            ))

    class RecordingStatsQueue(_IntervalLap, StatsQueue):
        def __init__(self, info, *, buffer_size: int = 1, interval: float = -1) -> None:
            super().__init__(info, buffer_size=buffer_size, interval=interval if interval > 0 else interval_s)

        def _log_stats(self, stats) -> None:
            super()._log_stats(stats)
            write(StageQueue(
                wall_time_s=time.time(), interval_s=float(stats.elapsed), items=int(stats.num_items),
                qps=float(stats.qps), put_wait_mean_s=float(stats.ave_put_time),
                get_wait_mean_s=float(stats.ave_get_time), put_wait_p90_s=float(stats.p90_put_time),
                get_wait_p90_s=float(stats.p90_get_time), put_wait_p99_s=float(stats.p99_put_time),
                get_wait_p99_s=float(stats.p99_get_time), occupancy=float(stats.occupancy_rate),
                final=not self._tb_lap, **_identity(self.info),
            ))

    spdl_config.set_default_hook_class(RecordingTaskStatsHook)
    spdl_config.set_default_queue_class(RecordingStatsQueue)
    _time_stage_ops()


def _thread_pool(executor) -> bool:
    """Whether the stage's function runs in a thread of this interpreter.
    Anything else (process pools, sub-interpreters, executors we do not
    know) must get the user's function itself: our wrapper cannot be
    pickled across to them."""
    if executor is None:
        return True
    owner = getattr(executor, "_owner", None)  # SPDL's PriorityExecutorEntrypoint
    if owner is not None and owner is not executor:
        return _thread_pool(owner)
    names = {c.__name__ for c in type(executor).__mro__}
    return bool(names & {"ThreadPoolExecutor", "PriorityThreadPoolExecutor"}) and not any(
        "Interpreter" in n or "Process" in n for n in names)


def _threaded_function(args) -> bool:
    op = args.op
    call = op if inspect.isroutine(op) else getattr(op, "__call__", None)
    if call is None or not _thread_pool(args.executor):
        return False
    return not (inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)
                or inspect.isgeneratorfunction(call))


def _with_clock(build):
    def stage(info, in_q, out_q, args, fc, hooks, *rest):
        clock = next((getattr(h, "tb_clock", None) for h in hooks if hasattr(h, "tb_clock")), None)
        if clock is not None and _threaded_function(args):
            args = dataclasses.replace(args, op=timed(args.op, clock))
        return build(info, in_q, out_q, args, fc, hooks, *rest)

    stage._tb_pipeline = True
    return stage


def _time_stage_ops() -> None:
    try:
        from spdl.pipeline._components import _node
    except ImportError:  # another SPDL layout: wall times only
        return
    for name in ("_pipe", "_ordered_pipe"):
        build = getattr(_node, name, None)
        if build is not None and not getattr(build, "_tb_pipeline", False):
            setattr(_node, name, _with_clock(build))
