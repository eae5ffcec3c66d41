"""Cut one linked trace into comparable pieces, per step and per level.

A *piece* is a stretch of host time a user can name: a DataLoader fetch, a
top-level `nn.Module` call, the backward pass, an optimizer call, a user
annotation, or the time inside its parent that belongs to none of those
("unknown (not in any module)"). Pieces nest: a module's children are its
submodule calls (plus its own unknown time), a step's children are the
top-level pieces of that step.

Where the time is measured. Each trace has one *step thread* (the thread of
the `ProfilerStep#N` annotations) and zero or more *autograd threads*
(analysis/attribution.py): together the *region threads*. A piece is a time
interval; its numbers are read from the region threads inside that interval:

* `host_us`: the interval's length (wall time on the host);
* `device_us`: summed duration of kernels / memcpy / memset whose launching
  host event (`LinkedTrace.owner`) starts inside the interval;
* `calls`: operators (`cpu_op`, every nesting level) starting inside it.

Children never overlap on the step thread, so a parent's numbers are exactly
the sum of its children's plus its unknown piece's.

Backward work (detected once, in analysis/attribution.py, with the threads):
the backward markers on the step thread (`fwdbwd` flow ends and
`autograd::engine::evaluate_function: ...` operators), and every top-level
host event of an autograd thread (DDP's `nccl:all_reduce` hooks run there
too and are backward work).
Consecutive backward events of one parent form one `backward` piece spanning
from the first one's start to the last one's end, so the engine's own time
between nodes is counted as backward rather than unknown.

Step windows are the `ProfilerStep#N` annotations' own host intervals
(analysis/step_windows.py).
When one run has step annotations and the other has none, `whole_window`
merges the steps of the first into one `all` step, comparable with the
other's whole-trace `all` step.

Everything here is computed once per trace with sorts and binary searches
(`piece_index`, cache it with `TraceProcessor.memo`); children are cut on
demand, which costs a few binary searches per piece. A piece cut from one
event keeps its row (`Piece.row`): a module piece's identity in the ledger
is its call's path (`Attribution.module_path`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trace.link import LinkedTrace, has_step_annotations
from ..trace.names import (
    MODULE_PREFIX, OPTIMIZER_RE, data_loading_family, is_data_loading, is_module, is_optimizer, is_step, module_class,
    name_mask,
)
from ..trace.nesting import nest
from ..trace.table import DEVICE_ACTIVITY_KINDS, Kind, Phase
from .attribution import Attribution
from .compiled import compiled_modules
from .labels import (
    ANNOTATION, BACKWARD, BACKWARD_NAME, DATA_LOADING, MODULE, OPTIMIZER, STEP, UNKNOWN, UNKNOWN_NAME,
    WHOLE_TRACE_STEP,
)
from .step_windows import step_of

ATOM_KINDS = (STEP, DATA_LOADING, MODULE, BACKWARD, OPTIMIZER, ANNOTATION)
_CODE = {k: i for i, k in enumerate(ATOM_KINDS)}


@dataclass(frozen=True)
class Piece:
    kind: str
    name: str
    key: str  # alignment key: the module class (no `_N`), the annotation family
    step: int  # index of the profiled step it belongs to
    start_us: float
    end_us: float
    host_us: float
    device_us: float
    calls: int
    atom: int = -1  # index into PieceIndex atoms; -1 for backward groups and unknown
    row: int = -1  # EventTable row of the atom's event; -1 for the synthetic `all` step, groups and unknown
    gaps: tuple = ()  # unknown pieces: the ((start, end), ...) intervals they cover
    merged: tuple = ()  # `whole_window`: the step atoms it merges

    @property
    def intervals(self) -> tuple:
        # Unknown pieces, and pieces made of several (a compiled region's sides, diff/compiled_region.py), are
        # the intervals they cover.
        return self.gaps if self.kind == UNKNOWN or self.gaps else ((self.start_us, self.end_us),)


@dataclass
class Region:
    """Operators and device time of the region threads, sorted by start time,
    so any interval's numbers are two binary searches away."""

    op_ts: np.ndarray  # float64, sorted
    op_rows: np.ndarray  # int64, EventTable rows in op_ts order
    dev_ts: np.ndarray  # float64, sorted start of the owning host event
    dev_rows: np.ndarray  # int64, EventTable rows of the device activity, in dev_ts order
    dev_cum_us: np.ndarray  # float64, len(dev_ts) + 1 prefix sums of device durations

    def stats(self, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(device_us, calls) for each half-open interval [start, end)."""
        lo = np.searchsorted(self.op_ts, starts, side="left")
        hi = np.searchsorted(self.op_ts, ends, side="left")
        dlo = np.searchsorted(self.dev_ts, starts, side="left")
        dhi = np.searchsorted(self.dev_ts, ends, side="left")
        return self.dev_cum_us[dhi] - self.dev_cum_us[dlo], hi - lo

    def op_rows_in(self, intervals) -> np.ndarray:
        return _rows_in(self.op_ts, self.op_rows, intervals)

    def dev_rows_in(self, intervals) -> np.ndarray:
        """Device activity whose owning host event starts inside the intervals."""
        return _rows_in(self.dev_ts, self.dev_rows, intervals)


def _rows_in(ts: np.ndarray, rows: np.ndarray, intervals) -> np.ndarray:
    parts = []
    for start, end in intervals:
        lo, hi = np.searchsorted(ts, [start, end], side="left")
        parts.append(rows[lo:hi])
    return np.concatenate(parts) if parts else np.empty(0, np.int64)



@dataclass(eq=False)  # identity: an index is a cache key (modules.children)
class PieceIndex:
    # Atoms: the events pieces are made of (steps, annotations, module calls,
    # backward events), nested by time as if they were on one thread.
    kind: np.ndarray  # int8 code into ATOM_KINDS
    name: np.ndarray  # object
    key: np.ndarray  # object
    start_us: np.ndarray
    end_us: np.ndarray
    step: np.ndarray  # int64 step index, -1 outside the profiled steps
    row: np.ndarray  # int64 EventTable row of each atom's event, -1 for the synthetic `all` step
    child_ptr: np.ndarray  # children of atom a: child_idx[child_ptr[a]:child_ptr[a + 1]], by start
    child_idx: np.ndarray
    step_atoms: np.ndarray  # atom index of each step, in step order
    region: Region
    step_thread: int  # EventTable thread id, -1 for an empty trace
    autograd_threads: np.ndarray  # EventTable thread ids
    has_steps: bool  # ProfilerStep annotations; else one synthetic `all` step
    # Module call rows, sorted, of modules that ran torch.compile's code (analysis/compiled.py).
    compiled_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False)
    def is_compiled(self, piece: "Piece") -> bool:
        """The piece is a call of a module that ran compiled."""
        return piece.kind == MODULE and piece.row >= 0 and _sorted_contains(self.compiled_rows, piece.row)

    def pieces(self, atoms: np.ndarray) -> list[Piece]:
        starts, ends = self.start_us[atoms], self.end_us[atoms]
        device, calls = self.region.stats(starts, ends)
        return [
            Piece(
                kind=ATOM_KINDS[self.kind[a]], name=self.name[a], key=self.key[a], step=int(self.step[a]),
                start_us=float(s), end_us=float(e), host_us=float(e - s), device_us=float(d), calls=int(c), atom=int(a),
                row=int(r),
            )
            for a, r, s, e, d, c in zip(atoms.tolist(), self.row[atoms].tolist(), starts, ends, device, calls)
        ]

    def has_children(self, piece: Piece) -> bool:
        """Steps always split (at least into their unknown time); other
        pieces when they hold child atoms; backward and unknown never."""
        if piece.merged:
            return True
        a = piece.atom
        if a < 0 or self.kind[a] == _CODE[BACKWARD]:
            return False
        return bool(self.kind[a] == _CODE[STEP] or self.child_ptr[a + 1] > self.child_ptr[a])


def steps(index: PieceIndex) -> list[Piece]:
    """One piece per profiled step, in step order."""
    return index.pieces(index.step_atoms)


def whole_window(index: PieceIndex) -> Piece:
    """Every step of the trace as one `all` step, from the first step's start
    to the last one's end (the time between steps is its unknown time): the
    counterpart of a trace without steps, whose `all` step is the whole trace."""
    steps_ = steps(index)
    start = min((s.start_us for s in steps_), default=0.0)
    end = max((s.end_us for s in steps_), default=0.0)
    device, calls = index.region.stats(np.array([start]), np.array([end]))
    return Piece(
        kind=STEP, name=WHOLE_TRACE_STEP, key=STEP, step=0, start_us=start, end_us=end, host_us=end - start,
        device_us=float(device[0]), calls=int(calls[0]), merged=tuple(int(a) for a in index.step_atoms),
    )


def children(index: PieceIndex, parent: Piece) -> list[Piece]:
    """The pieces inside `parent`, in execution order, then its unknown piece.

    Empty for pieces that cannot be cut further (backward, unknown, leaf
    module calls)."""
    if not index.has_children(parent):
        return []
    if parent.merged:
        out = [p for s in index.pieces(np.array(parent.merged, dtype=np.int64)) for p in _inside(index, s)]
    else:
        out = _inside(index, parent)
    out.append(unknown_piece(index, parent, out))
    return out


def _inside(index: PieceIndex, parent: Piece) -> list[Piece]:
    """The pieces directly inside `parent`, in execution order."""
    a = parent.atom
    kids = index.child_idx[index.child_ptr[a] : index.child_ptr[a + 1]]
    is_bwd = index.kind[kids] == _CODE[BACKWARD]
    singles = iter(index.pieces(kids[~is_bwd]))
    # Runs of consecutive backward atoms become one backward piece each.
    run_starts = np.flatnonzero(is_bwd & ~np.concatenate(([False], is_bwd[:-1])))
    run_ends = np.flatnonzero(is_bwd & ~np.concatenate((is_bwd[1:], [False]))) + 1
    runs = iter(_backward_runs(index, kids, run_starts, run_ends, parent))
    out: list[Piece] = []
    i = 0
    while i < len(kids):
        if is_bwd[i]:
            out.append(next(runs))
            while i < len(kids) and is_bwd[i]:
                i += 1
        else:
            out.append(next(singles))
            i += 1
    return out


def op_rows(index: PieceIndex, piece: Piece) -> np.ndarray:
    """Operator rows inside a piece (for the per-piece operator table)."""
    return index.region.op_rows_in(piece.intervals)


def device_rows(index: PieceIndex, piece: Piece) -> np.ndarray:
    """Kernel / memcpy / memset rows whose time the piece's `device_us`
    counts (for the per-piece kernel table)."""
    return index.region.dev_rows_in(piece.intervals)


def _backward_runs(index: PieceIndex, kids: np.ndarray, run_starts: np.ndarray, run_ends: np.ndarray,
                   parent: Piece) -> list[Piece]:
    if len(run_starts) == 0:
        return []
    starts = np.minimum.reduceat(index.start_us[kids], run_starts)
    ends = np.array([index.end_us[kids[a:b]].max() for a, b in zip(run_starts, run_ends)])
    # Backward on an autograd thread can outlast the annotation that waits for
    # it by a rounding error; keep pieces inside their parent.
    starts = np.clip(starts, parent.start_us, parent.end_us)
    ends = np.clip(ends, parent.start_us, parent.end_us)
    device, calls = index.region.stats(starts, ends)
    return [
        Piece(kind=BACKWARD, name=BACKWARD_NAME, key=BACKWARD, step=parent.step, start_us=float(s), end_us=float(e),
              host_us=float(e - s), device_us=float(d), calls=int(c))
        for s, e, d, c in zip(starts, ends, device, calls)
    ]


def unknown_piece(index: PieceIndex, parent: Piece, kids: list[Piece]) -> Piece:
    """The parent's time outside every child in `kids`: the gaps between them."""
    s0, e0 = parent.start_us, parent.end_us
    starts = np.clip(np.array([k.start_us for k in kids], dtype=np.float64), s0, e0)
    ends = np.clip(np.array([k.end_us for k in kids], dtype=np.float64), s0, e0)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    covered_to = np.maximum.accumulate(ends) if len(ends) else ends
    gap_starts = np.concatenate(([s0], covered_to))
    gap_ends = np.concatenate((starts, [e0]))
    keep = gap_ends > gap_starts
    gap_starts, gap_ends = gap_starts[keep], gap_ends[keep]
    device, calls = index.region.stats(gap_starts, gap_ends)
    return Piece(
        kind=UNKNOWN, name=UNKNOWN_NAME, key=UNKNOWN, step=parent.step, start_us=s0, end_us=e0,
        host_us=float((gap_ends - gap_starts).sum()), device_us=float(device.sum()), calls=int(calls.sum()),
        gaps=tuple(zip(gap_starts.tolist(), gap_ends.tolist())),
    )


# ---------------------------------------------------------------- building


def piece_index(linked: LinkedTrace, attribution: Attribution) -> PieceIndex:
    t = linked.table
    host = linked.is_host
    markers = attribution.backward_markers
    step_thread, autograd_threads = attribution.step_thread, attribution.autograd_threads
    if step_thread < 0:
        return _empty_index(linked, attribution)
    on_step = host & (t.thread_id == step_thread)

    kind_of_row = np.full(len(t), -1, dtype=np.int8)
    # Annotations and module calls on the step thread.
    named = np.flatnonzero(on_step & (t.kind == Kind.USER_ANNOTATION))
    kind_of_row[named] = _annotation_kinds(t, named)
    py = np.flatnonzero(on_step & (t.kind == Kind.PYTHON_FUNCTION))
    kind_of_row[py[name_mask(t, py, is_module)]] = _CODE[MODULE]
    # Backward: markers on the step thread, top-level events on autograd
    # threads; a marker that is also an annotation is backward work first.
    top_autograd = np.flatnonzero(host & np.isin(t.thread_id, autograd_threads) & (linked.parent < 0))
    kind_of_row[np.union1d(markers[t.thread_id[markers] == step_thread], top_autograd)] = _CODE[BACKWARD]
    # ProfilerStep annotations are the steps themselves, never pieces.
    kind_of_row[linked.steps.row[linked.steps.row >= 0]] = -1

    atom_rows = np.flatnonzero(kind_of_row >= 0)
    st = linked.steps
    n_steps = len(st.name)
    step_start, step_end = attribution.step_start_us, attribution.step_end_us
    # Steps are the top level. An atom belongs to the step its start falls
    # in and is clipped to that step's window; atoms starting outside every
    # step (an `epoch` annotation around the loop, the gap between steps)
    # are not pieces. So no piece holds a later step, and no time is counted
    # in two steps.
    a_start = t.ts_us[atom_rows]
    a_end = a_start + t.dur_us[atom_rows]
    a_step = step_of(step_start, step_end, a_start)
    inside = a_step >= 0
    atom_rows, a_start, a_end, a_step = atom_rows[inside], a_start[inside], a_end[inside], a_step[inside]
    a_end = np.maximum(a_start, np.minimum(a_end, step_end[a_step]))
    n = n_steps + len(atom_rows)
    kind = np.concatenate((np.full(n_steps, _CODE[STEP], np.int8), kind_of_row[atom_rows]))
    start = np.concatenate((step_start, a_start))
    row = np.concatenate((np.asarray(st.row, np.int64), atom_rows))
    name = np.empty(n, dtype=object)
    key = np.empty(n, dtype=object)
    name[:n_steps] = st.name
    key[:n_steps] = STEP
    name[n_steps:], key[n_steps:] = _labels(t, kind_of_row[atom_rows], t.name_id[atom_rows])

    # Nest by time, per step, on one virtual thread: autograd-thread work
    # lands under the step-thread piece that was waiting for it
    # (`## backward ##`, the step). Top-level atoms are the step's children.
    local_parent, depth = nest(a_step, a_start, a_end - a_start, np.arange(len(atom_rows), dtype=np.int64))
    # A child a rounding error (or an autograd event) longer than its parent
    # is clipped to it, parents first, so children always add up.
    # Level by level from one sort: a scan per level would cost O(n * depth).
    by_depth = np.argsort(depth, kind="stable")
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(depth[by_depth])) + 1, [len(depth)]))
    for a, b in zip(cuts[:-1], cuts[1:]):
        at = by_depth[a:b]
        at = at[depth[at] > 0]
        up = local_parent[at]
        a_end[at] = np.maximum(a_start[at], np.minimum(a_end[at], a_end[up]))
    end = np.concatenate((step_end, a_end))
    parent = np.concatenate((np.full(n_steps, -1, np.int64), np.where(local_parent >= 0, local_parent + n_steps, a_step)))
    atom_step = np.concatenate((np.arange(n_steps, dtype=np.int64), a_step))
    child_ptr, child_idx = _children_csr(parent, start, n)
    region = _region(linked, np.concatenate(([step_thread], autograd_threads)))
    return PieceIndex(
        kind=kind, name=name, key=key, start_us=start, end_us=end, step=atom_step, row=row,
        child_ptr=child_ptr, child_idx=child_idx, step_atoms=np.arange(n_steps, dtype=np.int64),
        region=region, step_thread=int(step_thread), autograd_threads=autograd_threads,
        has_steps=has_step_annotations(linked.steps), compiled_rows=_compiled_rows(linked, attribution),
    )


def _compiled_rows(linked: LinkedTrace, attribution: Attribution) -> np.ndarray:
    paths = compiled_modules(linked, attribution)
    if not paths:
        return np.empty(0, np.int64)
    keep = np.isin(attribution.module_paths.astype(str), list(paths))
    return np.sort(attribution.module_rows[keep])


def _sorted_contains(sorted_rows: np.ndarray, row: int) -> bool:
    i = np.searchsorted(sorted_rows, row)
    return bool(i < len(sorted_rows) and sorted_rows[i] == row)


def _annotation_kinds(t, rows: np.ndarray) -> np.ndarray:
    """Kind code per row (-1: not a piece) for DataLoader, optimizer and
    other user annotations (2021 traces' `Operator`-category DataLoader and
    optimizer events arrive here already reclassified by the decoder)."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int8)
    uniq, inverse = np.unique(t.name_id[rows], return_inverse=True)
    codes = np.array([_annotation_code(t.strings[i] if i >= 0 else "") for i in uniq.tolist()], dtype=np.int8)
    return codes[inverse]


def _annotation_code(text: str) -> int:
    if is_data_loading(text):
        return _CODE[DATA_LOADING]
    if is_optimizer(text):
        return _CODE[OPTIMIZER]
    return -1 if is_step(text) else _CODE[ANNOTATION]


def _labels(t, kinds: np.ndarray, name_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(display name, alignment key) per atom, computed once per distinct
    (kind, name): `Linear_0` / `Linear` for modules, the annotation and its
    family (`Optimizer.step#SGD.step` / `Optimizer.step`), `backward`."""
    if len(kinds) == 0:
        return np.empty(0, dtype=object), np.empty(0, dtype=object)
    pair = kinds.astype(np.int64) * (len(t.strings) + 1) + (name_ids.astype(np.int64) + 1)
    uniq, inverse = np.unique(pair, return_inverse=True)
    labels = [_label(ATOM_KINDS[int(k)], t.strings[i] if i >= 0 else "")
              for k, i in zip((uniq // (len(t.strings) + 1)).tolist(), (uniq % (len(t.strings) + 1) - 1).tolist())]
    names = np.empty(len(labels), dtype=object)
    keys = np.empty(len(labels), dtype=object)
    names[:] = [n for n, _ in labels]
    keys[:] = [k for _, k in labels]
    return names[inverse], keys[inverse]


def _label(kind: str, text: str) -> tuple[str, str]:
    if kind == BACKWARD:
        return BACKWARD_NAME, BACKWARD
    if kind == MODULE:
        name = text[len(MODULE_PREFIX):]
        return name, module_class(name)
    if kind == DATA_LOADING:
        return text, data_loading_family(text) or text
    m = OPTIMIZER_RE.match(text) if kind == OPTIMIZER else None
    return text, m.group(1) if m else text


def _children_csr(parent: np.ndarray, start: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    has = np.flatnonzero(parent >= 0)
    order = np.lexsort((start[has], parent[has]))
    child_idx = has[order]
    counts = np.bincount(parent[has], minlength=n)
    child_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return child_ptr, child_idx


def _region(linked: LinkedTrace, threads: np.ndarray) -> Region:
    t = linked.table
    complete = t.phase == Phase.COMPLETE
    in_region = np.isin(t.thread_id, threads)
    ops = np.flatnonzero(complete & (t.kind == Kind.CPU_OP) & in_region)
    ops = ops[~np.isin(ops, linked.folded_rows)]  # one call, as in the operator table
    order = np.argsort(t.ts_us[ops], kind="stable")
    dev = np.flatnonzero(complete & np.isin(t.kind, DEVICE_ACTIVITY_KINDS) & (linked.owner >= 0))
    owner = linked.owner[dev]
    keep = in_region[owner]
    dev, owner = dev[keep], owner[keep]
    dorder = np.argsort(t.ts_us[owner], kind="stable")
    return Region(
        op_ts=t.ts_us[ops][order], op_rows=ops[order],
        dev_ts=t.ts_us[owner][dorder], dev_rows=dev[dorder],
        dev_cum_us=np.concatenate(([0.0], np.cumsum(t.dur_us[dev][dorder]))),
    )


def _empty_index(linked: LinkedTrace, attribution: Attribution) -> PieceIndex:
    st = linked.steps
    n = len(st.name)
    name = np.empty(n, dtype=object)
    name[:] = st.name
    key = np.full(n, STEP, dtype=object)
    empty_f, empty_i = np.empty(0), np.empty(0, np.int64)
    start, end = attribution.step_start_us.copy(), attribution.step_end_us.copy()
    return PieceIndex(
        kind=np.full(n, _CODE[STEP], np.int8), name=name, key=key, start_us=start,
        end_us=end, step=np.arange(n, dtype=np.int64), row=np.asarray(st.row, np.int64), child_ptr=np.zeros(n + 1, np.int64),
        child_idx=empty_i, step_atoms=np.arange(n, dtype=np.int64),
        region=Region(empty_f, empty_i, empty_f, empty_i, np.zeros(1)), step_thread=-1, autograd_threads=empty_i,
        has_steps=has_step_annotations(linked.steps),
    )
