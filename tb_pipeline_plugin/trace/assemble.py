"""Chunks' columns -> one `EventTable`: concatenated, B/E pairs made
complete events, flow and thread ids made dense, the counted issues worded
as warnings; and a forked range's ids re-expressed in the first range's
(`remap_ids`), so the joined table is the one-process table exactly.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .columns import FLOW_DTYPES, ChunkColumns
from .heads import PH_BEGIN as _PH_BEGIN, PH_END as _PH_END
from .intern import Interner
from .names import ids_mask, is_profiler_annotation
from .table import NO_ID, EventTable, FlowColumns, Kind, KernelColumns, MemoryColumns, Phase
from .unique import pair_unique_inverse, small_unique_inverse


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
        part.main["input_type_id"] = strings(part.main["input_type_id"])
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


def _concat(parts: list[dict[str, np.ndarray]], key: str, dtype) -> np.ndarray:
    arrays = [p[key] for p in parts if key in p]
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype=dtype)


_MAIN_DTYPES = {
    "phase": np.uint8, "kind": np.uint8, "name_id": np.int32, "pid_key": np.int32, "thread_key": np.int64,
    "ts_us": np.float64, "dur_us": np.float64, "external_id": np.int64, "correlation": np.int64,
    "python_id": np.int64, "python_parent_id": np.int64, "device": np.int64, "shape_id": np.int32,
    "input_type_id": np.int32, "stack_id": np.int32,
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


# The joined columns' types, by table: what every chunk's columns become.
JOINED_DTYPES = {
    "main": _MAIN_DTYPES, "kernel": _KERNEL_DTYPES, "memory": _MEMORY_DTYPES,
    "flow": {**FLOW_DTYPES, "thread_key": np.int64},
}


@dataclass
class JoinedColumns:
    """Every chunk's columns, one array per column (`JOINED_DTYPES`), kernel
    rows counted over all chunks' main rows; and what the chunks named and
    counted, in chunk order."""
    main: dict[str, np.ndarray]
    kernel: dict[str, np.ndarray]
    memory: dict[str, np.ndarray]
    flow: dict[str, np.ndarray]
    process_names: dict = field(default_factory=dict)
    thread_names: dict = field(default_factory=dict)
    issues: Counter = field(default_factory=Counter)

    def add_named_and_counted(self, parts: list[ChunkColumns]) -> None:
        for p in parts:
            self.process_names.update(p.process_names)
            self.thread_names.update(p.thread_names)
            self.issues.update(p.issues)


def join_parts(parts: list[ChunkColumns]) -> JoinedColumns:
    offsets = np.cumsum([0] + [len(p.main.get("ts_us", ())) for p in parts])
    for part, off in zip(parts, offsets):
        if "row" in part.kernel:
            part.kernel["row"] = part.kernel["row"] + off
    groups = {group: {k: _concat([getattr(p, group) for p in parts], k, t) for k, t in dtypes.items() if k != "flow_id"}
              for group, dtypes in JOINED_DTYPES.items()}
    groups["flow"]["flow_id"] = _dense_flow_ids([p.flow["flow_id"] for p in parts if "flow_id" in p.flow])
    joined = JoinedColumns(**groups)
    joined.add_named_and_counted(parts)
    return joined


def build_table(parts: list[ChunkColumns], strings: Interner, keys: Interner, metadata: dict) -> EventTable:
    return table_of(join_parts(parts), strings, keys, metadata)


def table_of(joined: JoinedColumns, strings: Interner, keys: Interner, metadata: dict) -> EventTable:
    """The joined columns -> the `EventTable`: B/E pairs made complete
    events, dense thread and process ids, the counted issues worded."""
    main, kernel, memory, flow = joined.main, joined.kernel, dict(joined.memory), joined.flow
    process_names, thread_names = joined.process_names, joined.thread_names
    warnings = issue_warnings(joined.issues)
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
    uniq, inverse = pair_unique_inverse(all_keys, len(keys.values))
    n_main, n_flow = len(main["thread_key"]), len(flow["thread_key"])
    threads = [(keys.values[int(u) >> 32], keys.values[int(u) & 0xFFFFFFFF]) for u in uniq]
    pid_uniq, pid_inverse = small_unique_inverse(main["pid_key"], len(keys.values))

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
        input_type_id=main["input_type_id"],
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
