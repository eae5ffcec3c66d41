"""Pipeline statistics records: one JSON object per line under
`{logdir}/{run}/pipeline/*.jsonl` (see docs/pipeline_format.md).

Every record carries `"type"` (the tag below) and `"schema"` (the version it
was written with). Times are seconds, wall clock times are Unix seconds.
Nothing here imports other modules of the package: the recorder, the
launcher's hooks and the readers share exactly this.

`gc=False`: records are plain data, never part of a cycle; untracked, a
recorder creating one per step adds no garbage-collector work.
`forbid_unknown_fields` keeps the readers' fast path strict: a record with a
field this version does not know fails it, and the tolerant per-line path
then reads the known fields and warns about the rest.
"""
from __future__ import annotations

import msgspec

SCHEMA_VERSION = 1
PIPELINE_DIR = "pipeline"
FILE_SUFFIX = ".jsonl"


class RunMeta(msgspec.Struct, tag="run", tag_field="type", omit_defaults=True, forbid_unknown_fields=True,
                gc=False):
    """Once per writing process, first line of its file."""

    wall_time_s: float
    command: list[str]
    pid: int
    python: str
    cpu_count: int
    schema: int = SCHEMA_VERSION
    hostname: str = ""
    torch: str | None = None
    spdl: str | None = None
    source: str = "recorder"  # "recorder" (code in the loop) or "launcher" (no code change)
    headspace_batches: int = 0  # > 0: the loader replays its first N batches
    host_interval_s: float | None = None


class StepRecord(msgspec.Struct, tag="step", tag_field="type", omit_defaults=True, forbid_unknown_fields=True,
                gc=False):
    """One training step, from asking the loader for its batch to asking for
    the next one: duration_s = data_wait_s + compute_s + callbacks total + other_s."""

    step: int
    wall_start_s: float
    duration_s: float
    data_wait_s: float
    compute_s: float
    schema: int = SCHEMA_VERSION
    callbacks_s: dict[str, float] = {}
    other_s: float = 0.0  # after an explicit step mark, before the next batch request
    batch_size: int | None = None
    # Tokens in the batch: the element count of its first 2-D integer tensor
    # (token ids, batch x sequence); None when the batch has none.
    tokens: int | None = None
    cached: bool = False  # the batch was replayed from the headspace cache
    loader: int = 0  # which loader fed the step (several loaders in one run)


class StageTasks(msgspec.Struct, tag="stage_tasks", tag_field="type", omit_defaults=True, forbid_unknown_fields=True,
                gc=False):
    """Task statistics of one SPDL stage over an interval (or the whole run,
    `final`), as SPDL's TaskStatsHook measures them."""

    wall_time_s: float
    stage: str  # SPDL's stage label, e.g. "0:1:decode[4]"
    stage_name: str
    tasks: int
    failures: int
    task_mean_s: float
    schema: int = SCHEMA_VERSION
    task_p90_s: float | None = None  # None: not measured (DataLoader parts keep sums only)
    task_p99_s: float | None = None
    # Measured in the worker thread around the user's function (None: not
    # measured: async ops, generators, process pools, older recordings).
    # CPU far below the call's wall time is waiting: I/O, or the GIL.
    task_cpu_mean_s: float | None = None
    task_call_mean_s: float | None = None
    # Of the same calls, time the thread waited runnable for a core (Linux
    # schedstat, sampled: record/task_cpu.py); None: not measured.
    task_runq_mean_s: float | None = None
    pipeline_id: int = 0
    stage_id: str = ""
    concurrency: int | None = None
    final: bool = False


class StageQueue(msgspec.Struct, tag="stage_queue", tag_field="type", omit_defaults=True, forbid_unknown_fields=True,
                gc=False):
    """The output queue of one SPDL stage over an interval (or the run):
    items through it, its QPS, put / get blocking and occupancy, as SPDL's
    StatsQueue measures them."""

    wall_time_s: float
    stage: str
    stage_name: str
    interval_s: float
    items: int
    qps: float
    put_wait_mean_s: float
    get_wait_mean_s: float
    put_wait_p90_s: float
    get_wait_p90_s: float
    put_wait_p99_s: float
    get_wait_p99_s: float
    occupancy: float  # 0..1: share of the interval the queue held an item
    schema: int = SCHEMA_VERSION
    pipeline_id: int = 0
    stage_id: str = ""
    concurrency: int | None = None
    final: bool = False


class HostSample(msgspec.Struct, tag="host", tag_field="type", omit_defaults=True, forbid_unknown_fields=True,
                gc=False):
    """Resource use of the training process and its children at one instant.
    Byte counters are cumulative; readers turn them into rates."""

    wall_time_s: float
    cpu_pct: float  # process tree, 100 = one core busy
    rss_bytes: int  # process tree
    schema: int = SCHEMA_VERSION
    num_processes: int = 1
    disk_read_bytes: int | None = None  # process tree I/O, or the system's when unreadable
    disk_write_bytes: int | None = None
    net_sent_bytes: int | None = None  # system-wide
    net_recv_bytes: int | None = None
    gpu_util_pct: float | None = None  # mean over visible GPUs (NVML)
    gpu_mem_used_bytes: int | None = None  # sum over visible GPUs
    gpu_count: int | None = None
    # Share of the interval a thread asking for the GIL waited for it (gilknocker;
    # record/gil_contention.py); None when not sampled.
    gil_contention_pct: float | None = None
    # The whole machine's CPU use (100 = one core busy), the training tree's
    # included: what is left over is other processes' load on the host.
    system_cpu_pct: float | None = None


class ProfilerRecord(msgspec.Struct, tag="profiler", tag_field="type", omit_defaults=True,
                     forbid_unknown_fields=True, gc=False):
    """Whose torch.profiler traces the run has, written by `tb-pipeline record
    --profile` (record/profiling.py) when it starts its profiler ("launcher")
    or sees the script start its own ("script", then the launcher starts none
    or stops its own)."""

    wall_time_s: float
    pid: int
    owner: str  # "launcher" | "script"
    schema: int = SCHEMA_VERSION
    schedule: str | None = None  # the launcher's, "skip_first=0,wait=1,warmup=1,active=3,repeat=1"
    activities: list[str] = []  # "CPU", "CUDA"
    profile_memory: bool = False
    trace_dir: str | None = None
    note: str = ""


class DeviceStep(msgspec.Struct, tag="device_step", tag_field="type", omit_defaults=True,
                 forbid_unknown_fields=True, gc=False):
    """A step on the device's clock, from CUDA events on the current stream
    at its start and at the next boundary (record/device_clock.py): the
    device's time for the step's work. Written once the device finished it
    (later than the step's own record), only when the loop used CUDA."""

    step: int
    device_s: float
    schema: int = SCHEMA_VERSION
    loader: int = 0


class LoopEnd(msgspec.Struct, tag="loop_end", tag_field="type", omit_defaults=True, forbid_unknown_fields=True,
              gc=False):
    """The training loop stopped asking a loader for batches: its last step
    ended here, not at the next batch request (there is none). Written when
    the loader's iterator is exhausted (`how` "exhausted") or dropped by the
    loop (`break`, an exception, the loop's frame gone: "left")."""

    wall_time_s: float
    steps: int  # the steps recorded so far
    how: str  # "exhausted" | "left"
    schema: int = SCHEMA_VERSION
    loader: int = 0


class RunEnd(msgspec.Struct, tag="end", tag_field="type", omit_defaults=True, forbid_unknown_fields=True,
             gc=False):
    """The recorder closed (the process ends, or `Recorder.close`). The
    epilogue, from the last step's end to here, is the time the loop's end
    cost (a DataLoader shutting down persistent workers, a final checkpoint):
    paid by the user, part of no step. `last_step_open`: the last step was
    still running at close (no loop end was seen), so it holds the epilogue."""

    wall_time_s: float
    steps: int
    epilogue_s: float
    schema: int = SCHEMA_VERSION
    last_step_open: bool = False


Record = RunMeta | StepRecord | DeviceStep | StageTasks | StageQueue | HostSample | ProfilerRecord | LoopEnd | RunEnd
RECORD_TYPES: dict[str, type] = {
    "run": RunMeta, "step": StepRecord, "device_step": DeviceStep, "stage_tasks": StageTasks, "stage_queue": StageQueue, "host": HostSample,
    "profiler": ProfilerRecord, "loop_end": LoopEnd, "end": RunEnd,
}
