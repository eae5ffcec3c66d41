"""Where each `[memory]` event was made: its operator, and the part of the step.

An allocation is recorded on the thread that made it, at an instant inside
the operator that asked for it (`aten::empty` inside `aten::zeros` inside
`aten::linear`). Its *operator* is the innermost operator around that
instant on that thread; its *part* and *phase* are those of the top-level
operator around it, as `analysis/attribution.py` decided them (the module
path, forward or backward, optimizer, data loading), so memory and time
are attributed by one rule.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ...trace.forest import nearest_marked_ancestor
from ...trace.link import LinkedTrace
from ...trace.table import Kind
from ..attribution import Attribution
from ..labels import BACKWARD, DATA_LOADING, DATA_LOADING_NAME, MODULE, OPTIMIZER

OUTSIDE_OPERATORS = "(outside operators)"
# An operator on a thread the step attribution does not cover (not the step's, not autograd's).
OTHER_THREADS = "(other threads)"
# Phase of a part that is not a module's forward or backward.
_KIND_PHASES = {BACKWARD: "backward", OPTIMIZER: "optimizer", DATA_LOADING: DATA_LOADING_NAME}
_WALK_HOPS = 64  # an instant is at most this many nesting levels below the last event starting before it


def enclosing_host_row(linked: LinkedTrace, thread_id: np.ndarray, ts_us: np.ndarray) -> np.ndarray:
    """The innermost host event on each given thread whose [start, end]
    holds each instant, -1 for none."""
    t = linked.table
    host = np.flatnonzero(linked.is_host)
    out = np.full(len(ts_us), -1, dtype=np.int64)
    if not len(host) or not len(ts_us):
        return out
    # Per thread by start; among equal starts the deeper (inner) one last.
    host = host[np.lexsort((linked.depth[host], t.ts_us[host], t.thread_id[host]))]
    host_thread = t.thread_id[host]
    for th in np.unique(thread_id):
        q = np.flatnonzero(thread_id == th)
        lo, hi = np.searchsorted(host_thread, [th, th + 1])
        if lo == hi:
            continue
        rows = host[lo:hi]
        k = np.searchsorted(t.ts_us[rows], ts_us[q], side="right") - 1
        cand = np.where(k >= 0, rows[np.maximum(k, 0)], -1)
        # The last event to start may have ended already: its ancestors may not.
        for _ in range(_WALK_HOPS):
            ok = cand >= 0
            ended = np.zeros(len(cand), dtype=bool)
            ended[ok] = t.ts_us[cand[ok]] + t.dur_us[cand[ok]] < ts_us[q][ok]
            if not ended.any():
                break
            cand[ended] = linked.parent[cand[ended]]
        out[q] = cand
    return out


def _operator_threads(linked: LinkedTrace, thread_id: np.ndarray) -> np.ndarray:
    """The thread whose operators surround each memory event. Kineto in 2021
    wrote operators' `tid` as a string and memory events' as a number: the
    same thread, two keys; a thread without host events takes the one whose
    tid is its tid spelled as text."""
    t = linked.table
    with_host = set(np.unique(t.thread_id[linked.is_host]).tolist())
    index = {(pid, tid): i for i, (pid, tid) in enumerate(t.threads)}
    remap = np.arange(len(t.threads), dtype=np.int64)
    for th in np.unique(thread_id).tolist():
        if th in with_host:
            continue
        pid, tid = t.threads[th]
        other = index.get((pid, str(tid)) if not isinstance(tid, str) else (pid, _int_or(tid)))
        if other is not None and other in with_host:
            remap[th] = other
    return remap[thread_id] if len(remap) else thread_id


def _int_or(text: str):
    try:
        return int(text)
    except ValueError:
        return text


def memory_event_places(linked: LinkedTrace, attribution: Attribution) -> pd.DataFrame:
    """One row per `[memory]` event (by index into `table.memory`): `op_row`
    (innermost operator, -1), `operator` (its name), `part` (module path,
    data loading, optimizer, ... as in the step ledger), `phase` (forward,
    backward, optimizer, data loading, "")."""
    t, m = linked.table, linked.table.memory
    holder = enclosing_host_row(linked, _operator_threads(linked, m.thread_id), m.ts_us)
    is_op = linked.is_host & (t.kind == Kind.CPU_OP)
    op_row = nearest_marked_ancestor(linked.parent, is_op, holder)
    ops = attribution.operators
    is_top = np.zeros(len(t), dtype=bool)
    is_top[ops["row"].to_numpy()] = True
    top = nearest_marked_ancestor(linked.parent, is_top, op_row)

    operator = np.full(len(holder), OUTSIDE_OPERATORS, dtype=object)
    has_op = op_row >= 0
    operator[has_op] = t.names(t.name_id[op_row[has_op]])
    part = np.where(has_op, OTHER_THREADS, OUTSIDE_OPERATORS).astype(object)
    phase = np.full(len(holder), "", dtype=object)
    has_top = top >= 0
    pos = np.searchsorted(ops["row"].to_numpy(), top[has_top])
    kind = ops["kind"].to_numpy()[pos]
    part[has_top] = ops["key"].to_numpy()[pos]
    own_phase = ops["phase"].to_numpy()[pos]
    phase[has_top] = np.where(kind == MODULE, own_phase,
                              pd.Series(kind).map(_KIND_PHASES).fillna("").to_numpy(dtype=object))
    return pd.DataFrame({"op_row": op_row, "operator": operator, "part": part, "phase": phase})


# Frames that are not the user's code: torch's, built-ins, module calls, and
# our recorder's (`tb-pipeline record` wraps the script's DataLoader, so its
# iterator is on the stack of every step).
_NOT_USER_CODE = ("torch/", "<built-in", "nn.Module: ", "<frozen", "tb_pipeline_plugin/")


def call_path(linked: LinkedTrace, row: int, frames: int = 3) -> str:
    """The innermost frames of the user's code around operator `row`,
    innermost first: from the Python events around it (`with_stack=True`),
    else from its `Call stack` (Kineto 2021); "" when the trace has no stacks."""
    t = linked.table
    out: list[str] = []
    seen = 0
    r = int(row)
    while r >= 0 and len(out) < frames and seen < 256:
        seen += 1
        if t.kind[r] == Kind.PYTHON_FUNCTION:
            name = t.strings[t.name_id[r]]
            if not name.startswith(_NOT_USER_CODE):
                out.append(name)
        r = int(linked.parent[r])
    if not out and row >= 0 and t.stack_id[row] >= 0:
        out = _recorded_stack(t.strings[t.stack_id[row]])[:frames]
    return " ← ".join(out)


def _recorded_stack(text: str) -> list[str]:
    """Frames of a `Call stack` (the JSON text of "a/b.py(12): f;...",
    innermost first) outside torch, with paths from site-packages on."""
    try:
        stack = json.loads(text)
    except ValueError:
        return []
    if not isinstance(stack, str):
        return []
    frames = []
    for frame in stack.split(";"):
        path = frame.split("site-packages/", 1)[-1]
        if path and not path.startswith(_NOT_USER_CODE) and "/torch/" not in path:
            frames.append(path)
    return frames
