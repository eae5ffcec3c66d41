"""Diagnostic-mode records: one JSON object per line in
`{logdir}/{run}/diagnostic/diagnostic.jsonl` (see docs/diagnostic_format.md).

Every record carries `"type"` (the tag below) and `"schema"` (the version it
was written with). Durations are seconds, CPU % counts one busy core as 100,
memory is bytes. Nothing here imports other modules of the package: the
diagnose engine (writing side) and the readers share exactly this.
"""
from __future__ import annotations

from typing import Union

import msgspec

SCHEMA_VERSION = 1
DIAGNOSTIC_DIR = "diagnostic"
RESULTS_FILE = "diagnostic.jsonl"
SLICES = 8  # parts each level's measured window is cut into, for its spread


class Environment(msgspec.Struct, tag="environment", tag_field="type", omit_defaults=True):
    """First line: the machine and interpreter the sweep ran on."""

    wall_time_s: float
    cpu_count: int  # logical cores usable by this process (one core = 100 % CPU)
    python: str  # sys.version
    implementation: str  # "cpython", "pypy", ...
    free_threaded: bool  # built with Py_GIL_DISABLED
    gil_enabled: bool  # the GIL is on at run time (False only on free-threaded builds)
    process_start_method: str  # "fork", "spawn", ... used by the process executor
    levels: list[int]  # concurrency levels asked for
    executors: list[str]  # "thread", "process"
    warmup_s: float
    duration_s: float  # per level, measured part
    source: str = "function"  # "function", "cli", "dataloader", "spdl"
    command: list[str] = []
    pid: int = 0
    hostname: str = ""
    max_items: int = 0  # 0 = bounded by duration only
    # Threading the stages ran under (0: unknown, or torch not loaded). Thread levels keep the main process's
    # torch intra-op threads; process levels get `process_intra_op_threads` where the executor sets them
    # (DataLoader workers: torch.set_num_threads(1)), else inherit the main process's (0 here).
    intra_op_threads: int = 0
    process_intra_op_threads: int = 0
    thread_env: dict[str, str] = {}  # OMP_NUM_THREADS, MKL_NUM_THREADS, ... as set when the sweep started
    time_limit_s: float = 0.0  # the whole sweep's time budget (0: none)
    memory_limit_bytes: int = 0  # memory the sweep may use: free memory at its start, or the limit asked
    schema: int = SCHEMA_VERSION


class SweepPoint(msgspec.Struct, tag="sweep", tag_field="type", omit_defaults=True):
    """One stage run alone on its cached inputs at one concurrency level."""

    stage: str
    executor: str  # "thread" | "process"
    concurrency: int
    items: int  # calls completed in the measured window (errors included)
    errors: int  # calls that raised
    qps: float  # items / duration_s
    p50_latency_s: float
    p90_latency_s: float
    cpu_pct: float  # process tree (this process + its children), one core = 100
    machine_cpu_pct: float  # every process on the machine, same unit: tells a busy box
    peak_memory_bytes: int  # peak RSS of the process tree during the level
    duration_s: float  # measured window (warm-up excluded)
    cut_short: bool = False  # stopped by Ctrl-C or the time limit before its bound
    first_error: str = ""  # "TypeName: message" of the first error seen
    # The level's spread: QPS of each of SLICES equal parts of every worker's measured span (their mean is
    # `qps`), and CPU % of the tree and of the machine in each equal part of the planned measured window.
    # Empty (omitted) in results written before slices were measured: that level has no interval.
    slice_qps: list[float] = []
    slice_cpu_pct: list[float] = []
    slice_machine_cpu_pct: list[float] = []
    # torch intra-op threads in the workers during the level (0: unknown, or torch not loaded).
    intra_op_threads: int = 0
    # CPU % of the threads that call the stage (each worker's calling thread over its measured span, summed):
    # `cpu_pct` over it is how many cores a call keeps busy per calling thread (its own thread pools).
    # 0: not measured (results written before it was).
    caller_cpu_pct: float = 0.0
    cut_reason: str = ""  # why the level stopped before its bound: "Ctrl-C", "time limit 180 s", "low memory: ..."
    schema: int = SCHEMA_VERSION


class GilFrame(msgspec.Struct, omit_defaults=True):
    function: str
    file: str
    line: int  # the function's line with the most GIL-held samples
    samples: int  # GIL-held samples whose innermost frame is in this function
    share: float  # samples / all GIL-held samples


class GilRecord(msgspec.Struct, tag="gil", tag_field="type", omit_defaults=True):
    """Who held the GIL while the thread pool ran the stage at `concurrency`."""

    stage: str
    concurrency: int
    sampler: str  # "py-spy record --gil ..." as run
    total_samples: int = 0  # GIL-held samples (py-spy --gil drops the others)
    held_share: float = 0.0  # total_samples / (rate_hz * duration_s): how much of the time the GIL was held
    rate_hz: int = 0
    duration_s: float = 0.0
    top: list[GilFrame] = []
    skipped: str = ""  # non-empty: why no sampling happened (top is then empty)
    schema: int = SCHEMA_VERSION


class SkippedLevel(msgspec.Struct, omit_defaults=True):
    """A level of a stage that was not run, and why."""

    executor: str
    concurrency: int
    cause: str  # "time" (the stage's share of the time budget) or "memory" (it would not fit the free memory)
    reason: str  # in words, with the estimate that decided it


class StageSummary(msgspec.Struct, tag="stage", tag_field="type", omit_defaults=True):
    """Once per stage, after its sweep (or when it could not be swept)."""

    stage: str
    index: int  # position in the chain
    kind: str  # "map" (swept) or "regroup" (aggregate/batching: applied once, not swept)
    inputs: int  # cached inputs the stage ran on
    input_errors: int = 0  # inputs on which it raised while the next stage's inputs were cached
    process_skipped: str = ""  # why the process executor was not used, if it was not
    gil_concurrency: int = 0  # thread level sampled for the GIL holder (0: none)
    skipped: str = ""  # why the stage was not swept at all
    first_error: str = ""
    skipped_levels: list[SkippedLevel] = []  # levels not run for the time budget or for memory
    budget_s: float = 0.0  # the stage's share of the sweep's time budget when it started (0: no budget)
    schema: int = SCHEMA_VERSION


class End(msgspec.Struct, tag="end", tag_field="type", omit_defaults=True):
    """Last line: present only when the sweep finished writing."""

    wall_time_s: float
    elapsed_s: float
    cut_short: bool = False
    reason: str = ""  # "Ctrl-C", "SIGTERM", "time limit 30 s", ...
    schema: int = SCHEMA_VERSION


Record = Union[Environment, SweepPoint, GilRecord, StageSummary, End]
