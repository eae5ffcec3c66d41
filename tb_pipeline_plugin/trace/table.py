"""The columnar event table every analysis reads.

One row per trace event that has a place on a timeline (phases X, B/E paired
into X, i/I instants, C counters). Strings are interned: `*_id` columns index
`strings`. Sparse attributes live in side tables indexed by row (`kernels`,
`memory`) so the main table stays a dozen fixed-width columns.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class Kind(enum.IntEnum):
    """Normalised event category (current and 2021 Kineto spellings)."""

    OTHER = 0
    CPU_OP = 1
    USER_ANNOTATION = 2
    PYTHON_FUNCTION = 3
    RUNTIME = 4
    DRIVER = 5
    KERNEL = 6
    MEMCPY = 7
    MEMSET = 8
    GPU_ANNOTATION = 9
    MEMORY = 10
    TRACE_SPAN = 11


CATEGORY_KINDS: dict[str, Kind] = {
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION,
    "cuda_runtime": Kind.RUNTIME,
    "runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "cpu_instant_event": Kind.MEMORY,
    "trace": Kind.TRACE_SPAN,
}

DEVICE_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_ANNOTATION)
DEVICE_ACTIVITY_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)


class Phase(enum.IntEnum):
    COMPLETE = 0  # X, and B/E pairs
    INSTANT = 1
    COUNTER = 2


class FlowKind(enum.IntEnum):
    OTHER = 0
    LAUNCH = 1  # ac2g / async_cpu_to_gpu / 2021 "async": launch -> kernel
    FWD_BWD = 2  # forward op -> its backward


FLOW_KINDS: dict[str, FlowKind] = {
    "ac2g": FlowKind.LAUNCH,
    "async_cpu_to_gpu": FlowKind.LAUNCH,
    "async": FlowKind.LAUNCH,
    "fwdbwd": FlowKind.FWD_BWD,
}

NO_ID = -1


@dataclass
class KernelColumns:
    """Launch properties of kernel rows; NaN / -1 where the trace has none."""

    row: np.ndarray  # int64 index into EventTable
    grid_id: np.ndarray  # int32 string id of the grid's JSON text, -1 if absent
    block_id: np.ndarray
    registers_per_thread: np.ndarray  # float64
    shared_memory_bytes: np.ndarray
    blocks_per_sm: np.ndarray
    warps_per_sm: np.ndarray
    occupancy_pct: np.ndarray


@dataclass
class MemoryColumns:
    """`[memory]` instant events: allocator state after each (de)allocation."""

    ts_us: np.ndarray  # float64
    bytes_delta: np.ndarray  # int64
    total_allocated_bytes: np.ndarray  # int64, -1 if absent
    total_reserved_bytes: np.ndarray  # int64, -1 if absent
    device_type: np.ndarray  # int64: 0 CPU, 1 CUDA (c10::DeviceType)
    device_id: np.ndarray  # int64
    addr: np.ndarray  # int64 block address, -1 if absent (Kineto before 2022): frees pair with allocations by it
    thread_id: np.ndarray  # int32, same ids as EventTable.thread_id: the thread that (de)allocated


@dataclass
class FlowColumns:
    """Flow events (`s`, `t`, `f`); binding to X events is done in `link`."""

    kind: np.ndarray  # uint8 FlowKind
    flow_id: np.ndarray  # int64 (string ids are interned)
    is_start: np.ndarray  # bool: `s`
    binds_enclosing: np.ndarray  # bool: `bp == "e"` on an `f`
    ts_us: np.ndarray
    thread_id: np.ndarray  # int32, same ids as EventTable.thread_id


@dataclass
class EventTable:
    strings: list[str]
    phase: np.ndarray  # uint8 Phase
    kind: np.ndarray  # uint8 Kind
    name_id: np.ndarray  # int32
    pid_id: np.ndarray  # int32 index into `pids`
    thread_id: np.ndarray  # int32 index into `threads` ((pid, tid) pairs)
    ts_us: np.ndarray  # float64, as in the file (µs)
    dur_us: np.ndarray  # float64, 0 for instants
    external_id: np.ndarray  # int64, NO_ID if absent
    correlation: np.ndarray  # int64
    python_id: np.ndarray  # int64
    python_parent_id: np.ndarray  # int64
    device: np.ndarray  # int64, args.device of device events, else -1
    shape_id: np.ndarray  # int32 string id of `Input Dims` JSON text, -1 if absent
    input_type_id: np.ndarray  # int32 string id of `Input type` JSON text (the inputs' dtypes), -1 if absent
    stack_id: np.ndarray  # int32 string id of `Call stack` JSON text (Kineto 2021), -1 if absent
    kernels: KernelColumns
    memory: MemoryColumns
    flows: FlowColumns
    pids: list[object]
    threads: list[tuple[object, object]]
    process_names: dict[object, str] = field(default_factory=dict)
    thread_names: dict[tuple[object, object], str] = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ts_us)

    @property
    def end_us(self) -> np.ndarray:
        return self.ts_us + self.dur_us

    def names(self, ids: np.ndarray) -> np.ndarray:
        """Strings for an array of string ids (None for -1), as an object array."""
        table = self.__dict__.get("_strings_array")
        if table is None or len(table) != len(self.strings):
            # Strings never change after decoding: build the lookup array once.
            table = self.__dict__["_strings_array"] = np.asarray(self.strings, dtype=object)
        out = np.empty(len(ids), dtype=object)
        ok = ids >= 0
        out[ok] = table[ids[ok]]
        out[~ok] = None
        return out
