"""The run listing (`runs`): runs, their workers and spans, and their load state."""
from __future__ import annotations

from typing import Literal

from .common import _Shape

RunStatus = Literal["ready", "loading", "failed", "unloaded"]
RunKind = Literal["trace", "pipeline", "diagnostic", "group"]


class StepRange(_Shape):
    first: int  # N of the first ProfilerStep#N
    last: int
    count: int  # steps in the span (last - first + 1 when none is missing)


class SpanInfo(_Shape):
    """What the picker shows for one span (a trace file of the worker, as
    `tensorboard_trace_handler` writes one per profiling cycle)."""

    span: str  # the id in the file name: the URL's and every route's `span`
    order: int  # 1-based, oldest first
    # When the trace file was written, read from the id when it is a timestamp (Unix seconds).
    written_unix_s: float | None
    # Known once the span's trace or its summary is loaded; null before (and for a time the trace cannot tell).
    start_unix_s: float | None
    steps: StepRange | None


class WorkerInfo(_Shape):
    name: str
    spans: list[str]
    span_info: list[SpanInfo]  # one per span, in the order of `spans`


class RunInfo(_Shape):
    name: str
    workers: list[WorkerInfo]
    kinds: list[RunKind]
    status: RunStatus
    error: str | None
    warnings: list[str]
    # A group (kind "group"): its member runs, in recording order; empty for a plain run.
    recordings: list[str]


class RunsResponse(_Shape):
    runs: list[RunInfo]
    loading: bool
