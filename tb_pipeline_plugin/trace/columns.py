"""A chunk's events -> column arrays: the rules, one table from either source.

`columns_of` holds the rules (which events are main rows, memory events,
flows; what is dropped and counted), reading the fields through an
`EventFields`: msgspec's event objects (`object_fields.ObjectFields`) or
the compiled scanner's arrays (`scan.ScannedFields`), one table either way.
The five fields that repeat together are one lookup of the event's head
(`heads.EventHeads`), their columns taken from the head's codes. The
chunks' columns become one `EventTable` in `assemble.py`.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .heads import PH_BEGIN as _PH_BEGIN, PH_END as _PH_END, PH_FLOW as _PH_FLOW
from .heads import PH_FLOW_START as _PH_FLOW_START, PH_META as _PH_META
from .intern import Interners
from .table import NO_ID, Kind, Phase

# The order of `EventFields.links`' columns.
LINK_FIELDS = ("external_id", "external_id_2021", "correlation", "python_id", "python_parent_id", "device")
# The order of `EventFields.memory`'s fields, and of the kernel numbers `kernel_columns` takes after grid and block.
MEMORY_FIELDS = ("bytes_delta", "total_allocated", "total_reserved", "device_type", "device_id", "addr")
KERNEL_FIELDS = ("grid", "block", "registers_per_thread", "shared_memory_bytes", "blocks_per_sm", "warps_per_sm",
                 "occupancy_pct")

_MAIN_PHASES = (Phase.COMPLETE, Phase.INSTANT, Phase.COUNTER, _PH_BEGIN, _PH_END)
# Phase code -> is it one of these (a table lookup: np.isin is 20 times slower on a chunk).
_IS_MAIN = np.isin(np.arange(256), _MAIN_PHASES)
_IS_FLOW = np.isin(np.arange(256), (_PH_FLOW, _PH_FLOW_START))


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_ABS_US = 1e18


def int64s(values, issues: Counter | None = None) -> np.ndarray:
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


def _floats(values) -> np.ndarray:
    return np.array(values, dtype=np.float64)  # None -> NaN


def _memory_events(kind, no_cat, phase, named_memory, fields, issues: Counter) -> np.ndarray:
    """`[memory]` instant events: category `cpu_instant_event`, or none at all
    (Kineto from mid-2021 to spring 2022), recognised then by their fields."""
    is_memory = named_memory & (kind == Kind.MEMORY)
    bare = np.flatnonzero(named_memory & no_cat & (phase == Phase.INSTANT))
    if len(bare):
        # MEMORY_FIELDS' order: Bytes, Total Allocated, ..., Device Type fourth.
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
    event objects (`object_fields.ObjectFields`) and the compiled scanner's output
    (`scan.ScannedFields`); the table is the same from either."""

    def links(self, rows: np.ndarray, issues: Counter) -> list[np.ndarray]:
        """int64 columns of `LINK_FIELDS`, NO_ID where absent or null."""
        raise NotImplementedError

    def raw_ids(self, rows: np.ndarray, field: str) -> np.ndarray:
        """Interned text ids of `input_dims`, `input_types` or `call_stack`, NO_ID where absent."""
        raise NotImplementedError

    def kernel(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def memory(self, rows: np.ndarray) -> list[tuple]:
        """The memory fields of each row, in MEMORY_FIELDS' order (None absent or null)."""
        raise NotImplementedError

    def flows(self, rows: np.ndarray) -> tuple[list, np.ndarray]:
        """(ids: int, str or None; whether the binding point is "e")."""
        raise NotImplementedError

    def meta_name(self, row: int):
        """`args.name` of a metadata event, None when absent."""
        raise NotImplementedError


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
    input_type_id = np.full(len(rows), NO_ID, dtype=np.int32)
    input_type_id[op_rows] = fields.raw_ids(rows[op_rows], "input_types")
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
        "input_type_id": input_type_id,
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


def kernel_columns(grid_id: np.ndarray, block_id: np.ndarray, numbers) -> dict[str, np.ndarray]:
    """`numbers`: KERNEL_FIELDS' five numeric fields, each a sequence (None or NaN absent)."""
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
    """`values`: each memory event's fields in MEMORY_FIELDS' order."""
    cols = list(zip(*values)) if values else [()] * 6
    # -1 is a valid `Bytes` (a 1-byte free): absence is tested on the values.
    no_delta = np.fromiter((v is None for v in cols[0]), dtype=bool, count=len(values))
    delta = int64s([0 if v is None else v for v in cols[0]], issues)
    total = int64s(cols[1], issues)
    device_type = int64s(cols[3], issues)
    unusable = (no_delta & (total == NO_ID)) | (device_type == NO_ID)
    issues["memory_unusable"] += int(unusable.sum())
    issues["memory_no_total"] += int(((total == NO_ID) & ~unusable).sum())
    return {
        "bytes_delta": delta,
        "total_allocated_bytes": total,
        "total_reserved_bytes": int64s(cols[2], issues),
        "device_type": device_type,
        "device_id": int64s(cols[4], issues),
        "addr": int64s(cols[5], issues),
    }


def _flow_columns(kind: np.ndarray, ids: list, binds_enclosing: np.ndarray) -> dict[str, np.ndarray]:
    """Kind, id and binding of flow events (is_start and ts_us: the caller's)."""
    if not len(ids):
        return {k: np.empty(0, dtype=t) for k, t in FLOW_DTYPES.items()}
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


FLOW_DTYPES = {"kind": np.uint8, "flow_id": np.int64, "is_start": bool, "binds_enclosing": bool, "ts_us": np.float64}


def empty_chunk() -> ChunkColumns:
    return ChunkColumns({}, {}, {}, {})
