"""One run's events in a time window, as a timeline draws them: lanes, depth,
and a level of detail that merges what is too small to draw.

Drawable events: operators (`cpu_op`), annotations (`user_annotation`),
Python calls (`nn.Module: ...` calls are modules, the rest python) on every
host thread, and kernels / memcpy / memset on every device stream. Runtime
calls (`cudaLaunchKernel`) and GPU annotations are not drawn.

A window [start, end) holds the host events *starting* inside it plus the
events enclosing them (their ancestors on the thread, so a piece is drawn
under its step and parent modules), and the device activity launched from
inside it (its owning host event starts inside, as a piece's `device_us`
counts it, analysis/pieces.py): a kernel running after the host window
ended belongs to the piece that launched it.

Level of detail: with `width_px` pixels for the window, an event shorter
than one pixel cannot be drawn; such events are merged, per lane and depth,
into aggregates (`Merged`) that keep their count and summed time, so nothing
disappears silently. Past `max_events` drawable events the threshold rises
until the longest `max_events` remain.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace.link import LinkedTrace
from ..trace.names import is_module, name_mask
from ..trace.nesting import nest
from ..trace.table import Kind, Phase

KINDS = ("operator", "kernel", "memcpy", "memset", "annotation", "module", "python")
_K = {k: i for i, k in enumerate(KINDS)}
_DEVICE = {Kind.KERNEL: _K["kernel"], Kind.MEMCPY: _K["memcpy"], Kind.MEMSET: _K["memset"]}
_HOST = {Kind.CPU_OP: _K["operator"], Kind.USER_ANNOTATION: _K["annotation"], Kind.PYTHON_FUNCTION: _K["python"]}
# Ancestor chains are walked one level per pass; traces nest far less deep.
_MAX_ANCESTOR_LEVELS = 512


@dataclass
class TimelineIndex:
    """Drawable rows of one trace sorted for window queries (built once per trace)."""

    kind: np.ndarray  # int8 per EventTable row: index into KINDS, -1 not drawable
    host_rows: np.ndarray  # drawable host rows by start
    host_ts: np.ndarray
    dev_rows: np.ndarray  # device activity by the start of the host event it is charged to
    dev_key_ts: np.ndarray
    dev_depth: np.ndarray  # int32 per EventTable row (device rows): nesting on its stream


def timeline_index(linked: LinkedTrace) -> TimelineIndex:
    t = linked.table
    complete = t.phase == Phase.COMPLETE
    kind = np.full(len(t), -1, dtype=np.int8)
    for k, code in (*_HOST.items(), *_DEVICE.items()):
        kind[complete & (t.kind == k)] = code
    py = np.flatnonzero(kind == _K["python"])
    kind[py[name_mask(t, py, is_module)]] = _K["module"]
    host = np.flatnonzero((kind >= 0) & linked.is_host)
    host = host[np.argsort(t.ts_us[host], kind="stable")]
    dev = np.flatnonzero(np.isin(kind, list(_DEVICE.values())))
    owner = linked.owner[dev]
    # Unlaunched device activity (no runtime call found) is placed by its own start.
    key = np.where(owner >= 0, t.ts_us[np.maximum(owner, 0)], t.ts_us[dev])
    order = np.argsort(key, kind="stable")
    dev_depth = np.zeros(len(t), dtype=np.int32)
    dev_depth[dev] = nest(t.thread_id, t.ts_us, t.dur_us, dev)[1]
    return TimelineIndex(kind=kind, host_rows=host, host_ts=t.ts_us[host], dev_rows=dev[order],
                         dev_key_ts=key[order], dev_depth=dev_depth)


def window_rows(index: TimelineIndex, linked: LinkedTrace, start_us: float, end_us: float) -> np.ndarray:
    """Rows drawn for [start_us, end_us): host events starting inside, their
    drawable ancestors, and device activity launched from inside (three
    disjoint sets, each row once)."""
    ts = linked.table.ts_us
    lo, hi = np.searchsorted(index.host_ts, [start_us, end_us], side="left")
    inside = index.host_rows[lo:hi]
    found = [inside]
    seen: set[int] = set()
    frontier = linked.parent[inside]
    for _ in range(_MAX_ANCESTOR_LEVELS):
        # Parents starting inside the window are in `inside` already (and so are theirs).
        frontier = frontier[frontier >= 0]
        frontier = frontier[ts[frontier] < start_us]
        fresh = [r for r in set(frontier.tolist()) if r not in seen]
        if not fresh:
            break
        seen.update(fresh)
        frontier = np.array(fresh, dtype=np.int64)
        # Enclosing Python frames (the program's whole stack above the loop) are not drawn, nor an
        # ancestor that ended before the window began: the step before, reached through the loader's
        # `next()` that it opened and the next step closed, encloses nothing drawn here.
        encloses = ts[frontier] + linked.table.dur_us[frontier] > start_us
        found.append(frontier[(index.kind[frontier] >= 0) & (index.kind[frontier] != _K["python"]) & encloses])
        frontier = linked.parent[frontier]
    dlo, dhi = np.searchsorted(index.dev_key_ts, [start_us, end_us], side="left")
    found.append(index.dev_rows[dlo:dhi])
    return np.concatenate(found)


@dataclass
class Lanes:
    """Each drawn thread or stream once, in display order."""

    label: list[str]
    device: list[bool]
    of_row: np.ndarray  # lane index of each window row


def lanes(linked: LinkedTrace, rows: np.ndarray, first_threads: np.ndarray, devices_first: bool = False) -> Lanes:
    """Host threads first (`first_threads`: the step and autograd threads, in
    that order, then the others by id), then device streams by device and
    stream id; `devices_first`: the streams first (a device-bound run's
    step is the device's work)."""
    t = linked.table
    threads = t.thread_id[rows]
    is_dev = ~linked.is_host[rows]
    ids, inverse = np.unique(threads, return_inverse=True)
    first = {int(th): i for i, th in enumerate(first_threads.tolist())}
    dev_threads = set(threads[is_dev].tolist())

    def order(th: int):
        pid, tid = t.threads[th]
        return ((th in dev_threads) != devices_first, first.get(th, len(first)), _sortable(pid), _sortable(tid))

    ordered = sorted(ids.tolist(), key=order)
    lane_of_id = np.array([ordered.index(th) for th in ids.tolist()], dtype=np.int64)
    of_row = lane_of_id[inverse] if len(rows) else np.zeros(0, np.int64)
    return Lanes(label=[_lane_label(t, th, th in dev_threads) for th in ordered],
                 device=[th in dev_threads for th in ordered], of_row=of_row)


def _sortable(v) -> tuple:
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def _lane_label(t, thread: int, device: bool) -> str:
    pid, tid = t.threads[thread]
    name = t.thread_names.get((pid, tid))
    if device:
        base = f"GPU {pid} · stream {tid}"
        return base if not name or name.strip() == f"stream {tid}" else f"{base} ({name})"
    process = t.process_names.get(pid)
    # Kineto names threads "thread <tid> (<process>)": say the id once.
    base = f"thread {tid}" + (f" · {name}" if name and str(tid) not in name else "")
    return f"{process} {pid} · {base}" if process else f"pid {pid} · {base}"


def first_named(t, rows: np.ndarray, name: str, from_us: float) -> np.ndarray:
    """A mask over `rows`: the first event named `name` starting at or after `from_us` (none if absent)."""
    out = np.zeros(len(rows), bool)
    try:
        sid = t.strings.index(name) if name else -1
    except ValueError:
        return out
    hits = np.flatnonzero((t.name_id[rows] == sid) & (t.ts_us[rows] >= from_us))
    if len(hits):
        out[hits[np.argmin(t.ts_us[rows][hits])]] = True
    return out


def depths(linked: LinkedTrace, index: TimelineIndex, rows: np.ndarray, lane_of_row: np.ndarray) -> np.ndarray:
    """Row of each event inside its lane: its nesting depth (host: on the
    thread; device: overlap on the stream), counted over the depths drawn in
    the lane, the outermost at 0; an event that would overlap another on its
    row moves down (`_apart`)."""
    d = np.where(linked.is_host[rows], linked.depth[rows], index.dev_depth[rows]).astype(np.int64)
    if len(rows) == 0:
        return d
    t = linked.table
    # Dense per lane: levels nothing drawn sits at (runtime calls, undrawn frames, rows emptied by `_apart`)
    # take no row.
    return _dense(lane_of_row, _apart(lane_of_row, _dense(lane_of_row, d), t.ts_us[rows],
                                      t.ts_us[rows] + t.dur_us[rows]))


def _dense(lane: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Each lane's depths renumbered 0, 1, 2 ... in order, the levels no event sits at left out."""
    pair = lane * (int(depth.max()) + 1) + depth
    uniq, inverse = np.unique(pair, return_inverse=True)
    lane_of_uniq = uniq // (int(depth.max()) + 1)
    first = np.searchsorted(lane_of_uniq, lane_of_uniq, side="left")
    return (np.arange(len(uniq)) - first)[inverse]


def _apart(lane: np.ndarray, depth: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`depth` with no two events of a lane overlapping on one row. The
    trace's nesting puts an event that overlaps its parent's end (a
    ProfilerStep opened inside the loader's `next()` and closed after it) at
    the depth of events it overlaps, their bars and labels drawn over each
    other: in a lane where that happens, each event (by start, longest
    first) takes the first row at or below its depth that is free when it
    starts, and below the row of the event enclosing it that moved."""
    key = lane * (int(depth.max()) + 1) + depth
    order = np.lexsort((-(end - start), start, key))
    ks, ss, es = key[order], start[order], end[order]
    # Each event against the latest end before it on its row (a running maximum, from each row's first event).
    prev_end = np.empty(len(ks))
    for group in np.split(np.arange(len(ks)), np.flatnonzero(ks[1:] != ks[:-1]) + 1):
        prev_end[group] = np.r_[-np.inf, np.maximum.accumulate(es[group])[:-1]]
    clash = ss < prev_end - 1e-6
    if not clash.any():
        return depth
    out = depth.copy()
    for ln in np.unique(lane[order][clash]):
        idx = np.flatnonzero(lane == ln)
        idx = idx[np.lexsort((-(end[idx] - start[idx]), start[idx]))]
        row_end: list[float] = []  # per row: the end of the last event placed there
        placed: list[tuple[float, int]] = []  # (end, row) of the events enclosing the current one
        for i in idx.tolist():
            while placed and placed[-1][0] <= start[i] + 1e-6:
                placed.pop()
            r = max(int(depth[i]), placed[-1][1] + 1 if placed else 0)
            while r < len(row_end) and row_end[r] > start[i] + 1e-6:
                r += 1
            if r >= len(row_end):
                row_end += [-np.inf] * (r + 1 - len(row_end))
            row_end[r] = end[i]
            out[i] = r
            placed.append((end[i], r))
    return out


@dataclass
class Detail:
    """What a window of `width_px` pixels draws: `keep` rows (a mask over
    the window's events) and the aggregates of the rest."""

    keep: np.ndarray  # bool
    min_draw_us: float  # events shorter than this were merged
    merged_lane: np.ndarray
    merged_depth: np.ndarray
    merged_ts_us: np.ndarray
    merged_dur_us: np.ndarray  # from the first merged event's start to the last one's end
    merged_count: np.ndarray
    merged_us: np.ndarray  # summed duration of the merged events


def level_of_detail(ts_us: np.ndarray, dur_us: np.ndarray, lane: np.ndarray, depth: np.ndarray,
                    span_us: float, width_px: int, max_events: int, force: np.ndarray | None = None) -> Detail:
    """Keep events at least one pixel long (at most the `max_events`
    longest) and those `force` marks; merge the others, per lane and depth,
    into runs whose gaps are under the threshold. `width_px` 0: keep
    everything."""
    n = len(ts_us)
    if width_px <= 0:
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
        return Detail(np.ones(n, bool), 0.0, empty_i, empty_i, empty_f, empty_f, empty_i, empty_f)
    threshold = max(span_us, 0.0) / width_px
    keep = dur_us >= threshold
    if keep.sum() > max_events:
        longest = np.argpartition(-dur_us, max_events - 1)[:max_events]
        keep = np.zeros(n, bool)
        keep[longest] = True
        threshold = max(threshold, float(dur_us[longest].min()))
    if force is not None:
        keep |= force
    small = np.flatnonzero(~keep)
    # By (lane, depth, start): a stable integer sort after a sort by start (cheaper than lexsort).
    small = small[np.argsort(ts_us[small], kind="stable")]
    row_key = lane[small] * (int(depth.max()) + 1 if n else 1) + depth[small]
    order = small[np.argsort(row_key, kind="stable")]
    s, e = ts_us[order], ts_us[order] + dur_us[order]
    new = np.ones(len(order), bool)
    if len(order) > 1:
        new[1:] = (lane[order][1:] != lane[order][:-1]) | (depth[order][1:] != depth[order][:-1]) | (
            s[1:] - e[:-1] > threshold)
    starts = np.flatnonzero(new)
    group_end = np.maximum.reduceat(e, starts) if len(order) else np.zeros(0)
    return Detail(
        keep=keep, min_draw_us=threshold,
        merged_lane=lane[order][starts], merged_depth=depth[order][starts], merged_ts_us=s[starts],
        merged_dur_us=group_end - s[starts], merged_count=np.diff(np.append(starts, len(order))),
        merged_us=np.add.reduceat(dur_us[order], starts) if len(order) else np.zeros(0),
    )
