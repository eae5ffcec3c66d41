"""The Timeline view of a pair (`diff/timeline`) and the link to torch-tb-profiler's trace viewer
(`profiler_link`)."""
from __future__ import annotations

from typing import Literal

from .common import RunRef, _Shape
from .modules_diff import Crumb, PieceKind, PieceStatus

TimelineKind = Literal["operator", "kernel", "memcpy", "memset", "annotation", "module", "python"]


class TimelineLane(_Shape):
    label: str
    # A device stream (else a host thread).
    device: bool


class TimelineEvents(_Shape):
    """One column per field, one entry per event, by start (compact: a
    whole step is thousands of events)."""
    name: list[int]  # index into the side's `names`
    kind: list[int]  # index into the answer's `kinds`
    ts_us: list[float]  # after the side's `start_us` (the piece's start)
    dur_us: list[float]
    lane: list[int]  # index into the side's `lanes`
    depth: list[int]  # nesting inside the lane, 0 outermost
    match: list[int | None]  # shared with the matching event of the other side
    delta_us: list[float | None]  # matched: experimental - baseline duration


class TimelineMerged(_Shape):
    """Events too short to draw, merged per lane and depth: each entry spans
    from its first event's start to its last one's end."""
    lane: list[int]
    depth: list[int]
    ts_us: list[float]
    dur_us: list[float]
    count: list[int]
    merged_us: list[float]  # the merged events' summed duration


class TimelineSide(_Shape):
    piece_name: str
    # Absolute trace time of the piece (host window), and of the window drawn.
    start_us: float
    end_us: float
    window_start_us: float
    window_end_us: float
    # The end of the window's last event, or the window's end if later (device
    # work can outlast the piece; events enclosing the window do not count).
    events_end_us: float
    lanes: list[TimelineLane]
    names: list[str]
    events: TimelineEvents
    events_total: int  # in the window: drawn + merged
    min_draw_us: float  # shorter events were merged (0: none)
    merged: TimelineMerged
    merged_count: int
    merged_us: float


class DiffTimelineResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    path: str
    name: str
    kind: PieceKind
    status: PieceStatus
    breadcrumb: list[Crumb]
    kinds: list[TimelineKind]
    from_us: float | None
    to_us: float | None
    matched: int  # pairs of matched events in the piece
    baseline_side: TimelineSide | None
    experimental_side: TimelineSide | None
    # A run kept the device busy most of its steps: device streams are the first lanes.
    device_bound: bool
    # A group of recordings shows one recording's pieces and steps, its representative's (the median step
    # time): which, for each side (null: one recording), and the sentence the view shows; null for two runs.
    baseline_recording: str | None
    experimental_recording: str | None
    recordings_note: str | None


class ProfilerLinkResponse(_Shape):
    # Our selection, worker and span resolved as every route resolves them.
    run: str
    worker: str
    span: str
    # The same file under torch-tb-profiler's names (its routes take these).
    profiler: RunRef
