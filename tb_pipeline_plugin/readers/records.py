"""Our JSONL records -> PipelineTables."""
from __future__ import annotations

import msgspec

from ..formats.pipeline import (DeviceStep, HostSample, ProfilerRecord, RunEnd, RunMeta, StageQueue, StageTasks,
                                StepRecord)
from .tables import (CALLBACK_COLUMNS, HOST_COLUMNS, QUEUE_COLUMNS, STEP_COLUMNS, TASK_COLUMNS, PipelineTables,
                     frame)


def tables_from_records(records: list, warnings: list[str]) -> PipelineTables:
    metas = [r for r in records if isinstance(r, RunMeta)]
    stamps = [r.wall_time_s for r in metas] + [r.wall_start_s for r in records if isinstance(r, StepRecord)]
    stamps += [r.wall_time_s for r in records if isinstance(r, (HostSample, StageTasks, StageQueue))]
    t0 = min(stamps) if stamps else 0.0
    steps, callbacks, tasks, queues, host = [], [], [], [], []
    for r in records:
        if isinstance(r, StepRecord):
            cb_total = sum(r.callbacks_s.values())
            steps.append({
                "step": r.step, "loader": r.loader, "t_s": r.wall_start_s - t0, "wall_start_s": r.wall_start_s,
                "duration_s": r.duration_s, "data_wait_s": r.data_wait_s, "compute_s": r.compute_s,
                "callbacks_s": cb_total, "other_s": r.other_s, "batch_size": r.batch_size, "tokens": r.tokens, "cached": r.cached,
            })
            for name, s in r.callbacks_s.items():
                callbacks.append({"step": r.step, "loader": r.loader, "name": name, "kind": "callback", "time_s": s})
        elif isinstance(r, StageTasks):
            tasks.append(dict(msgspec.structs.asdict(r), t_s=r.wall_time_s - t0))
        elif isinstance(r, StageQueue):
            queues.append(dict(msgspec.structs.asdict(r), t_s=r.wall_time_s - t0))
        elif isinstance(r, HostSample):
            host.append(dict(msgspec.structs.asdict(r), t_s=r.wall_time_s - t0, mem_used_bytes=None))
    _mark_steps(steps, records)
    device = {(r.loader, r.step): r.device_s for r in records if isinstance(r, DeviceStep)}
    for row in steps:
        row["device_s"] = device.get((row["loader"], row["step"]), float("nan"))
    source = metas[0].source if metas else "recorder"
    out = PipelineTables(
        source=source, steps=frame(steps, STEP_COLUMNS), callbacks=frame(callbacks, CALLBACK_COLUMNS),
        stage_tasks=frame(tasks, TASK_COLUMNS), stage_queues=frame(queues, QUEUE_COLUMNS),
        host=frame(host, HOST_COLUMNS), meta=_metas(metas, records), warnings=list(warnings),
        t0_wall_s=t0, epilogues=[{"recording": None, "epilogue_s": r.epilogue_s, "last_step_open": r.last_step_open,
                                  "steps": r.steps} for r in records if isinstance(r, RunEnd)],
    )
    return out


def _mark_steps(steps: list[dict], records: list) -> None:
    """`after_profiler_start`: the first step starting after a profiler the
    launcher started (its start-up is in that step); `open_at_end`: the last
    step, when the recorder closed with it still running or the file has no
    end record (written before the loop's end was recorded): it may hold
    the loop's epilogue; `drives_cuda`: the process drove a CUDA device."""
    cuda = any(isinstance(r, ProfilerRecord) and "CUDA" in r.activities for r in records) or any(
        isinstance(r, HostSample) and (r.gpu_util_pct or 0.0) > 0.0 for r in records)
    for row in steps:
        row["after_profiler_start"] = False
        row["open_at_end"] = False
        row["drives_cuda"] = cuda
    if not steps:
        return
    starts = sorted(r.wall_time_s for r in records if isinstance(r, ProfilerRecord) and r.owner == "launcher")
    ordered = sorted(steps, key=lambda row: row["wall_start_s"])
    for start in starts:
        first = next((row for row in ordered if row["wall_start_s"] >= start), None)
        if first is not None:
            first["after_profiler_start"] = True
    ends = [r for r in records if isinstance(r, RunEnd)]
    if not ends or any(r.last_step_open for r in ends):
        ordered[-1]["open_at_end"] = True


_PROFILER_FIELDS = ("owner", "wall_time_s", "schedule", "activities", "profile_memory", "trace_dir", "note")


def _metas(metas: list, records: list) -> list[dict]:
    """Each writing process's run record, with the profiler records it wrote
    (`tb-pipeline record --profile`: whose traces the run has)."""
    profilers: dict[int, list[dict]] = {}
    for r in records:
        if isinstance(r, ProfilerRecord):
            profilers.setdefault(r.pid, []).append({k: getattr(r, k) for k in _PROFILER_FIELDS})
    return [dict(msgspec.structs.asdict(m), profilers=profilers.get(m.pid, [])) for m in metas]
