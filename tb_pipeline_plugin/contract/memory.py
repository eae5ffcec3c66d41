"""Memory of a pair (`diff/memory`): both peaks, growth, what was alive at each peak, the curves."""
from __future__ import annotations

from .common import Number, RunRef, _Shape


class MemoryPeak(_Shape):
    peak_bytes: int
    # µs from the start of the peak's step (null: the peak is in no step).
    peak_us: Number | None
    step: str | None
    # The operator whose allocation reached the peak, and its part (module path, optimizer, ...).
    operator: str
    part: str
    avg_allocated_bytes: Number
    # Of the peak: memory allocated before the profiled window (blocks basis), or held when the step began (net).
    before_window_bytes: int
    # Frees of blocks allocated before the profiled window.
    frees_before_window: int
    # "blocks": live blocks replayed by address; "net": no addresses, net bytes since the step began.
    basis: str


class MemoryRow(_Shape):
    # By module: the part (module path, data loading, optimizer, "before the window", ...); by operator: its name.
    key: str
    phase: str
    # By module: the operator holding most of the row's bytes; by operator: the part.
    detail: str
    # Innermost Python frames of the user's code around the largest block's allocation ("": no stacks).
    call_path: str
    baseline_bytes: int
    experimental_bytes: int
    delta_bytes: int
    delta_pct: float | None
    baseline_blocks: int
    experimental_blocks: int
    # Median lifetime of the row's freed blocks, µs (null: none freed).
    median_alive_us: Number | None
    # [start, end] µs from the peak's step start of the row's blocks alive at the peak (end null: never freed).
    baseline_lifetimes: list[list[Number | None]]
    experimental_lifetimes: list[list[Number | None]]


class MemoryCurve(_Shape):
    step: str | None
    duration_us: Number
    # µs from the step start; the first point is the level at the start.
    t_us: list[Number]
    allocated_bytes: list[Number]
    reserved_bytes: list[Number | None] | None
    peak_us: Number
    peak_bytes: int


class MemoryStepPeak(_Shape):
    index: int
    baseline_step: str | None
    experimental_step: str | None
    baseline_peak_bytes: int | None
    experimental_peak_bytes: int | None


class MemoryDeviceDiff(_Shape):
    device: str
    baseline: MemoryPeak | None
    experimental: MemoryPeak | None
    growth_bytes: int | None
    growth_pct: float | None
    basis: str
    # Bytes alive at each run's peak, largest |delta| first.
    by_module: list[MemoryRow]
    by_operator: list[MemoryRow]
    steps: list[MemoryStepPeak]
    baseline_curve: MemoryCurve | None
    experimental_curve: MemoryCurve | None
    # The average's largest mover is not the peak's: its attribution follows (else empty lists).
    steady_differs: bool
    steady_by_module: list[MemoryRow]
    steady_by_operator: list[MemoryRow]


class SnapshotSegment(_Shape):
    address: int
    total_bytes: int
    allocated_bytes: int
    active_bytes: int
    stream: int
    segment_type: str
    blocks: int


class SnapshotStepMark(_Shape):
    step: str
    t_ms: Number


class SnapshotStepPeak(_Shape):
    step: str
    peak_allocated_bytes: int


class SnapshotCurve(_Shape):
    # ms from the history's first action; thinned keeping each bucket's highest allocated point.
    t_ms: list[Number]
    # alloc until free_completed; active: until free_requested; reserved: the segments.
    allocated_bytes: list[Number]
    active_bytes: list[Number]
    reserved_bytes: list[Number]
    steps: list[SnapshotStepMark]


class SnapshotSide(_Shape):
    peak_allocated_bytes: int
    peak_step: str | None
    reserved_at_peak_bytes: int
    peak_reserved_bytes: int
    end_reserved_bytes: int
    end_allocated_bytes: int
    # Allocated when the history began (the model's parameters when it began after `.to(device)`).
    start_allocated_bytes: int
    fragmentation_at_peak_bytes: int
    end_fragmentation_bytes: int
    largest_segments: list[SnapshotSegment]
    step_peaks: list[SnapshotStepPeak]
    curve: SnapshotCurve


class SnapshotMetric(_Shape):
    metric: str
    baseline_bytes: int | None
    experimental_bytes: int | None
    delta_bytes: int | None
    delta_pct: float | None


class SnapshotRow(_Shape):
    # A category (activations, gradients, ...), a user frame (`file:line function`) or a module path.
    key: str
    # The largest block's user frame (by category, by module) or category (by frame).
    detail: str
    baseline_bytes: int
    experimental_bytes: int
    delta_bytes: int
    delta_pct: float | None
    baseline_blocks: int
    experimental_blocks: int


class SnapshotDeviceDiff(_Shape):
    device: str
    baseline: SnapshotSide | None
    experimental: SnapshotSide | None
    metrics: list[SnapshotMetric]
    # Bytes live at each run's peak, largest |delta| first.
    by_category: list[SnapshotRow]
    by_frame: list[SnapshotRow]
    by_module: list[SnapshotRow]


class SnapshotDiff(_Shape):
    # The snapshot file each run's numbers are of (null: the run has none).
    baseline_file: str | None
    experimental_file: str | None
    # Files refused or unreadable, one message each (the run's other data still serves).
    messages: list[str]
    devices: list[SnapshotDeviceDiff]
    sentence: str


class DiffMemoryResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    devices: list[MemoryDeviceDiff]
    # The device the sentence is about: the GPU with the highest peak, else the CPU, of those both runs have.
    device: str | None
    sentence: str
    # Why there is nothing to compare (a run recorded without profile_memory=True).
    message: str | None
    # Both runs' CUDA memory snapshots (`*.pickle` in the run directories), null when neither has one.
    snapshot: SnapshotDiff | None
