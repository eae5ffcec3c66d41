"""Where each operator's time belongs, decided once per trace.

The pieces (analysis/pieces.py), the step ledger (analysis/ledger.py) and
the module diff's backward lookup (analysis/backward_index.py) all read
this, so they agree on what is backward work, which forward operator
created it and which module an operator ran in.

Backward detection, from both sources the profiler gives:
* *markers*: rows at the receiving end of a `fwdbwd` flow
  (`LinkedTrace.backward_of`), and every `autograd::engine::evaluate_function: ...`
  operator: the autograd engine wraps each node it runs in this record
  function (engine.cpp), which also covers nodes that get no flow
  (`AccumulateGrad` has no sequence number);
* threads: a trace has one *step thread* (the thread of the
  `ProfilerStep#N` annotations) and zero or more *autograd threads* (the
  other threads holding markers: on GPU the autograd engine runs the
  backward on its own thread while the step thread waits). Together they
  are the *region threads*. Everything on an autograd thread is backward
  work (DDP's `nccl:all_reduce` hooks run there too).

Per operator: the *top-level* operators of the region threads (no
enclosing operator), with
* `step`: the step whose host window holds its start (-1: none);
* `backward`: an evaluate_function operator, one holding a flow end, or
  any operator of an autograd thread;
* `forward_row`: the forward operator that created it: that of the first
  flow end inside it (-1: none);
* `kind`, `key`, `phase`: the part of the step its time belongs to (the
  first that applies): `data_loading` (inside an `enumerate(DataLoader)`
  annotation), `module` with phase `backward` (key: the module path of its
  forward operator), `backward` (unattributed), `module` with phase
  `forward` (the innermost module call around it), `optimizer`,
  `communication` (host collectives), `annotation` (key: the innermost
  other user annotation), `unknown`.

A module call's identity is its path, `Net_0/Sequential_0/Block_2` (the
names of the calls around it): the ledger's module keys are these paths,
and the module diff finds a module piece's ledger rows by its call's path
(`Attribution.module_path`), so pieces and parts meet on one identity.

Operators, module calls and annotations are nested by time alone: the
other Python stack events can be recorded with imprecise ends (a
`record_function.__enter__` enclosing the optimizer step) and would put an
annotation beside, not around, its operators.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.forest import nearest_marked_ancestor
from ..trace.link import LinkedTrace
from ..trace.names import (
    EVALUATE_PREFIX, MODULE_PREFIX, is_data_loading, is_host_collective, is_module, is_optimizer, is_step, name_mask,
)
from ..trace.nesting import nest
from ..trace.table import Kind
from .labels import (
    ANNOTATION, BACKWARD, BACKWARD_PHASE, COMMUNICATION, DATA_LOADING, DATA_LOADING_NAME, FORWARD, MODULE, OPTIMIZER,
    UNATTRIBUTED_BACKWARD_NAME, UNKNOWN, UNKNOWN_NAME,
)
from .step_windows import step_of, step_windows

OPERATOR_COLUMNS = ("row", "step", "backward", "forward_row", "kind", "key", "phase")


@dataclass(frozen=True, eq=False)
class Attribution:
    step_thread: int  # EventTable thread id, -1 for a trace without host events
    autograd_threads: np.ndarray  # EventTable thread ids
    backward_markers: np.ndarray  # int64 rows, any thread: flow ends and evaluate_function operators
    step_start_us: np.ndarray  # each step's host window (analysis/step_windows.py)
    step_end_us: np.ndarray
    operators: pd.DataFrame  # OPERATOR_COLUMNS, one row per top-level operator of the region threads, by row
    data_loading_rows: np.ndarray  # outermost DataLoader annotations of the region threads
    module_rows: np.ndarray  # int64, sorted: the module calls of the region threads
    module_paths: np.ndarray  # object: the path of each of `module_rows`

    def module_path(self, rows: np.ndarray) -> np.ndarray:
        """The path of each module call row; "" for any other row (or -1)."""
        return _path_of(self.module_rows, self.module_paths, rows)


def attribute(linked: LinkedTrace) -> Attribution:
    t = linked.table
    is_evaluate = _row_mask(linked, Kind.CPU_OP, lambda name: name.startswith(EVALUATE_PREFIX))
    markers = np.union1d(np.flatnonzero(linked.backward_of >= 0), np.flatnonzero(is_evaluate))
    step_thread = _step_thread(linked, markers)
    start_us, end_us = step_windows(linked)
    if step_thread < 0:
        empty = np.empty(0, np.int64)
        return Attribution(step_thread, empty, markers, start_us, end_us, _operators(*[empty] * 4, *[[]] * 3),
                           empty, empty, np.empty(0, dtype=object))
    marker_threads = np.unique(t.thread_id[markers])
    autograd_threads = marker_threads[marker_threads != step_thread]
    n = _nest_region(linked, np.concatenate(([step_thread], autograd_threads)).astype(np.int64))

    region_ops = np.flatnonzero(n.is_op & n.on)
    top = region_ops[n.inside(region_ops, n.is_op) < 0]
    dl = np.flatnonzero(n.is_dl & n.on)
    dl = dl[n.inside(dl, n.is_dl) < 0]
    module_rows = np.flatnonzero(n.is_mod & n.on)
    paths = _call_paths(t, n.parent, module_rows, n.is_mod)

    forward_row = _forward_of(linked, n.parent, top)
    backward = is_evaluate[top] | (forward_row >= 0) | np.isin(t.thread_id[top], autograd_threads)
    kind, key, phase = _parts(t, n, top, backward, forward_row,
                              lambda rows: _path_of(module_rows, paths, n.inside(rows, n.is_mod)))
    step = step_of(start_us, end_us, t.ts_us[top])
    operators = _operators(top, step, backward, forward_row, kind, key, phase)
    return Attribution(step_thread, autograd_threads, markers, start_us, end_us, operators, dl, module_rows, paths)


@dataclass(frozen=True)
class _Nesting:
    """The region threads' operators, module calls and annotations, nested
    by time (module docstring), with what each row is."""

    parent: np.ndarray  # int64 per EventTable row, -1 (and for every row not nested)
    on: np.ndarray  # bool per row: on a region thread
    is_op: np.ndarray
    is_mod: np.ndarray
    is_dl: np.ndarray
    is_opt: np.ndarray
    is_ann: np.ndarray  # every user annotation but the steps

    def inside(self, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The innermost row around each of `rows` for which `mask`, -1."""
        return nearest_marked_ancestor(self.parent, mask, self.parent[rows])


def _nest_region(linked: LinkedTrace, threads: np.ndarray) -> _Nesting:
    t = linked.table
    is_op = linked.is_host & (t.kind == Kind.CPU_OP)
    is_mod = _row_mask(linked, Kind.PYTHON_FUNCTION, is_module)
    is_ann = _row_mask(linked, Kind.USER_ANNOTATION, lambda n: not is_step(n))
    on = np.isin(t.thread_id, threads)
    nested = np.flatnonzero(on & (is_op | is_mod | is_ann))
    parent = np.full(len(t), -1, dtype=np.int64)
    parent[nested] = nest(t.thread_id, t.ts_us, t.dur_us, nested)[0]
    return _Nesting(parent, on, is_op, is_mod, _row_mask(linked, Kind.USER_ANNOTATION, is_data_loading),
                    _row_mask(linked, Kind.USER_ANNOTATION, is_optimizer), is_ann)


def _parts(t, n: _Nesting, top: np.ndarray, backward: np.ndarray, forward_row: np.ndarray,
           module_of) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind, key, phase) of each top-level operator: the first part that
    applies, in the order of the module docstring. `module_of(rows)`: the
    path of the innermost module call around each row, ""."""
    kind = np.full(len(top), UNKNOWN, dtype=object)
    key = np.full(len(top), UNKNOWN_NAME, dtype=object)
    phase = np.full(len(top), "", dtype=object)
    todo = np.ones(len(top), dtype=bool)

    def assign(mask: np.ndarray, kind_: str, key_, phase_: str = "") -> None:
        m = mask & todo
        kind[m], phase[m] = kind_, phase_
        key[m] = key_[m] if isinstance(key_, np.ndarray) else key_
        todo[m] = False

    # Data loading annotations count whole (in the ledger): operators inside them are theirs.
    assign(n.inside(top, n.is_dl) >= 0, DATA_LOADING, DATA_LOADING_NAME)
    # Backward: the module of its forward operator, else unattributed.
    forward_module = np.full(len(top), "", dtype=object)
    linked_fwd = forward_row >= 0
    forward_module[linked_fwd] = module_of(forward_row[linked_fwd])
    assign(backward & (forward_module != ""), MODULE, forward_module, BACKWARD_PHASE)
    assign(backward, BACKWARD, UNATTRIBUTED_BACKWARD_NAME)
    # Forward and everything else: the innermost module, else the annotation.
    own_module = module_of(top)
    assign(own_module != "", MODULE, own_module, FORWARD)
    assign(n.inside(top, n.is_opt) >= 0, OPTIMIZER, OPTIMIZER)
    assign(name_mask(t, top, is_host_collective), COMMUNICATION, COMMUNICATION)
    rest = np.flatnonzero(todo)
    ann = n.inside(top[rest], n.is_ann)
    ann_name = np.full(len(top), "", dtype=object)
    ann_name[rest[ann >= 0]] = t.names(t.name_id[ann[ann >= 0]])
    assign(ann_name != "", ANNOTATION, ann_name)
    return kind, key, phase


def _operators(row, step, backward, forward_row, kind, key, phase) -> pd.DataFrame:
    columns = (np.asarray(row, np.int64), np.asarray(step, np.int64), np.asarray(backward, bool),
               np.asarray(forward_row, np.int64), *(np.asarray(c, dtype=object) for c in (kind, key, phase)))
    return pd.DataFrame(dict(zip(OPERATOR_COLUMNS, columns)))


def _forward_of(linked: LinkedTrace, parent: np.ndarray, top: np.ndarray) -> np.ndarray:
    """For each of the top-level operators `top` (sorted): the forward
    operator of the first flow end inside it (by row), -1."""
    ends = np.flatnonzero(linked.backward_of >= 0)
    is_top = np.zeros(len(parent), dtype=bool)
    is_top[top] = True
    holder = nearest_marked_ancestor(parent, is_top, ends)
    ok = holder >= 0
    holders, first = np.unique(holder[ok], return_index=True)
    out = np.full(len(top), -1, dtype=np.int64)
    out[np.searchsorted(top, holders)] = linked.backward_of[ends[ok][first]]
    return out


def _path_of(module_rows: np.ndarray, paths: np.ndarray, rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.int64)
    out = np.full(len(rows), "", dtype=object)
    if len(module_rows) == 0:
        return out
    pos = np.minimum(np.searchsorted(module_rows, rows), len(module_rows) - 1)
    hit = module_rows[pos] == rows
    out[hit] = paths[pos[hit]]
    return out


def _row_mask(linked: LinkedTrace, kind: Kind, test) -> np.ndarray:
    t = linked.table
    rows = np.flatnonzero(linked.is_host & (t.kind == kind))
    mask = np.zeros(len(t), dtype=bool)
    mask[rows[name_mask(t, rows, test)]] = True
    return mask


# A path names at most this many calls at each end: deeper calls elide the
# middle (`A_0/B_1/… 19,936 levels …/Y_0/Z_1`), so a 20,000-deep chain of
# module calls costs O(n) path text, not O(n²) (gigabytes).
_PATH_END_LEVELS = 32


def _call_paths(t, parent: np.ndarray, module_rows: np.ndarray, is_mod: np.ndarray) -> np.ndarray:
    """`Outer_0/Inner_1` path of each of the module call rows `module_rows`
    (nesting of calls), as an object array; past 2 * _PATH_END_LEVELS
    levels, the first and last _PATH_END_LEVELS names and the number of
    levels between."""
    up = nearest_marked_ancestor(parent, is_mod, parent[module_rows])
    order = np.argsort(t.ts_us[module_rows], kind="stable")  # outer calls start first
    keep = _PATH_END_LEVELS
    paths: dict[int, str] = {}
    depth: dict[int, int] = {}
    head: dict[int, str] = {}  # deep calls: the path of their ancestor `keep` levels down from the top
    above: dict[int, int] = {}  # the enclosing call of each call seen
    name_of: dict[int, str] = {}
    for i in order.tolist():
        r = int(module_rows[i])
        name = name_of[r] = t.strings[t.name_id[r]][len(MODULE_PREFIX):]
        p = int(up[i])
        if p < 0 or p not in paths:
            paths[r], depth[r] = name, 0
            continue
        d = depth[r] = depth[p] + 1
        above[r] = p
        if d >= keep:
            head[r] = head[p]
        if d < 2 * keep:
            paths[r] = f"{paths[p]}/{name}"
            if d == keep - 1:
                head[r] = paths[r]
            continue
        tail, a = [name], p
        while len(tail) < keep:
            tail.append(name_of[a])
            a = above[a]
        paths[r] = f"{head[r]}/… {d + 1 - 2 * keep:,} levels …/{'/'.join(reversed(tail))}"
    return np.array([paths[r] for r in module_rows.tolist()], dtype=object)


def _step_thread(linked: LinkedTrace, markers: np.ndarray) -> int:
    """The thread of the step annotations; without them, the thread that
    holds the module calls / annotations (not an autograd thread)."""
    t = linked.table
    st = linked.steps
    if len(st.row) and st.row[0] >= 0:
        return int(t.thread_id[st.row[0]])
    host = np.flatnonzero(linked.is_host)
    if len(host) == 0:
        return -1
    threads = t.thread_id[host]
    n_threads = max(len(t.threads), int(threads.max()) + 1)
    marked = np.zeros(n_threads, dtype=bool)
    marked[t.thread_id[markers]] = True
    mine = np.bincount(threads, weights=np.isin(t.kind[host], (Kind.PYTHON_FUNCTION, Kind.USER_ANNOTATION)),
                       minlength=n_threads)
    top_time = np.bincount(threads, weights=np.where(linked.parent[host] < 0, t.dur_us[host], 0.0),
                           minlength=n_threads)
    present = np.bincount(threads, minlength=n_threads) > 0
    # Lexicographic: annotations/python first, then time at the top level;
    # a thread only running backward nodes loses ties against one that does not.
    order = np.lexsort((top_time, ~marked, mine, present))
    return int(order[-1])
