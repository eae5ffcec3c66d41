"""Links between events: nesting, launch -> device activity, op -> launch,
forward -> backward, and the device time each host event is responsible for.

Computed once per trace (`link(table)`), then shared by every analysis.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .fold import fold_same_name
from .names import is_step, name_mask, step_number
from .forest import nearest_marked_ancestor
from .nesting import nest
from .table import DEVICE_ACTIVITY_KINDS, DEVICE_KINDS, EventTable, FlowKind, Kind, Phase

try:
    from ._nest import add_up as _add_up
except ImportError:  # built without a C compiler (setup.py: optional)
    _add_up = None

HOST_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, Kind.RUNTIME, Kind.DRIVER, Kind.OTHER)
# From this many events the links that do not depend on the nesting (Python
# parents, forward -> backward flows) are found on a thread beside it: their
# sorts and hash lookups run without the GIL most of the time, 0.15 s of a
# 1 GB trace's 0.6 s on a second core. Below, a thread costs more than it saves.
SIDE_THREAD_MIN_EVENTS = 200_000


@dataclass
class Steps:
    name: list[str]
    number: np.ndarray  # int64, N of ProfilerStep#N
    row: np.ndarray  # int64 row of the annotation, -1 for the synthetic "all" step
    start_us: np.ndarray  # float64, absolute: the annotation's start, or the previous step's end if later
    host_end_us: np.ndarray  # the annotation's end
    end_us: np.ndarray  # host end or end of the last device activity launched in the step


@dataclass
class LinkedTrace:
    table: EventTable
    is_host: np.ndarray  # bool: complete host events taking part in nesting
    parent: np.ndarray  # int64 enclosing host event on the same thread, -1
    depth: np.ndarray  # int32
    launch_of: np.ndarray  # int64: for device activity, the runtime row that launched it
    # bool: device activity launched before the profiled window (`launched_before_window`): no step's work
    before_window: np.ndarray
    op_of_launch: np.ndarray  # int64: for runtime rows, the cpu_op that issued it
    owner: np.ndarray  # int64: for device activity, the host row its time is charged to
    host_self_us: np.ndarray  # float64, host rows: dur minus direct host children
    device_self_us: np.ndarray  # float64, host rows: device activity charged to it
    device_total_us: np.ndarray  # float64, host rows: self plus all descendants
    backward_of: np.ndarray  # int64: for a backward entry row, its forward op (fwdbwd), -1
    python_parent: np.ndarray  # int64: row named by `Python parent id` (trusted links only), -1
    steps: Steps
    has_device: bool
    # Operators torch's key_averages() folds into a same-name parent (see
    # fold.py), sorted, and the ancestor each one's numbers go to.
    folded_rows: np.ndarray
    folded_into: np.ndarray


def _lookup(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """values[j] where keys[j] == query, -1 when absent (last duplicate wins)."""
    out = np.full(len(queries), -1, dtype=np.int64)
    if len(keys) == 0 or len(queries) == 0:
        return out
    s = pd.Series(values, index=keys)
    s = s[~s.index.duplicated(keep="last")]
    pos = s.index.get_indexer(queries)
    ok = pos >= 0
    out[ok] = s.to_numpy()[pos[ok]]
    return out


def _bind_flows(table: EventTable, host_rows: np.ndarray, kind: FlowKind, start: bool) -> tuple[np.ndarray, np.ndarray]:
    """(flow_id, row) for flow endpoints bound to the host event starting at
    the same instant on the same thread (the outermost one if several)."""
    f = table.flows
    sel = np.flatnonzero((f.kind == kind) & (f.is_start == start))
    if len(sel) == 0 or len(host_rows) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # Only events starting at some flow's instant can bind; prefilter cheaply.
    # (A hash lookup: np.isin sorts both float arrays, a tenth of a second on a big trace.)
    host_rows = host_rows[pd.Index(table.ts_us[host_rows]).isin(f.ts_us[sel])]
    events = pd.DataFrame({
        "thread": table.thread_id[host_rows], "ts": table.ts_us[host_rows],
        "dur": table.dur_us[host_rows], "row": host_rows,
    }).sort_values("dur", ascending=False).drop_duplicates(["thread", "ts"])
    flows = pd.DataFrame({"thread": f.thread_id[sel], "ts": f.ts_us[sel], "flow_id": f.flow_id[sel]})
    merged = flows.merge(events, on=["thread", "ts"], how="inner")
    return merged["flow_id"].to_numpy(np.int64), merged["row"].to_numpy(np.int64)


def link(table: EventTable) -> LinkedTrace:
    complete = table.phase == Phase.COMPLETE
    host_rows = np.flatnonzero(complete & np.isin(table.kind, HOST_KINDS))
    if len(table) < SIDE_THREAD_MIN_EVENTS:
        return _link(table, complete, host_rows, lambda: _unnested_links(table, host_rows))
    with ThreadPoolExecutor(1, thread_name_prefix="link") as side:
        return _link(table, complete, host_rows, side.submit(_unnested_links, table, host_rows).result)


def _unnested_links(table: EventTable, host_rows: np.ndarray) -> tuple:
    """(Python parents, their warnings, forward flow starts, backward flow
    ends): what needs no nesting. Warnings are returned, not appended, so
    that their order never depends on which thread finished first."""
    warnings: list[str] = []
    return (python_parents(table, warnings), warnings, _bind_flows(table, host_rows, FlowKind.FWD_BWD, True),
            _bind_flows(table, host_rows, FlowKind.FWD_BWD, False))


def _link(table: EventTable, complete: np.ndarray, host_rows: np.ndarray, unnested) -> LinkedTrace:
    """`unnested()`: `_unnested_links`' result (computed now, or waited for)."""
    n = len(table)
    kind = table.kind
    is_host = np.zeros(n, dtype=bool)
    is_host[host_rows] = True
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int32)
    p, d = nest(table.thread_id, table.ts_us, table.dur_us, host_rows)
    parent[host_rows] = p
    depth[host_rows] = d

    # Host self time: minus the direct children of any host kind.
    dur = np.where(complete, table.dur_us, 0.0)
    child_sum = np.zeros(n)
    kids = host_rows[p >= 0]
    np.add.at(child_sum, parent[kids], dur[kids])
    host_self = np.where(is_host, dur - child_sum, 0.0)

    # Device activity -> launching runtime call (correlation, else ac2g flows).
    runtime_rows = np.flatnonzero(complete & np.isin(kind, (Kind.RUNTIME, Kind.DRIVER)))
    device_rows = np.flatnonzero(complete & np.isin(kind, DEVICE_ACTIVITY_KINDS))
    launch_of = np.full(n, -1, dtype=np.int64)
    rt_corr = table.correlation[runtime_rows]
    ok = rt_corr >= 0
    launch_of[device_rows] = _lookup(rt_corr[ok], runtime_rows[ok], table.correlation[device_rows])
    missing = device_rows[launch_of[device_rows] < 0]
    if len(missing):
        start_ids, start_rows = _bind_flows(table, runtime_rows, FlowKind.LAUNCH, True)
        end_ids, end_rows = _device_flow_ends(table, missing)
        launch = _lookup(start_ids, start_rows, end_ids)
        launch_of[end_rows] = launch

    op_rows = np.flatnonzero(complete & (kind == Kind.CPU_OP))
    op_of_launch = np.full(n, -1, dtype=np.int64)
    op_of_launch[runtime_rows] = _launching_ops(table, parent, op_rows, runtime_rows)

    # Charge device time to the op, else to whatever host event encloses the
    # launch, so module and annotation totals include it either way.
    owner = np.full(n, -1, dtype=np.int64)
    launched = device_rows[launch_of[device_rows] >= 0]
    launch = launch_of[launched]
    who = op_of_launch[launch]
    who = np.where(who >= 0, who, parent[launch])
    who = np.where(who >= 0, who, launch)
    owner[launched] = who
    device_self = np.zeros(n)
    np.add.at(device_self, who, table.dur_us[launched])
    device_total = _propagate_up(device_self, parent, depth, host_rows)

    has_device = bool(np.any(np.isin(kind, DEVICE_KINDS)))
    before_window = np.zeros(n, dtype=bool)
    before_window[device_rows] = launched_before_window(table, launch_of, device_rows)
    steps = _steps(table, launch_of, device_rows, before_window)
    folded_rows, folded_into = fold_same_name(table, parent, host_rows)

    python_parent, python_warnings, (fwd_ids, fwd_rows), (bwd_ids, bwd_rows) = unnested()
    table.warnings.extend(python_warnings)
    backward_of = np.full(n, -1, dtype=np.int64)
    backward_of[bwd_rows] = _lookup(fwd_ids, fwd_rows, bwd_ids)
    return LinkedTrace(
        table=table, is_host=is_host, parent=parent, depth=depth, launch_of=launch_of, before_window=before_window,
        op_of_launch=op_of_launch, owner=owner, host_self_us=host_self, device_self_us=device_self,
        device_total_us=device_total, backward_of=backward_of, python_parent=python_parent,
        steps=steps, has_device=has_device,
        folded_rows=folded_rows, folded_into=folded_into,
    )


def python_parents(table: EventTable, warnings: list[str]) -> np.ndarray:
    """Row of each python event's `Python parent id` (-1 if none or unusable).

    The profiler numbers Python calls in call order, so a parent's id is
    smaller than its child's. A link that does not go down in id (a
    self-reference, a cycle, a duplicated id pointing at a later call) is
    damage: it is dropped and counted in `warnings`, which also guarantees
    that every walk up these links ends.
    """
    step = np.full(len(table), -1, dtype=np.int64)
    py_rows = np.flatnonzero(table.python_id >= 0)
    if not len(py_rows):
        return step
    ids = table.python_id[py_rows]
    parent_ids = table.python_parent_id[py_rows]
    by_id = pd.Series(py_rows, index=ids)
    by_id = by_id[~by_id.index.duplicated(keep="last")]
    pos = by_id.index.get_indexer(parent_ids)
    found = pos >= 0
    going_down = found & (parent_ids < ids)
    step[py_rows[going_down]] = by_id.to_numpy()[pos[going_down]]
    bad = int(np.count_nonzero(found & ~going_down))
    if bad:
        warnings.append(
            f"{bad:,} Python calls name a parent that cannot enclose them "
            "(their own id, a cycle or a later call): those links were ignored"
        )
    return step


def _launching_ops(table: EventTable, parent: np.ndarray, op_rows: np.ndarray, runtime_rows: np.ndarray) -> np.ndarray:
    """The operator that issued each runtime call, or -1.

    The call's External id, when it names an operator enclosing the call on
    its thread, or exactly one operator on another thread (an id naming one
    operator is unambiguous wherever that operator ran; without this the
    launch's device time would reach no operator); else the innermost
    operator enclosing the call.
    """
    by_containment = nearest_marked_ancestor(parent, table.kind == Kind.CPU_OP, parent[runtime_rows])
    op_ext = table.external_id[op_rows]
    has_ext = op_ext >= 0
    by_ext = _lookup(op_ext[has_ext], op_rows[has_ext], table.external_id[runtime_rows])
    valid = by_ext >= 0
    bx = by_ext[valid]
    rt = runtime_rows[valid]
    same_thread = table.thread_id[bx] == table.thread_id[rt]
    encloses = same_thread & (table.ts_us[bx] <= table.ts_us[rt]) & (table.ts_us[bx] + table.dur_us[bx] >= table.ts_us[rt])
    ids, counts = np.unique(op_ext[has_ext], return_counts=True)
    unique = counts[np.searchsorted(ids, table.external_id[bx])] == 1
    take = encloses | (~same_thread & unique)
    chosen = by_containment.copy()
    chosen[np.flatnonzero(valid)[take]] = bx[take]
    return chosen


def _device_flow_ends(table: EventTable, device_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f = table.flows
    sel = np.flatnonzero((f.kind == FlowKind.LAUNCH) & ~f.is_start)
    if len(sel) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    events = pd.DataFrame({"thread": table.thread_id[device_rows], "ts": table.ts_us[device_rows], "row": device_rows})
    flows = pd.DataFrame({"thread": f.thread_id[sel], "ts": f.ts_us[sel], "flow_id": f.flow_id[sel]})
    merged = flows.merge(events.drop_duplicates(["thread", "ts"]), on=["thread", "ts"], how="inner")
    return merged["flow_id"].to_numpy(np.int64), merged["row"].to_numpy(np.int64)


# Levels with fewer rows than this are summed in plain Python, several
# levels in one pass: a NumPy call per level would cost O(depth) calls, and a
# 1,000,000-deep chain (a million events at one instant) has a level per row.
_NARROW_LEVEL = 64


def _propagate_up(values: np.ndarray, parent: np.ndarray, depth: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """values plus the sum over all descendants, deepest level first.

    O(n log n) whatever the depth: one sort by depth, then each level is
    either one `np.add.at` (a wide level; there are at most n / _NARROW_LEVEL)
    or part of a run of narrow levels summed in one Python loop, each row
    once. Both add children in row order, so the sums are the same as one
    `np.add.at` per level would give."""
    total = values.astype(np.float64, copy=True)
    if len(rows) == 0:
        return total
    d = depth[rows]
    # Depths are small: as int16 the stable sort is a radix sort, the same order (0.13 -> 0.04 s over a 1 GB
    # trace's 2.9M host events).
    key = -d.astype(np.int16) if d.max() < np.iinfo(np.int16).max else -d
    order = np.argsort(key, kind="stable")
    sorted_rows = rows[order]
    if _add_up is not None and _add_up(total, np.ascontiguousarray(parent, np.int64),
                                       np.ascontiguousarray(sorted_rows, np.int64)):
        return total  # the same additions in the same order, in one compiled loop
    sorted_d = d[order]
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_d)) + 1, [len(rows)]))
    wide = np.flatnonzero(np.diff(cuts) >= _NARROW_LEVEL)
    done = 0  # sorted_rows[:done] have been added to their parents
    for w in wide.tolist():
        a, b = int(cuts[w]), int(cuts[w + 1])
        if done < a:
            _add_up_in_order(total, parent, sorted_rows[done:a])
        level = sorted_rows[a:b]
        level = level[parent[level] >= 0]
        np.add.at(total, parent[level], total[level])
        done = b
    if done < len(sorted_rows):
        _add_up_in_order(total, parent, sorted_rows[done:])
    return total


def _add_up_in_order(total: np.ndarray, parent: np.ndarray, rows: np.ndarray) -> None:
    """total[parent[r]] += total[r] for each of `rows` in turn (children
    before parents), on Python floats: the same IEEE additions."""
    rows = rows[parent[rows] >= 0]
    if len(rows) == 0:
        return
    ups = parent[rows]
    touched = np.unique(np.concatenate((rows, ups)))
    slot = np.searchsorted(touched, rows).tolist()
    up_slot = np.searchsorted(touched, ups).tolist()
    local = total[touched].tolist()
    for i, j in zip(slot, up_slot):
        local[j] += local[i]
    total[touched] = local


def whole_window(steps: Steps) -> Steps:
    """All steps as one, named "all": to compare with a trace that has no
    step annotations, over the same kind of window."""
    return Steps(
        ["all"], np.zeros(1, np.int64), np.full(1, -1, np.int64),
        np.array([steps.start_us.min()]), np.array([steps.host_end_us.max()]), np.array([steps.end_us.max()]),
    )


def has_step_annotations(steps: Steps) -> bool:
    return bool(len(steps.row) and steps.row[0] >= 0)


def timed_window(table: EventTable) -> tuple[float, float]:
    """First start and last end of the trace's timed events (complete events,
    or any events when there are only instants); (0, 0) for an empty trace."""
    timed = (table.phase == Phase.COMPLETE) & (table.kind != Kind.TRACE_SPAN)
    if not timed.any():
        timed = np.ones(len(table), dtype=bool)
    if not timed.any():
        return 0.0, 0.0
    return float(table.ts_us[timed].min()), float((table.ts_us + table.dur_us)[timed].max())


def launched_before_window(table: EventTable, launch_of: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Which of the device activity `rows` were launched before the profiled
    window: no launch event for them, in a trace whose device work has
    launch events, a correlation id below every recorded launch's, and a
    start before the first launched work's (the host ran ahead of its
    device, and the profiler opened while the device still ran work of
    unprofiled steps). Work with no launch otherwise is only unlinked."""
    launched = launch_of[rows] >= 0
    if not launched.any():
        return np.zeros(len(rows), dtype=bool)
    corr = table.correlation[rows]
    first_launch = table.correlation[launch_of[rows[launched]]]
    first_launch = first_launch[first_launch >= 0]
    if not len(first_launch):
        return np.zeros(len(rows), dtype=bool)
    return (~launched & (corr >= 0) & (corr < first_launch.min())
            & (table.ts_us[rows] < table.ts_us[rows[launched]].min()))


def _steps(table: EventTable, launch_of: np.ndarray, device_rows: np.ndarray, before_window: np.ndarray) -> Steps:
    complete = table.phase == Phase.COMPLETE
    # 2021 traces file ProfilerStep under `Operator`: the decoder has already
    # reclassified those as annotations.
    candidates = np.flatnonzero(complete & (table.kind == Kind.USER_ANNOTATION))
    rows = candidates[name_mask(table, candidates, is_step)]
    if len(rows):
        threads, counts = np.unique(table.thread_id[rows], return_counts=True)
        if len(threads) > 1:
            # One training loop: keep the thread that holds most step markers.
            main = threads[np.argmax(counts)]
            table.warnings.append(
                f"ProfilerStep annotations on {len(threads)} threads; "
                f"using the {int(counts.max())} on the main one, ignoring {int(len(rows) - counts.max())}"
            )
            rows = rows[table.thread_id[rows] == main]
        rows = rows[np.argsort(table.ts_us[rows], kind="stable")]
        step_names = [table.strings[i] for i in table.name_id[rows].tolist()]
        number = np.array([step_number(n) for n in step_names], dtype=np.int64)
        start = table.ts_us[rows].copy()
        host_end = start + table.dur_us[rows]
    else:
        rows = np.full(1, -1, dtype=np.int64)
        step_names = ["all"]
        number = np.zeros(1, dtype=np.int64)
        first, last = timed_window(table)
        start = np.array([first])
        host_end = np.array([last])
    end = host_end.copy()
    launched = device_rows[launch_of[device_rows] >= 0]
    if len(launched) and rows[0] >= 0:
        launch_ts = table.ts_us[launch_of[launched]]
        dev_end = table.ts_us[launched] + table.dur_us[launched]
        idx = np.searchsorted(start, launch_ts, side="right") - 1
        inside = (idx >= 0) & (launch_ts <= host_end[np.clip(idx, 0, None)])
        np.maximum.at(end, idx[inside], dev_end[inside])
        # Work launched before the first step: a launch before it, or none (before the profiler's window).
        before = device_rows[before_window[device_rows]]
        earlier = np.concatenate([dev_end[idx < 0], (table.ts_us + table.dur_us)[before]])
        start[0] = _first_step_start(start[0], earlier, table.ts_us[launched][inside & (idx == 0)])
        _warn_trailing_steps_without_device_work(table, step_names, np.bincount(idx[inside], minlength=len(start)))
    # The GPU runs behind the CPU: step i's device work ends after step i+1
    # has started on the host. Like torch-tb-profiler, a step starts where the
    # previous one ended, so no time is counted in two steps.
    if len(start) > 1:
        start[1:] = np.maximum(start[1:], np.maximum.accumulate(end)[:-1])
    end = np.maximum(end, start)
    return Steps(step_names, number, rows, start, host_end, end)


def _first_step_start(start_us: float, earlier_end_us: np.ndarray, own_device_start_us: np.ndarray) -> float:
    """Device work launched before the first step and still running when it
    starts belongs to no step: the first step starts when it ends (as every
    later step starts where the previous one ended; torch-tb-profiler does
    the same), but no later than the step's own first device activity."""
    if len(earlier_end_us) == 0:
        return start_us
    limit = own_device_start_us.min() if len(own_device_start_us) else np.inf
    return float(max(start_us, min(earlier_end_us.max(), limit)))


def _warn_trailing_steps_without_device_work(table: EventTable, names: list[str], launches: np.ndarray) -> None:
    """The profiler often loses the kernels of the last steps. torch-tb-profiler
    drops such steps; they are kept here (their host time is real), but said."""
    if len(launches) < 2 or not launches.any():
        return
    trailing = len(launches) - 1 - int(np.flatnonzero(launches)[-1])
    if trailing:
        listed = ", ".join(names[-trailing:]) if trailing <= 3 else f"{names[-trailing]} to {names[-1]}"
        table.warnings.append(
            f"the last {trailing} step(s) ({listed}) launched no device work although earlier steps did "
            "(the profiler may have lost their kernels); they are kept, with their host time only "
            "(torch-tb-profiler leaves them out)"
        )
