"""CUDA memory snapshots (`torch.cuda.memory._dump_snapshot`) read safely.

A snapshot is a pickle of builtin types only: a dict with `segments` (each
with its `blocks`) and `device_traces` (per device, the allocator's history:
`alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free`,
... with `addr`, `size`, `time_us`, `frames`), `external_annotations`
(`ProfilerStep#N` marks) and `allocator_settings`. A pickle can run code:
the unpickler here refuses every global (these files need none), so a
pickle naming `os.system` or anything else is refused before anything runs.
Reading is bounded like the trace decoder: the file's size
(`TB_PIPELINE_MAX_SNAPSHOT_BYTES`), the number of entries walked and the
time spent (`TB_PIPELINE_SNAPSHOT_TIME_LIMIT_S`); a file over a bound, not a
snapshot, or refused is a `SnapshotError` with a clear message for that file.
"""
from __future__ import annotations

import io
import os
import pickle
import time
from dataclasses import dataclass, field

import numpy as np

ENV_MAX_BYTES = "TB_PIPELINE_MAX_SNAPSHOT_BYTES"
ENV_TIME_LIMIT = "TB_PIPELINE_SNAPSHOT_TIME_LIMIT_S"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
DEFAULT_TIME_LIMIT_S = 60.0
MAX_ENTRIES = 20_000_000  # segments, blocks, actions and frames walked, all together
MAX_FRAMES_PER_STACK = 256

ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "snapshot", "oom")
ACTION_CODE = {a: i for i, a in enumerate(ACTIONS)}
OTHER_ACTION = len(ACTIONS)


class SnapshotError(ValueError):
    """A file that is no readable snapshot; the message says why, for that file."""


class _NoGlobals(pickle.Unpickler):
    """Refuses every global: no class, function or module is ever looked up."""

    def find_class(self, module, name):  # noqa: D401 - pickle's hook
        raise SnapshotError(f"refused: the pickle asks for the global {module}.{name}; "
                            "a memory snapshot needs none, so nothing in it was run")

    def persistent_load(self, pid):
        raise SnapshotError("refused: the pickle asks for a persistent object; a memory snapshot has none")


Frame = tuple  # (function name, file name, line)


@dataclass
class DeviceHistory:
    """One device's allocator history, as columns (one row an action)."""

    device: int
    action: np.ndarray   # int8 codes of ACTIONS
    addr: np.ndarray     # int64
    size: np.ndarray     # int64
    time_us: np.ndarray  # float64 (µs since the epoch)
    stack: np.ndarray    # int32 index into Snapshot.stacks (-1: none)


@dataclass
class Segment:
    device: int
    address: int
    total_size: int
    allocated_size: int
    active_size: int
    stream: int
    segment_type: str
    # (address, size, state, stack index) of its blocks
    blocks: list[tuple[int, int, str, int]]


@dataclass
class Snapshot:
    path: str
    segments: list[Segment]
    histories: list[DeviceHistory]
    # Interned stacks: each a tuple of frames, innermost first.
    stacks: list[tuple[Frame, ...]]
    # (name, stage, time_us) of the annotations (`ProfilerStep#N` START / END)
    annotations: list[tuple[str, str, float]] = field(default_factory=list)
    allocator_settings: dict = field(default_factory=dict)


def _limit(env: str, default: float) -> float:
    try:
        return float(os.environ.get(env, default))
    except ValueError:
        return default


def looks_like_snapshot(value) -> bool:
    return isinstance(value, dict) and "segments" in value and "device_traces" in value


class _Budget:
    def __init__(self, time_limit_s: float):
        self.left = MAX_ENTRIES
        self.deadline = time.monotonic() + time_limit_s

    def spend(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise SnapshotError(f"more than {MAX_ENTRIES:,} entries: too large to read")
        if self.left % 4096 == 0 and time.monotonic() > self.deadline:
            raise SnapshotError(f"reading took longer than {ENV_TIME_LIMIT}")


def unpickle(data: bytes):
    """The pickle's value, with every global refused."""
    try:
        return _NoGlobals(io.BytesIO(data)).load()
    except SnapshotError:
        raise
    except Exception as exc:  # noqa: BLE001 - any damage is this file's message
        raise SnapshotError(f"not a readable pickle: {type(exc).__name__}: {exc}") from None


def read_snapshot(path: str, data: bytes | None = None) -> Snapshot:
    """The snapshot at `path` (or in `data`); SnapshotError when it is none."""
    max_bytes = int(_limit(ENV_MAX_BYTES, DEFAULT_MAX_BYTES))
    if data is None:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise SnapshotError(f"{size:,} bytes is over {ENV_MAX_BYTES} ({max_bytes:,})")
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise SnapshotError(f"over {ENV_MAX_BYTES} ({max_bytes:,} bytes)")
    value = unpickle(data)
    if not looks_like_snapshot(value):
        raise SnapshotError("a pickle, but no CUDA memory snapshot (no `segments` and `device_traces`)")
    return _shape(path, value, _Budget(_limit(ENV_TIME_LIMIT, DEFAULT_TIME_LIMIT_S)))


def _int(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SnapshotError(f"{what} is {type(v).__name__}, not an integer")
    return v


def _shape(path: str, raw: dict, budget: _Budget) -> Snapshot:
    stacks: list[tuple[Frame, ...]] = []
    index: dict[tuple, int] = {}

    def stack_of(frames) -> int:
        if not isinstance(frames, list) or not frames:
            return -1
        budget.spend(min(len(frames), MAX_FRAMES_PER_STACK))
        key = tuple((str(f.get("name", "")), str(f.get("filename", "")), int(f.get("line", 0) or 0))
                    for f in frames[:MAX_FRAMES_PER_STACK] if isinstance(f, dict))
        i = index.get(key)
        if i is None:
            i = index[key] = len(stacks)
            stacks.append(key)
        return i

    segments_raw, traces_raw = raw["segments"], raw["device_traces"]
    if not isinstance(segments_raw, list) or not isinstance(traces_raw, list):
        raise SnapshotError("`segments` and `device_traces` must be lists")
    segments = []
    for s in segments_raw:
        budget.spend()
        if not isinstance(s, dict):
            raise SnapshotError("a segment is not a dict")
        blocks = []
        for b in s.get("blocks") or []:
            budget.spend()
            if not isinstance(b, dict):
                raise SnapshotError("a block is not a dict")
            blocks.append((_int(b.get("address", 0), "a block's address"), _int(b.get("size", 0), "a block's size"),
                           str(b.get("state", "")), stack_of(b.get("frames"))))
        segments.append(Segment(
            device=_int(s.get("device", 0), "a segment's device"),
            address=_int(s.get("address", 0), "a segment's address"),
            total_size=_int(s.get("total_size", 0), "a segment's total_size"),
            allocated_size=_int(s.get("allocated_size", 0), "a segment's allocated_size"),
            active_size=_int(s.get("active_size", 0), "a segment's active_size"),
            stream=_int(s.get("stream", 0), "a segment's stream"),
            segment_type=str(s.get("segment_type", "")), blocks=blocks))
    histories = []
    for device, trace in enumerate(traces_raw):
        if not isinstance(trace, list):
            raise SnapshotError("a device's trace is not a list")
        n = len(trace)
        action = np.empty(n, np.int8)
        addr, size = np.empty(n, np.int64), np.empty(n, np.int64)
        t_us, stack = np.empty(n, np.float64), np.empty(n, np.int32)
        for i, e in enumerate(trace):
            budget.spend()
            if not isinstance(e, dict):
                raise SnapshotError("an action is not a dict")
            action[i] = ACTION_CODE.get(e.get("action"), OTHER_ACTION)
            addr[i] = _int(e.get("addr", 0), "an action's addr")
            size[i] = _int(e.get("size", 0), "an action's size")
            t = e.get("time_us", 0)
            t_us[i] = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else np.nan
            stack[i] = stack_of(e.get("frames"))
        histories.append(DeviceHistory(device, action, addr, size, t_us, stack))
    annotations = []
    for a in raw.get("external_annotations") or []:
        budget.spend()
        if isinstance(a, dict) and isinstance(a.get("time_us"), (int, float)):
            annotations.append((str(a.get("name", "")), str(a.get("stage", "")), float(a["time_us"])))
    settings = raw.get("allocator_settings")
    return Snapshot(path, segments, histories, stacks, annotations, settings if isinstance(settings, dict) else {})
