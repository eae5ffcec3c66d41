"""Diagnostic mode (writing side): run each pipeline stage alone on cached
inputs over thread and process pools at rising concurrency, measure QPS,
latency, CPU and memory, sample the GIL holder, write JSON lines
(formats/diagnostic.py) and summarise the verdicts.

Imports nothing of the reading side at import time; the terminal summary
loads analysis.diagnostic lazily, so the terminal and the UI agree.
"""
from __future__ import annotations

import sys
from typing import Any, Iterable, TextIO

from .session import DEFAULT_LEVELS, DEFAULT_TIME_LIMIT_S, Result, Session, default_out_dir
from .stages import Stage, batches_of, regroup
from .terminal_summary import print_summary

__all__ = ["diagnose", "Stage", "regroup", "batches_of", "Result", "Session", "DEFAULT_LEVELS",
           "DEFAULT_TIME_LIMIT_S", "default_out_dir", "print_summary"]


def diagnose(stages: Iterable[Any], source: Iterable, *, out_dir=None, levels: Iterable[int] = DEFAULT_LEVELS,
             executors: Iterable[str] = ("thread", "process"), warmup_s: float = 0.3, duration_s: float = 2.0,
             max_items: int = 0, num_inputs: int = 256, time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
             gil: bool = True, gil_duration_s: float = 1.0, progress: TextIO | None = sys.stderr, summary: bool = True,
             source_label: str = "function", start_method: str | None = None, memory_limit_bytes: int = 0) -> Result:
    """Profile `stages` — (name, fn) pairs or Stage objects, fn(item) -> item —
    fed by the first `num_inputs` items of `source`.

    Results go to `out_dir` (default {TB_PIPELINE_LOGDIR}/{TB_PIPELINE_RUN}/diagnostic)
    as diagnostic.jsonl. Levels run up to the cores and one above (threads
    further while the stage gains like I/O). `time_limit_s` (default 180 s;
    0 or None: none) is the sweep's time budget, shared among the stages:
    a level that would not fit its stage's share is skipped and said so;
    Ctrl-C, SIGTERM or the limit itself end the sweep early: what was
    measured is kept and the result says it was cut short. A level that
    would not fit the free memory (or `memory_limit_bytes`) is skipped too.
    Returns the Result (path, records written, cut_short, reason). `start_method` picks how
    worker processes start (default fork where available); other than fork,
    the function and inputs must pickle, else the process sweep is skipped and
    the stage summary says why.
    """
    session = Session(out_dir, levels=levels, executors=executors, warmup_s=warmup_s, duration_s=duration_s,
                      max_items=max_items, num_inputs=num_inputs, time_limit_s=time_limit_s, gil=gil,
                      gil_duration_s=gil_duration_s, progress=progress, source=source_label,
                      start_method=start_method, memory_limit_bytes=memory_limit_bytes)
    try:
        session.run_chain(stages, source)
    finally:
        result = session.finish()
    if summary and progress is not None:
        print_summary(result, progress)
    return result
