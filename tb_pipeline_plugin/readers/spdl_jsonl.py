"""SPDL 0.8 stage statistics as users' own hooks dump them: JSON lines with
`"kind": "task" | "queue"` and the fields of SPDL's `TaskPerfStats` /
`QueuePerfStats` plus the stage's `StageInfo` (nested under `stage_info` or
flat), e.g. the `TaskStatsHook` / `StatsQueue` subclasses in SPDL's logging
guide. Such lines in `{run}/pipeline/*.jsonl` are read as our stage records."""
from __future__ import annotations

from ..formats.pipeline import StageQueue, StageTasks

SPDL_KINDS = ("task", "queue")
_QUEUE_SUFFIX = "_queue"


def _label(info: dict) -> str:
    base = str(info.get("stage_name", ""))
    if info.get("concurrency") is not None:
        base = f"{base}[{info['concurrency']}]"
    return f"{info.get('pipeline_id', 0)}:{info.get('stage_id', '')}:{base}"


def convert(raw: dict) -> StageTasks | StageQueue:
    """One SPDL stats line -> our record; KeyError / TypeError / ValueError
    when a field SPDL always writes is missing or of the wrong type."""
    info = raw.get("stage_info") if isinstance(raw.get("stage_info"), dict) else raw
    ident = dict(
        stage=_label(info) if "stage_name" in info else str(raw["stage"]).removesuffix(_QUEUE_SUFFIX),
        stage_name=str(info.get("stage_name", raw.get("stage", ""))), pipeline_id=int(info.get("pipeline_id", 0)),
        stage_id=str(info.get("stage_id", "")), concurrency=info.get("concurrency"),
        final=bool(raw.get("final", False)), wall_time_s=float(raw["ts"]),
    )
    if raw["kind"] == "task":
        return StageTasks(tasks=int(raw["num_tasks"]), failures=int(raw["num_failures"]),
                          task_mean_s=float(raw["ave_time"]), task_p90_s=float(raw["p90_time"]),
                          task_p99_s=float(raw["p99_time"]), **ident)
    elapsed, items = float(raw["elapsed"]), int(raw["num_items"])
    return StageQueue(
        interval_s=elapsed, items=items, qps=float(raw.get("qps", items / elapsed if elapsed > 0 else 0.0)),
        put_wait_mean_s=float(raw["ave_put_time"]), get_wait_mean_s=float(raw["ave_get_time"]),
        put_wait_p90_s=float(raw["p90_put_time"]), get_wait_p90_s=float(raw["p90_get_time"]),
        put_wait_p99_s=float(raw["p99_put_time"]), get_wait_p99_s=float(raw["p99_get_time"]),
        occupancy=float(raw["occupancy_rate"]), **ident)
