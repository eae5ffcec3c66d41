"""A chunk's events -> column arrays; chunks -> EventTable.

`columns_of` holds the rules (which events are main rows, memory events,
flows; what is dropped and counted), reading the fields through an
`EventFields`: msgspec's event objects (`ObjectFields`, here) or the
compiled scanner's arrays (`scan.ScannedFields`), one table either way.
For the objects, attribute extraction goes through
`map(operator.attrgetter(...))` and mapping through
`map(Memo.__getitem__)` into `np.fromiter`, so the per-event work stays in
C; only the distinct values (names, categories, shapes) go through Python
code. The five fields that repeat together are one lookup of the event's
head (`heads.EventHeads`), their columns taken from the head's codes.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

import numpy as np

from .heads import HEAD_FIELDS, PH_BEGIN as _PH_BEGIN, PH_END as _PH_END, PH_FLOW as _PH_FLOW
from .heads import PH_FLOW_START as _PH_FLOW_START, PH_META as _PH_META
from .intern import Interner, Interners
from .schema import EMPTY_ARGS
from .unique import unique_inverse
from .names import ids_mask, is_profiler_annotation
from .table import (
    NO_ID,
    EventTable,
    FlowColumns,
    Kind,
    KernelColumns,
    MemoryColumns,
    Phase,
)

_LINK_FIELDS = ("external_id", "external_id_2021", "correlation", "python_id", "python_parent_id", "device")
_GET_HEAD = attrgetter(*HEAD_FIELDS)
_GET_ARGS = attrgetter("args")
_GET_TS, _GET_DUR = attrgetter("ts"), attrgetter("dur")
GET_KERNEL = attrgetter(
    "grid", "block", "registers_per_thread", "shared_memory_bytes", "blocks_per_sm", "warps_per_sm", "occupancy_pct"
)
GET_MEMORY = attrgetter("bytes_delta", "total_allocated", "total_reserved", "device_type", "device_id", "addr")

_MAIN_PHASES = (Phase.COMPLETE, Phase.INSTANT, Phase.COUNTER, _PH_BEGIN, _PH_END)
# Phase code -> is it one of these (a table lookup: np.isin is 20 times slower on a chunk).
_IS_MAIN = np.isin(np.arange(256), _MAIN_PHASES)
_IS_FLOW = np.isin(np.arange(256), (_PH_FLOW, _PH_FLOW_START))


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_ABS_US = 1e18


def _ints(values, issues: Counter | None = None) -> np.ndarray:
    """None -> NO_ID. JSON integers can be arbitrarily large (uint64 ids
    exist): those become NO_ID, counted."""
    try:
        # An explicit null is rare, but a stack-heavy trace's `Python parent
        # id` has one every few thousand events, so most chunks hold one:
        # replaced by a dict lookup in C (`_NULL.get(v, v)`), not a Python
        # step per value (np.array on a list holding None takes a slow
        # object path, 40 times slower still).
        return np.fromiter(map(_NULL.get, values, values), dtype=np.int64, count=len(values))
    except OverflowError:
        out = [NO_ID if v is None or not _INT64_MIN <= v <= _INT64_MAX else v for v in values]
        if issues is not None:
            issues["out_of_range"] += sum(1 for v in values if v is not None and not _INT64_MIN <= v <= _INT64_MAX)
        return np.array(out, dtype=np.int64)


_NULL = {None: NO_ID}


def _int_column(objs: list, field: str, issues: Counter) -> np.ndarray:
    """`field` of each of `objs` as int64, as `_ints` converts it."""
    try:
        # The common case (ints only, absent ones already NO_ID) without a
        # list in between; an explicit null or a huge id takes `_ints`.
        return np.fromiter(map(attrgetter(field), objs), dtype=np.int64, count=len(objs))
    except (TypeError, OverflowError):
        return _ints(list(map(attrgetter(field), objs)), issues)


def _floats(values) -> np.ndarray:
    return np.array(values, dtype=np.float64)  # None -> NaN


def _take(seq, rows: np.ndarray) -> list:
    """seq[i] for i in rows, in C."""
    if len(rows) == len(seq):
        return list(seq)
    if len(rows) == 0:
        return []
    if len(rows) == 1:
        return [seq[int(rows[0])]]
    return list(itemgetter(*rows.tolist())(seq))


def _memory_events(kind, no_cat, phase, named_memory, fields, issues: Counter) -> np.ndarray:
    """`[memory]` instant events: category `cpu_instant_event`, or none at all
    (Kineto from mid-2021 to spring 2022), recognised then by their fields."""
    is_memory = named_memory & (kind == Kind.MEMORY)
    bare = np.flatnonzero(named_memory & no_cat & (phase == Phase.INSTANT))
    if len(bare):
        # GET_MEMORY's order: Bytes, Total Allocated, ..., Device Type fourth.
        values = fields.memory(bare)
        usable = np.array([(v[0] is not None or v[1] is not None) and v[3] is not None for v in values], dtype=bool)
        is_memory[bare[usable]] = True
        issues["memory_unusable"] += int((~usable).sum())
    return is_memory


@dataclass
class ChunkColumns:
    main: dict[str, np.ndarray]
    kernel: dict[str, np.ndarray]  # "row" is local to the chunk's main rows
    memory: dict[str, np.ndarray]
    flow: dict[str, np.ndarray]
    issues: Counter = field(default_factory=Counter)  # what was dropped, and why
    process_names: dict = field(default_factory=dict)
    thread_names: dict = field(default_factory=dict)


class EventFields:
    """The fields `columns_of` reads beyond head, ts and dur, for the rows
    it names (positions among the chunk's events). Two sources: msgspec's
    event objects (`ObjectFields`) and the compiled scanner's output
    (`scan.ScannedFields`); the table is the same from either."""

    def links(self, rows: np.ndarray, issues: Counter) -> list[np.ndarray]:
        """int64 columns of `_LINK_FIELDS`, NO_ID where absent or null."""
        raise NotImplementedError

    def raw_ids(self, rows: np.ndarray, field: str) -> np.ndarray:
        """Interned text ids of `input_dims` or `call_stack`, NO_ID where absent."""
        raise NotImplementedError

    def kernel(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def memory(self, rows: np.ndarray) -> list[tuple]:
        """The memory fields of each row, in GET_MEMORY's order (None absent or null)."""
        raise NotImplementedError

    def flows(self, rows: np.ndarray) -> tuple[list, np.ndarray]:
        """(ids: int, str or None; whether the binding point is "e")."""
        raise NotImplementedError

    def meta_name(self, row: int):
        """`args.name` of a metadata event, None when absent."""
        raise NotImplementedError


class ObjectFields(EventFields):
    """The fields of msgspec's decoded `Event`s."""

    def __init__(self, events: list, interners: Interners) -> None:
        self._events = events
        self._args = list(map(_GET_ARGS, events))
        self._interners = interners

    def links(self, rows, issues):
        kept = _take(self._args, rows)
        return [_int_column(kept, f, issues) for f in _LINK_FIELDS]

    def raw_ids(self, rows, field):
        return _raw_ids(self._interners, _take(self._args, rows), field)

    def kernel(self, rows):
        kargs = _take(self._args, rows)
        cols = list(zip(*map(GET_KERNEL, kargs))) if kargs else [()] * 7
        return kernel_columns(self._interners.raw_text_ids(cols[0]), self._interners.raw_text_ids(cols[1]), cols[2:])

    def memory(self, rows):
        return list(map(GET_MEMORY, _take(self._args, rows)))

    def flows(self, rows):
        events = _take(self._events, rows)
        bp = map(attrgetter("bp"), events)
        return list(map(attrgetter("id"), events)), np.fromiter(map("e".__eq__, bp), dtype=bool, count=len(events))

    def meta_name(self, row):
        return self._events[row].args.name


def chunk_columns(events: list, interners: Interners) -> ChunkColumns:
    """The columns of msgspec's decoded events."""
    if not events:
        return _empty_chunk()
    n = len(events)
    # The fields that repeat together, as one id per event (one dict hit
    # each), then each column by indexing that id's values (`EventHeads`).
    heads = interners.heads
    head = heads.ids.codes_of(map(_GET_HEAD, events), n, np.int32)
    heads.add_new(interners.strings, interners.keys)
    # Always floats (the schema's type; absent is NaN): straight into arrays.
    ts_all = np.fromiter(map(_GET_TS, events), dtype=np.float64, count=n)
    dur_all = np.fromiter(map(_GET_DUR, events), dtype=np.float64, count=n)
    return columns_of(head, ts_all, dur_all, ObjectFields(events, interners), interners)


def columns_of(head: np.ndarray, ts_all: np.ndarray, dur_all: np.ndarray, fields: EventFields,
               interners: Interners) -> ChunkColumns:
    """A chunk's columns from its events' head ids (in `interners.heads`),
    timestamps, durations and other fields."""
    strings, heads = interners.strings, interners.heads
    phase = heads.phase[head]
    kind, no_cat = heads.kind[head], heads.no_cat[head]
    name_id = heads.name_id[head]
    thread_key = heads.thread_key[head]

    issues: Counter = Counter()
    is_memory = _memory_events(kind, no_cat, phase, name_id == strings.id_of("[memory]"), fields, issues)
    kind[(kind == Kind.MEMORY) & ~is_memory] = Kind.OTHER
    is_main, is_flow = _IS_MAIN[phase], _IS_FLOW[phase]
    timed = is_main | is_memory | is_flow
    # |ts| beyond ~31 years in µs is no clock reading (and overflows sums).
    no_ts = timed & ~(np.abs(ts_all) <= _MAX_ABS_US)
    complete = phase == Phase.COMPLETE
    bad_dur = complete & ~no_ts & ~((dur_all >= 0) & (dur_all <= _MAX_ABS_US))  # missing, unreadable, negative, absurd
    issues["no_ts"] += int(no_ts.sum())
    issues["bad_dur"] += int(bad_dur.sum())
    usable = ~no_ts & ~bad_dur
    dur_all = np.where(complete, dur_all, 0.0)
    keep = is_main & ~is_memory & usable
    rows = np.flatnonzero(keep)

    links = fields.links(rows, issues)
    external, external_2021 = links[0], links[1]
    external = np.where(external == NO_ID, external_2021, external)
    main_kind = kind[rows]
    op_rows = np.flatnonzero(main_kind == Kind.CPU_OP)
    shape_id = np.full(len(rows), NO_ID, dtype=np.int32)
    shape_id[op_rows] = fields.raw_ids(rows[op_rows], "input_dims")
    stack_id = np.full(len(rows), NO_ID, dtype=np.int32)
    stack_id[op_rows] = fields.raw_ids(rows[op_rows], "call_stack")
    main = {
        "phase": phase[rows],
        "kind": main_kind,
        "name_id": name_id[rows],
        "pid_key": heads.pid_key[head[rows]],
        "thread_key": thread_key[rows],
        "ts_us": ts_all[rows],
        "dur_us": dur_all[rows],
        "external_id": external,
        "correlation": links[2],
        "python_id": links[3],
        "python_parent_id": links[4],
        "device": links[5],
        "shape_id": shape_id,
        "stack_id": stack_id,
    }

    kernel_rows = np.flatnonzero(main_kind == Kind.KERNEL)
    kernel = fields.kernel(rows[kernel_rows])
    kernel["row"] = kernel_rows.astype(np.int64)

    mem_rows = np.flatnonzero(is_memory & usable)
    memory = _memory_columns(fields.memory(mem_rows), issues)
    memory["ts_us"] = ts_all[mem_rows]
    memory["thread_key"] = thread_key[mem_rows]

    flow_rows = np.flatnonzero(is_flow & usable)
    flow = _flow_columns(heads.flow_kind[head[flow_rows]], *fields.flows(flow_rows))
    flow["is_start"] = phase[flow_rows] == _PH_FLOW_START
    flow["ts_us"] = ts_all[flow_rows]
    flow["thread_key"] = thread_key[flow_rows]

    out = ChunkColumns(main, kernel, memory, flow, issues)
    keys = interners.keys.values
    for i in np.flatnonzero(phase == _PH_META).tolist():
        label = fields.meta_name(i)
        if label is None:
            continue
        name = strings.values[name_id[i]]
        pid = keys[heads.pid_key[head[i]]]
        if name == "process_name":
            out.process_names[pid] = label
        elif name == "thread_name":
            out.thread_names[(pid, keys[int(thread_key[i]) & 0xFFFFFFFF])] = label
    return out


def _raw_ids(interners: Interners, op_args: list, field: str) -> np.ndarray:
    """Interned text ids of a `Raw` argument, -1 where absent. A chunk where
    every operator lacks it (`Call stack` outside 2021 traces, shapes
    without `record_shapes`) holds the schema's one default object in each
    place: counted by identity in C, and nothing decoded or looked up."""
    raws = list(map(attrgetter(field), op_args))
    if raws.count(getattr(EMPTY_ARGS, field)) == len(raws):
        return np.full(len(raws), NO_ID, dtype=np.int32)
    return interners.raw_text_ids(raws)


def remap_ids(part: ChunkColumns, string_ids: np.ndarray, key_ids: np.ndarray) -> None:
    """Re-express `part`'s interned ids (another decode's interners) in ids
    of the decode it joins: string_ids[old] is the new id of a string,
    key_ids[old] of a pid / tid."""
    def strings(ids: np.ndarray) -> np.ndarray:
        return np.where(ids == NO_ID, NO_ID, string_ids[np.maximum(ids, 0)]).astype(ids.dtype)

    def threads(thread_key: np.ndarray) -> np.ndarray:
        return key_ids[thread_key >> 32].astype(np.int64) << 32 | key_ids[thread_key & 0xFFFFFFFF].astype(np.int64)

    if part.main:
        part.main["name_id"] = string_ids[part.main["name_id"]]
        part.main["shape_id"] = strings(part.main["shape_id"])
        part.main["stack_id"] = strings(part.main["stack_id"])
        part.main["pid_key"] = key_ids[part.main["pid_key"]]
        part.main["thread_key"] = threads(part.main["thread_key"])
    if part.kernel:
        part.kernel["grid_id"] = strings(part.kernel["grid_id"])
        part.kernel["block_id"] = strings(part.kernel["block_id"])
    if part.flow:
        part.flow["thread_key"] = threads(part.flow["thread_key"])
    if part.memory:
        part.memory["thread_key"] = threads(part.memory["thread_key"])


def kernel_columns(grid_id: np.ndarray, block_id: np.ndarray, numbers) -> dict[str, np.ndarray]:
    """`numbers`: GET_KERNEL's five numeric fields, each a sequence (None or NaN absent)."""
    return {
        "grid_id": grid_id,
        "block_id": block_id,
        "registers_per_thread": _floats(numbers[0]),
        "shared_memory_bytes": _floats(numbers[1]),
        "blocks_per_sm": _floats(numbers[2]),
        "warps_per_sm": _floats(numbers[3]),
        "occupancy_pct": _floats(numbers[4]),
    }


def _memory_columns(values: list[tuple], issues: Counter) -> dict[str, np.ndarray]:
    """`values`: each memory event's fields in GET_MEMORY's order."""
    cols = list(zip(*values)) if values else [()] * 6
    # -1 is a valid `Bytes` (a 1-byte free): absence is tested on the values.
    no_delta = np.fromiter((v is None for v in cols[0]), dtype=bool, count=len(values))
    delta = _ints([0 if v is None else v for v in cols[0]], issues)
    total = _ints(cols[1], issues)
    device_type = _ints(cols[3], issues)
    unusable = (no_delta & (total == NO_ID)) | (device_type == NO_ID)
    issues["memory_unusable"] += int(unusable.sum())
    issues["memory_no_total"] += int(((total == NO_ID) & ~unusable).sum())
    return {
        "bytes_delta": delta,
        "total_allocated_bytes": total,
        "total_reserved_bytes": _ints(cols[2], issues),
        "device_type": device_type,
        "device_id": _ints(cols[4], issues),
        "addr": _ints(cols[5], issues),
    }


def _flow_columns(kind: np.ndarray, ids: list, binds_enclosing: np.ndarray) -> dict[str, np.ndarray]:
    """Kind, id and binding of flow events (is_start and ts_us: the caller's)."""
    if not len(ids):
        return {k: np.empty(0, dtype=t) for k, t in _FLOW_DTYPES.items()}
    return {
        "kind": kind,
        # Raw ids: made dense across chunks in build_table (one hash pass,
        # not a Python call per flow: nearly every flow id is distinct).
        "flow_id": _flow_ids(ids),
        "binds_enclosing": binds_enclosing,
    }


def _flow_ids(ids: list) -> np.ndarray:
    """int64 when every id is an int in range (Kineto's case), else objects
    (string ids, missing ids as "")."""
    # Checked first: np.array would turn the string "7" into the int 7.
    if set(map(type, ids)) == {int}:
        try:
            return np.array(ids, dtype=np.int64)
        except OverflowError:
            pass
    return np.array(["" if i is None else i for i in ids], dtype=object)


def _dense_flow_ids(parts: list[np.ndarray]) -> np.ndarray:
    """Flow ids of all chunks -> int64 ids equal exactly where the file's ids
    are equal (1 and "1" differ, as ints and strings in JSON)."""
    if all(p.dtype == np.int64 for p in parts):
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    # String ids (rare): keyed with their type so an int and its decimal
    # string stay distinct.
    dense: dict = {}
    codes = [dense.setdefault((type(v), v), len(dense)) for p in parts for v in p.tolist()]
    return np.array(codes, dtype=np.int64)


_FLOW_DTYPES = {"kind": np.uint8, "flow_id": np.int64, "is_start": bool, "binds_enclosing": bool, "ts_us": np.float64}


def _empty_chunk() -> ChunkColumns:
    return ChunkColumns({}, {}, {}, {})


def _concat(parts: list[dict[str, np.ndarray]], key: str, dtype) -> np.ndarray:
    arrays = [p[key] for p in parts if key in p]
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype=dtype)


_MAIN_DTYPES = {
    "phase": np.uint8, "kind": np.uint8, "name_id": np.int32, "pid_key": np.int32, "thread_key": np.int64,
    "ts_us": np.float64, "dur_us": np.float64, "external_id": np.int64, "correlation": np.int64,
    "python_id": np.int64, "python_parent_id": np.int64, "device": np.int64, "shape_id": np.int32,
    "stack_id": np.int32,
}
_KERNEL_DTYPES = {
    "row": np.int64, "grid_id": np.int32, "block_id": np.int32, "registers_per_thread": np.float64,
    "shared_memory_bytes": np.float64, "blocks_per_sm": np.float64, "warps_per_sm": np.float64,
    "occupancy_pct": np.float64,
}
_MEMORY_DTYPES = {
    "ts_us": np.float64, "bytes_delta": np.int64, "total_allocated_bytes": np.int64,
    "total_reserved_bytes": np.int64, "device_type": np.int64, "device_id": np.int64, "addr": np.int64,
    "thread_key": np.int64,
}


def build_table(parts: list[ChunkColumns], strings: Interner, keys: Interner, metadata: dict) -> EventTable:
    offsets = np.cumsum([0] + [len(p.main.get("ts_us", ())) for p in parts])
    for part, off in zip(parts, offsets):
        if "row" in part.kernel:
            part.kernel["row"] = part.kernel["row"] + off
    main = {k: _concat([p.main for p in parts], k, t) for k, t in _MAIN_DTYPES.items()}
    kernel = {k: _concat([p.kernel for p in parts], k, t) for k, t in _KERNEL_DTYPES.items()}
    memory = {k: _concat([p.memory for p in parts], k, t) for k, t in _MEMORY_DTYPES.items()}
    flow = {k: _concat([p.flow for p in parts], k, t) for k, t in {**_FLOW_DTYPES, "thread_key": np.int64}.items() if k != "flow_id"}
    flow["flow_id"] = _dense_flow_ids([p.flow["flow_id"] for p in parts if "flow_id" in p.flow])
    process_names: dict = {}
    thread_names: dict = {}
    issues: Counter = Counter()
    for p in parts:
        process_names.update(p.process_names)
        thread_names.update(p.thread_names)
        issues.update(p.issues)
    warnings = issue_warnings(issues)
    _reclassify_profiler_annotations(main, strings.values)

    if np.any(main["phase"] >= _PH_BEGIN):
        keep, kernel_row_map = _pair_begin_end(main, warnings)
        main = {k: v[keep] for k, v in main.items()}
        kernel["row"] = kernel_row_map[kernel["row"]]
        # A kernel whose B or E had no partner left no row: drop its launch data too.
        paired = kernel["row"] >= 0
        kernel = {k: v[paired] for k, v in kernel.items()}

    # Dense thread ids over (pid, tid) pairs seen anywhere (events, flows, memory events).
    all_keys = np.concatenate([main["thread_key"], flow["thread_key"], memory.pop("thread_key")])
    uniq, inverse = unique_inverse(all_keys)
    n_main, n_flow = len(main["thread_key"]), len(flow["thread_key"])
    threads = [(keys.values[int(u) >> 32], keys.values[int(u) & 0xFFFFFFFF]) for u in uniq]
    pid_uniq, pid_inverse = unique_inverse(main["pid_key"])

    return EventTable(
        strings=strings.values,
        phase=main["phase"],
        kind=main["kind"],
        name_id=main["name_id"],
        pid_id=pid_inverse.astype(np.int32),
        thread_id=inverse[:n_main].astype(np.int32),
        ts_us=main["ts_us"],
        dur_us=main["dur_us"],
        external_id=main["external_id"],
        correlation=main["correlation"],
        python_id=main["python_id"],
        python_parent_id=main["python_parent_id"],
        device=main["device"],
        shape_id=main["shape_id"],
        stack_id=main["stack_id"],
        kernels=KernelColumns(**kernel),
        memory=MemoryColumns(**memory, thread_id=inverse[n_main + n_flow:].astype(np.int32)),
        flows=FlowColumns(
            kind=flow["kind"], flow_id=flow["flow_id"], is_start=flow["is_start"],
            binds_enclosing=flow["binds_enclosing"], ts_us=flow["ts_us"],
            thread_id=inverse[n_main:n_main + n_flow].astype(np.int32),
        ),
        pids=[keys.values[int(p)] for p in pid_uniq],
        threads=threads,
        process_names=process_names,
        thread_names=thread_names,
        metadata=metadata,
        warnings=warnings,
    )


def _pair_begin_end(main: dict[str, np.ndarray], warnings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Turn B/E pairs (per thread, properly nested) into complete events."""
    phase = main["phase"]
    idx = np.flatnonzero((phase == _PH_BEGIN) | (phase == _PH_END))
    order = idx[np.lexsort((main["ts_us"][idx], main["thread_key"][idx]))]
    stacks: dict[int, list[int]] = {}
    unmatched = 0
    for i in order.tolist():
        stack = stacks.setdefault(int(main["thread_key"][i]), [])
        if phase[i] == _PH_BEGIN:
            stack.append(i)
        elif stack:
            b = stack.pop()
            main["dur_us"][b] = main["ts_us"][i] - main["ts_us"][b]
            main["phase"][b] = Phase.COMPLETE
        else:
            unmatched += 1
    open_count = sum(len(s) for s in stacks.values())
    if unmatched or open_count:
        warnings.append(f"{unmatched} end (E) events without a begin and {open_count} begin (B) events without an end were ignored")
    keep = main["phase"] <= Phase.COUNTER
    # Old row -> new row; -1 for a dropped one (not its predecessor's row).
    row_map = np.where(keep, np.cumsum(keep) - 1, -1)
    return keep, row_map


def issue_warnings(issues: Counter) -> list[str]:
    messages = {
        "no_ts": "{n} events without a usable timestamp (`ts`) were ignored",
        "bad_dur": "{n} complete (X) events with a missing, unreadable, negative or absurd duration (`dur`) were ignored",
        "out_of_range": "{n} ids or numbers outside the 64-bit range were ignored",
        "memory_unusable": "{n} `[memory]` events without `Device Type`, or without both `Bytes` and `Total Allocated`, were ignored",
        "memory_no_total": (
            "{n} `[memory]` events have no `Total Allocated` (Kineto before 2022): allocated memory is the running sum "
            "of their `Bytes`, counted from the least level that explains the frees (memory allocated before the "
            "trace and never freed in it is not seen); reserved memory is unknown"
        ),
    }
    return [messages[k].format(n=f"{n:,}") for k, n in issues.items() if n and k in messages]


def _reclassify_profiler_annotations(main: dict[str, np.ndarray], strings: list[str]) -> None:
    """2021 traces record ProfilerStep#N, DataLoader and optimizer
    annotations under the `Operator` category; they are annotations (steps,
    not operators), whatever category the file gives them."""
    ops = np.flatnonzero(main["kind"] == Kind.CPU_OP)
    hits = ops[ids_mask(strings, main["name_id"][ops], is_profiler_annotation)]
    main["kind"][hits] = Kind.USER_ANNOTATION
