"""A group of recordings (`tb-pipeline record --repeat N`) seen as one run of
pipeline statistics: the recordings' tables pooled into one
`PipelineTables`, which every pipeline analysis reads as it reads one run's.

Pooled as if the recordings were one long run, one after the other:

* steps and callbacks: every recording's, numbered one after the other,
  `t_s` shifted so that each recording starts where the previous one's last
  step ended (the throughput series shows the recordings in turn): the
  split, the input-bound verdict and the rates are those of all steps;
* stages: each recording's whole-run stage row (stages.stage_table)
  becomes one interval record of the pooled stage, so stage_table's own
  interval arithmetic pools them: items and tasks add up, QPS is items over
  the summed intervals, mean task time and queue waits are weighted by tasks
  and items, occupancy by interval. Stages line up by pipeline index and
  name, as diff/statistics/compare.py joins two runs;
* host samples: the representative recording's (the one whose mean step is
  the median of the group's, as analysis/group.py picks it): samples of
  processes that did not run at the same time share no time axis, and
  their counters (bytes read) cannot be joined.

Each row keeps its recording in a `recording` column (an index into
`recording_names`): the spread between recordings is measured from it
(diff/statistics/compare.py, diff/explain/pipeline.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...readers.tables import QUEUE_COLUMNS, TASK_COLUMNS, PipelineTables
from .report import main_steps
from .stages import stage_table

RECORDING = "recording"


def representative_index(members: list[PipelineTables]) -> int:
    """The recording whose mean step time (main loader) is the median of the
    group's (the lower middle for an even count); one without steps counts 0."""
    means = []
    for m in members:
        used, _ = main_steps(m.steps)
        d = pd.to_numeric(used["duration_s"], errors="coerce").dropna()
        means.append(float(d.mean()) if len(d) else 0.0)
    order = np.argsort(means, kind="stable")
    return int(order[(len(order) - 1) // 2])


def _tagged(frame: pd.DataFrame, index: int, **shift) -> pd.DataFrame:
    out = frame.copy()
    for column, offset in shift.items():
        out[column] = pd.to_numeric(out[column], errors="coerce") + offset
    out[RECORDING] = index
    return out


def _stage_records(tables: PipelineTables, index: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One recording's stage rows as interval records (final=False) of its
    task and queue statistics, keyed by pipeline index (stage_table's
    alignment of pipelines across runs)."""
    stages = stage_table(tables.stage_tasks, tables.stage_queues)
    if not len(stages):
        return pd.DataFrame(columns=[*TASK_COLUMNS, RECORDING]), pd.DataFrame(columns=[*QUEUE_COLUMNS, RECORDING])
    key = {"pipeline_id": stages["pipeline_index"], "stage_id": stages["stage_id"],
           "stage_name": stages["stage_name"], "stage": stages["stage"], "concurrency": stages["concurrency"],
           "final": False, RECORDING: index, "t_s": np.nan, "wall_time_s": np.nan}
    # Every per-task figure the recorder writes (TASK_COLUMNS past the key), so
    # a figure added to the format is pooled without a second list to keep.
    tasks = pd.DataFrame({**key, **{c: stages[c] for c in TASK_COLUMNS[TASK_COLUMNS.index("tasks"):]}})
    queues = pd.DataFrame({**key, **{c: stages[c] for c in ("interval_s", "items", "qps", "put_wait_mean_s",
                                                               "get_wait_mean_s")},
                           "occupancy": pd.to_numeric(stages["occupancy_pct"], errors="coerce") / 100.0})
    for c in QUEUE_COLUMNS:
        if c not in queues:
            queues[c] = np.nan
    tasks = tasks[pd.to_numeric(tasks["tasks"], errors="coerce").notna()]
    queues = queues[pd.to_numeric(queues["interval_s"], errors="coerce").notna()]
    return tasks[[*TASK_COLUMNS, RECORDING]], queues[[*QUEUE_COLUMNS, RECORDING]]


def pool_statistics(members: list[PipelineTables], names: list[str]) -> PipelineTables:
    """The recordings' statistics as one run (module docstring); `names`, the
    recordings' run names, one per member."""
    if not members or len(members) != len(names):
        raise ValueError("a group needs one name per recording, and at least one recording")
    rep = representative_index(members)
    steps, callbacks, tasks, queues = [], [], [], []
    step_offset, t_offset = 0.0, 0.0
    for i, m in enumerate(members):
        s = m.steps
        steps.append(_tagged(s, i, step=step_offset, t_s=t_offset))
        callbacks.append(_tagged(m.callbacks, i, step=step_offset))
        t, q = _stage_records(m, i)
        tasks.append(t)
        queues.append(q)
        if len(s):
            step_offset += float(pd.to_numeric(s["step"], errors="coerce").max()) + 1.0
            end = pd.to_numeric(s["t_s"], errors="coerce") + pd.to_numeric(s["duration_s"], errors="coerce")
            t_offset += float(end.max())
    sources = sorted({m.source for m in members})
    warnings = [f"{name}: {w}" for name, m in zip(names, members) for w in m.warnings]
    if len(sources) > 1:
        warnings.append(f"the recordings' statistics come from different sources ({', '.join(sources)}): "
                        f"pooled all the same, reported as {members[rep].source!r}")
    return PipelineTables(
        source=members[rep].source, steps=_concat(steps), callbacks=_concat(callbacks), stage_tasks=_concat(tasks),
        stage_queues=_concat(queues), host=members[rep].host, meta=[meta for m in members for meta in m.meta],
        warnings=warnings, t0_wall_s=members[rep].t0_wall_s, recording_names=list(names), representative=rep,
        epilogues=[{**e, "recording": i} for i, m in enumerate(members) for e in m.epilogues])


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    kept = [f for f in frames if len(f)]
    return pd.concat(kept, ignore_index=True) if kept else frames[0].iloc[0:0]
