"""One run's CUDA memory snapshot: the history replayed, the peak and what was live at it.

Per device with a history (readers/memory_snapshot.py):

- **allocated** bytes: +size at each `alloc`, -size at each `free_completed`
  (a block stays allocated until its free completes on its streams), from
  the level before the history began: what the snapshot's blocks hold at
  the end (`active_allocated` and `active_pending_free`) less the history's
  allocations plus its completed frees;
- **active** bytes: the same with `free_requested` (what tensors still hold);
- **reserved** bytes: the segments' sizes at the end less the history's
  `segment_alloc` / `segment_map` plus its `segment_free` / `segment_unmap`;
- the peak (the highest allocated level) and the blocks live at it, replayed
  by address; a block freed in the history with no allocation before is one
  allocated before the history began, as is a block of the end never
  allocated in it. Each live block has its user's frame, module and
  category (analysis/memory/snapshot_frames.py);
- fragmentation: reserved but not allocated, at the peak and at the end;
  the largest segments; each `ProfilerStep#N`'s peak.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...readers.memory_snapshot import ACTION_CODE, DeviceHistory, Snapshot
from .snapshot_frames import module_path, optimizer_state, phase, user_frame

BEFORE_HISTORY = "allocated before the history"
CATEGORIES = (BEFORE_HISTORY + " (parameters, buffers)", "optimizer state", "gradients", "activations",
              "temporary", "other")
MAX_SEGMENTS = 10
MAX_ROWS = 100

_ALLOC, _FREE_REQ, _FREE_DONE = ACTION_CODE["alloc"], ACTION_CODE["free_requested"], ACTION_CODE["free_completed"]
_SEG_UP = (ACTION_CODE["segment_alloc"], ACTION_CODE["segment_map"])
_SEG_DOWN = (ACTION_CODE["segment_free"], ACTION_CODE["segment_unmap"])


@dataclass
class LiveRow:
    key: str
    bytes: int
    blocks: int
    detail: str = ""  # the row's largest block's user frame (or category)


@dataclass
class DeviceSnapshot:
    device: str
    time_us: np.ndarray
    allocated_bytes: np.ndarray
    active_bytes: np.ndarray
    reserved_bytes: np.ndarray
    start_allocated_bytes: int
    start_reserved_bytes: int
    peak_allocated_bytes: int
    peak_time_us: float | None
    peak_step: str | None
    reserved_at_peak_bytes: int
    end_allocated_bytes: int
    end_reserved_bytes: int
    peak_reserved_bytes: int
    by_category: list[LiveRow]
    by_frame: list[LiveRow]
    by_module: list[LiveRow]
    largest_segments: list[dict]
    step_peaks: list[dict]
    # (name, time_us) of each ProfilerStep#N start.
    steps: list[tuple[str, float]] = field(default_factory=list)

    @property
    def fragmentation_at_peak_bytes(self) -> int:
        return self.reserved_at_peak_bytes - self.peak_allocated_bytes

    @property
    def end_fragmentation_bytes(self) -> int:
        return self.end_reserved_bytes - self.end_allocated_bytes


def snapshot_memory(snap: Snapshot) -> list[DeviceSnapshot]:
    """Every device of the snapshot with a history or segments, in device order."""
    devices = sorted({h.device for h in snap.histories if len(h.action)} | {s.device for s in snap.segments})
    by_device = {h.device: h for h in snap.histories}
    steps = sorted((t, name) for name, stage, t in snap.annotations
                   if name.startswith("ProfilerStep#") and stage.upper() == "START")
    return [_device(snap, d, by_device.get(d), [(n, t) for t, n in steps]) for d in devices]


def _device(snap: Snapshot, device: int, h: DeviceHistory | None, steps: list) -> DeviceSnapshot:
    segments = [s for s in snap.segments if s.device == device]
    end_allocated = sum(b[1] for s in segments for b in s.blocks if b[2] in ("active_allocated", "active_pending_free"))
    end_active = sum(b[1] for s in segments for b in s.blocks if b[2] == "active_allocated")
    end_reserved = sum(s.total_size for s in segments)
    if h is None:
        h = DeviceHistory(device, *(np.empty(0, t) for t in (np.int8, np.int64, np.int64, np.float64, np.int32)))
    a, size = h.action, h.size
    d_alloc = np.where(a == _ALLOC, size, 0) - np.where(a == _FREE_DONE, size, 0)
    d_active = np.where(a == _ALLOC, size, 0) - np.where(a == _FREE_REQ, size, 0)
    d_res = np.where(np.isin(a, _SEG_UP), size, 0) - np.where(np.isin(a, _SEG_DOWN), size, 0)
    start_alloc = int(end_allocated - d_alloc.sum())
    start_active = int(end_active - d_active.sum())
    start_res = int(end_reserved - d_res.sum())
    allocated = start_alloc + np.cumsum(d_alloc)
    active = start_active + np.cumsum(d_active)
    reserved = start_res + np.cumsum(d_res)
    if len(allocated) and allocated.max() > start_alloc:
        i = int(np.argmax(allocated))
        peak, peak_t, res_at_peak = int(allocated[i]), float(h.time_us[i]), int(reserved[i])
    else:
        i, peak, peak_t, res_at_peak = -1, start_alloc, None, start_res
    rows = _live_at(snap, h, segments, i)
    return DeviceSnapshot(
        device=f"GPU {device}", time_us=h.time_us, allocated_bytes=allocated, active_bytes=active,
        reserved_bytes=reserved, start_allocated_bytes=start_alloc, start_reserved_bytes=start_res,
        peak_allocated_bytes=peak, peak_time_us=peak_t, peak_step=_step_of(steps, peak_t),
        reserved_at_peak_bytes=res_at_peak, end_allocated_bytes=int(end_allocated), end_reserved_bytes=int(end_reserved),
        peak_reserved_bytes=int(max(reserved.max() if len(reserved) else start_res, start_res)),
        by_category=rows[0], by_frame=rows[1], by_module=rows[2],
        largest_segments=_largest_segments(segments), step_peaks=_step_peaks(steps, h.time_us, allocated),
        steps=steps)


def _step_of(steps: list, t: float | None) -> str | None:
    if t is None:
        return None
    name = None
    for n, start in steps:
        if start <= t:
            name = n
    return name


def _live_at(snap: Snapshot, h: DeviceHistory, segments: list, peak: int) -> tuple[list, list, list]:
    """Rows by category, user frame and module of the blocks live just after action `peak`."""
    live: dict[int, tuple[int, int]] = {}  # addr -> (size, stack) of the blocks allocated in the history
    freed_by: dict[int, int] = {}  # history index of an alloc -> stack of its free
    before: dict[int, int] = {}  # addr -> size: allocated before the history, live at the peak
    open_at: dict[int, int] = {}  # addr -> index of its open alloc
    a, addr, size, stack = h.action.tolist(), h.addr.tolist(), h.size.tolist(), h.stack.tolist()
    allocs_at_peak: dict[int, int] = {}
    for i in range(len(a)):
        act = a[i]
        if act == _ALLOC:
            open_at[addr[i]] = i
            if i <= peak:
                live[addr[i]] = (size[i], stack[i])
        elif act == _FREE_REQ:
            j = open_at.get(addr[i])
            if j is not None:
                freed_by[j] = stack[i]
        elif act == _FREE_DONE:
            j = open_at.pop(addr[i], None)
            if i <= peak:
                live.pop(addr[i], None)
            if j is None and i > peak:
                before[addr[i]] = size[i]  # freed after the peak, never allocated in the history
        if i == peak:
            allocs_at_peak = {ad: open_at[ad] for ad in live if ad in open_at}
    end_blocks = {b[0]: b for s in segments for b in s.blocks if b[2] in ("active_allocated", "active_pending_free")}
    allocated_in_history = set(addr[i] for i in range(len(a)) if a[i] == _ALLOC)
    for ad, b in end_blocks.items():
        if ad not in allocated_in_history:
            before[ad] = b[1]
    if peak < 0:
        live, allocs_at_peak = {}, {}
    still_open = set(open_at.values())
    entries = []  # (bytes, category, frame, module)
    pre = sum(before.values())
    if pre:
        entries.append((pre, CATEGORIES[0], "(before the history: no frames)", "(before the history)", len(before)))
    for ad, (nbytes, st) in live.items():
        frames = snap.stacks[st] if st >= 0 else ()
        j = allocs_at_peak.get(ad)
        free_stack = freed_by.get(j, -2) if j is not None else -2
        free_frames = snap.stacks[free_stack] if free_stack >= 0 else () if free_stack == -1 else None
        never_freed = j is not None and j in still_open
        entries.append((nbytes, _category(frames, free_frames, never_freed), user_frame(frames),
                        _module(frames), 1))
    return (_rows(entries, 1, 2), _rows(entries, 2, 1), _rows(entries, 3, 2))


def _module(frames: tuple) -> str:
    path = module_path(frames)
    p = phase(frames)
    return f"{path} ({p})" if path and p else path or (f"({p})" if p else "(no module)")


def _category(frames: tuple, free_frames: tuple | None, never_freed: bool) -> str:
    """`free_frames`: the free's stack (() when it has none: autograd's backward
    thread records no Python frames), None when the block is not freed in the history."""
    p = phase(frames)
    freed_in = None if free_frames is None else phase(free_frames) if free_frames else "backward thread"
    if p == "optimizer":
        return "optimizer state" if optimizer_state(frames) else "temporary"
    if p == "backward" or not frames:
        # no frames: allocated on autograd's backward thread (or in C++)
        return "gradients" if never_freed or freed_in == "optimizer" else "temporary"
    if freed_in in ("backward", "backward thread"):
        return "activations"  # allocated before the backward, freed by it: saved for it
    return "temporary" if p == "forward" or freed_in is not None else "other"


def _rows(entries: list, key: int, detail: int) -> list[LiveRow]:
    out: dict[str, list] = {}
    for e in sorted(entries, key=lambda e: -e[0]):
        g = out.get(e[key])
        if g is None:
            out[e[key]] = [e[0], e[4], e[detail]]
        else:
            g[0] += e[0]
            g[1] += e[4]
    rows = [LiveRow(k, int(v[0]), int(v[1]), str(v[2])) for k, v in out.items()]
    rows.sort(key=lambda r: -r.bytes)
    return rows[:MAX_ROWS]


def _largest_segments(segments: list) -> list[dict]:
    top = sorted(segments, key=lambda s: -s.total_size)[:MAX_SEGMENTS]
    return [{"address": s.address, "total_bytes": s.total_size, "allocated_bytes": s.allocated_size,
             "active_bytes": s.active_size, "stream": s.stream, "segment_type": s.segment_type,
             "blocks": len(s.blocks)} for s in top]


def _step_peaks(steps: list, t: np.ndarray, allocated: np.ndarray) -> list[dict]:
    out = []
    for k, (name, start) in enumerate(steps):
        end = steps[k + 1][1] if k + 1 < len(steps) else np.inf
        sel = (t >= start) & (t < end)
        if sel.any():
            out.append({"step": name, "peak_allocated_bytes": int(allocated[sel].max())})
    return out


@dataclass(frozen=True)
class RunSnapshot:
    """A run's snapshot as the comparison reads it: the file its numbers are
    of (None: none), its devices, and a message per file refused or unreadable."""

    file: str | None = None
    devices: tuple = ()
    messages: tuple = ()
    # Identity of the files read ((name, size, mtime), ...): the pair's memo key.
    key: tuple = ()


NO_SNAPSHOT = RunSnapshot()
