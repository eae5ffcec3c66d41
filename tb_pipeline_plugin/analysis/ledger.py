"""Where each step's time went, per step: the samples the explanation and
the significance of every step-level delta rest on.

Every microsecond of a step's host window (its `ProfilerStep#N` annotation,
as in analysis/pieces.py) goes to exactly one *part*:

* `data_loading`: inside an `enumerate(DataLoader)` annotation (all of it,
  Python included: a data loader is Python by nature);
* `module` (key: the module path, `Net_0/Sequential_0/Block_2`): operators
  whose innermost enclosing `nn.Module` call is that module, `phase`
  `forward`; and backward operators whose forward operator ran inside it
  (`fwdbwd` flows), `phase` `backward`;
* `backward`: backward operators that cannot be linked to a forward
  operator inside a module (`AccumulateGrad`, the loss's backward);
* `optimizer`: operators inside `Optimizer.step` / `Optimizer.zero_grad`;
* `communication`: host collectives (`nccl:*`, `c10d::*`, ...);
* `annotation` (key: its name): operators inside any other user annotation;
* `unknown`: operators outside all of the above (a loss computed outside
  any module);
* `host`: the rest of the window: time on the step and autograd threads
  covered by no operator (Python between operators, framework overhead, a
  thread waiting for the GIL), computed as the window minus every part
  above, so that the parts add up to the step exactly;
* `device`: the overview's step time minus the host window (GPU work
  outlasting the host step; 0 on CPU-only traces).

`stall_us`, beside `us`: the part of an operator's time spent stalled. A
top-level call that takes more than `STALL_FACTOR` times its usual time,
and at least `STALL_MIN_US` more, was waiting inside the operator rather
than working: for the GIL (a tensor freed in C++ needs it), for a full
launch queue or a device sync, or preempted. Its time above the usual is
its stall. The usual time is the lower quartile of the same call over the
run's steps (the k-th call of its name in a step; at least
`STALL_MIN_CALLS` steps): the same call, because calls of one name differ
by shape; a quartile, so that a call that stalls in most steps keeps its
working time. A thread holding the GIL in 10 ms stretches shows as 10 ms
stalls. 0 for the parts that are not operators (data loading is whole,
host, device).

Operators are the *top-level* operators (no enclosing operator) of the
region threads (the step thread and the autograd threads). A backward
operator is an `autograd::engine::evaluate_function: ...` operator, one
holding a `fwdbwd` flow end, or any top-level operator of an autograd
thread; its forward operator is that of the flow end inside it.

The parts of a step add up to the overview's step time. `host` is exactly
the time no operator covers when the region threads never run operators at
the same time (CPU training: the autograd engine runs on the calling
thread); where they overlap (GPU backward on its own thread while the step
thread is inside an operator), the overlapping operators are counted in
each of their parts and `host` is that much smaller.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from ..trace.names import (
    EVALUATE_PREFIX, MODULE_PREFIX, is_data_loading, is_host_collective, is_module, is_optimizer, is_step, name_mask,
)
from ..trace.nesting import nest
from ..trace.table import Kind
from .overview import step_breakdown
from .pieces import PieceIndex, step_of

FORWARD, BACKWARD_PHASE = "forward", "backward"
STALL_FACTOR = 3.0
STALL_MIN_US = 1000.0
STALL_MIN_CALLS = 3
USUAL_PERCENTILE = 25
PART_KINDS = ("data_loading", "module", "backward", "optimizer", "communication", "annotation", "unknown", "host",
              "device")
_NONE = -1


@dataclass(frozen=True)
class StepLedger:
    """`steps`: one row per step (step, name, step_us: the overview's step
    time, host_us: the host window). `parts`: long form, one row per (step,
    kind, key, phase) with `us` and the `stall_us` within it; a step's parts
    sum to its `step_us`."""

    steps: pd.DataFrame
    parts: pd.DataFrame


def step_ledger(linked: LinkedTrace, index: PieceIndex) -> StepLedger:
    t = linked.table
    st = linked.steps
    n_steps = len(st.name)
    win_start = index.start_us[index.step_atoms].astype(np.float64)
    win_end = index.end_us[index.step_atoms].astype(np.float64)
    overview_us = step_breakdown(linked)["duration_us"].to_numpy(np.float64)
    steps = pd.DataFrame({
        "step": np.arange(n_steps), "name": list(st.name), "step_us": overview_us, "host_us": win_end - win_start,
    })
    records: list[pd.DataFrame] = []
    if index.step_thread >= 0 and n_steps:
        threads = np.concatenate(([index.step_thread], index.autograd_threads)).astype(np.int64)
        records += _operator_parts(linked, threads, index.autograd_threads, win_start, win_end)
        attributed = np.zeros(n_steps)
        for r in records:
            np.add.at(attributed, r["step"].to_numpy(), r["us"].to_numpy())
        # The rest of the window: what no operator covers, so that the parts
        # add up to the step exactly (less where threads overlap, see above).
        records.append(_frame(np.arange(n_steps), "host", "host", "", (win_end - win_start) - attributed))
    else:  # no host events to attribute: the whole window is unexplained host time
        records.append(_frame(np.arange(n_steps), "host", "host", "", win_end - win_start))
    records.append(_frame(np.arange(n_steps), "device", "device", "", overview_us - (win_end - win_start)))
    parts = pd.concat(records, ignore_index=True)
    parts = parts.groupby(["step", "kind", "key", "phase"], as_index=False, sort=False)[["us", "stall_us"]].sum()
    return StepLedger(steps=steps, parts=parts)


def _frame(step, kind, key, phase, us, stall_us=0.0) -> pd.DataFrame:
    us = np.asarray(us, np.float64)
    return pd.DataFrame({"step": np.asarray(step, np.int64), "kind": kind, "key": key, "phase": phase,
                         "us": us, "stall_us": np.broadcast_to(np.asarray(stall_us, np.float64), us.shape)})


def stalls(name_id: np.ndarray, step: np.ndarray, ts_us: np.ndarray, dur_us: np.ndarray) -> np.ndarray:
    """Each call's stall (module docstring). A call is compared with the same
    call in the other steps, the k-th call of its name in its step: steps
    repeat one sequence of operators, and calls of one name differ by shape
    (a block 4x as wide is not stalled, it is wider)."""
    out = np.zeros(len(dur_us))
    if not len(dur_us):
        return out
    order = np.lexsort((ts_us, name_id, step))
    key_step, key_name = step[order], name_id[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = (key_step[1:] != key_step[:-1]) | (key_name[1:] != key_name[:-1])
    starts = np.flatnonzero(new_group)
    ordinal = np.empty(len(order), dtype=np.int64)
    ordinal[order] = np.arange(len(order)) - np.repeat(starts, np.diff(np.append(starts, len(order))))
    calls = np.stack([name_id.astype(np.int64), ordinal], axis=1)
    _, inverse, counts = np.unique(calls, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    # The quartile of every call at once (numpy's linear interpolation):
    # a Python loop per call would cost a GPU trace's 10k distinct calls.
    ranked = dur_us[np.lexsort((dur_us, inverse))]
    group_start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pos = group_start + (counts - 1) * (USUAL_PERCENTILE / 100.0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, group_start + counts - 1)
    usual = ranked[lo] + (ranked[hi] - ranked[lo]) * (pos - lo)
    m = usual[inverse]
    stalled = (counts[inverse] >= STALL_MIN_CALLS) & (dur_us > STALL_FACTOR * m) & (dur_us - m >= STALL_MIN_US)
    out[stalled] = (dur_us - m)[stalled]
    return out


def _ancestors(parent: np.ndarray, rows: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Innermost strict ancestor of each row for which `want[ancestor]`, -1."""
    out = np.full(len(rows), _NONE, dtype=np.int64)
    cur = parent[rows].copy()
    todo = np.flatnonzero(cur >= 0)
    while len(todo):
        hit = want[cur[todo]]
        out[todo[hit]] = cur[todo[hit]]
        todo = todo[~hit]
        cur[todo] = parent[cur[todo]]
        todo = todo[cur[todo] >= 0]
    return out


def _outermost(parent: np.ndarray, rows: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Outermost ancestor-or-self of each row for which `want`, -1."""
    out = np.where(want[rows], rows, _NONE)
    cur = parent[rows].copy()
    todo = np.flatnonzero(cur >= 0)
    while len(todo):
        hit = want[cur[todo]]
        out[todo[hit]] = cur[todo[hit]]
        cur[todo] = parent[cur[todo]]
        todo = todo[cur[todo] >= 0]
    return out


def _row_mask(linked: LinkedTrace, kind: Kind, test) -> np.ndarray:
    t = linked.table
    rows = np.flatnonzero(linked.is_host & (t.kind == kind))
    mask = np.zeros(len(t), dtype=bool)
    mask[rows[name_mask(t, rows, test)]] = True
    return mask


def module_paths(t, parent: np.ndarray, module_rows: np.ndarray, is_mod: np.ndarray) -> dict[int, str]:
    """`Outer_0/Inner_1` path of each module call row (nesting of calls)."""
    up = _ancestors(parent, module_rows, is_mod)
    order = np.argsort(t.ts_us[module_rows], kind="stable")  # outer calls start first
    paths: dict[int, str] = {}
    for i in order.tolist():
        r = int(module_rows[i])
        name = t.strings[t.name_id[r]][len(MODULE_PREFIX):]
        p = int(up[i])
        paths[r] = f"{paths[p]}/{name}" if p >= 0 and p in paths else name
    return paths


def _operator_parts(linked: LinkedTrace, threads: np.ndarray, autograd_threads: np.ndarray,
                    win_start: np.ndarray, win_end: np.ndarray) -> list[pd.DataFrame]:
    t = linked.table
    is_op = linked.is_host & (t.kind == Kind.CPU_OP)
    is_mod = _row_mask(linked, Kind.PYTHON_FUNCTION, is_module)
    is_dl = _row_mask(linked, Kind.USER_ANNOTATION, is_data_loading)
    is_opt = _row_mask(linked, Kind.USER_ANNOTATION, is_optimizer)
    is_ann = _row_mask(linked, Kind.USER_ANNOTATION, lambda n: not is_step(n))
    # Nest operators, module calls and annotations by time alone: the other
    # Python stack events can be recorded with imprecise ends (a
    # `record_function.__enter__` enclosing the optimizer step) and would put
    # an annotation beside, not around, its operators.
    on = np.isin(t.thread_id, threads)
    nested = np.flatnonzero(on & (is_op | is_mod | is_ann))
    parent = np.full(len(t), _NONE, dtype=np.int64)
    parent[nested] = nest(t.thread_id, t.ts_us, t.dur_us, nested)[0]
    ops = np.flatnonzero(is_op & on)
    top = ops[_ancestors(parent, ops, is_op) < 0]
    out: list[pd.DataFrame] = []

    # Data loading annotations count whole; operators inside them are theirs.
    dl = np.flatnonzero(is_dl & np.isin(t.thread_id, threads))
    dl = dl[_ancestors(parent, dl, is_dl) < 0]
    dl_step = step_of(win_start, win_end, t.ts_us[dl])
    keep = dl_step >= 0
    dl, dl_step = dl[keep], dl_step[keep]
    out.append(_frame(dl_step, "data_loading", "data loading", "", _clipped_dur(t, dl, win_end[dl_step])))
    top = top[_ancestors(parent, top, is_dl) < 0]

    step = step_of(win_start, win_end, t.ts_us[top])
    top, step = top[step >= 0], step[step >= 0]
    dur = _clipped_dur(t, top, win_end[step])
    stall = np.minimum(stalls(t.name_id[top], step, t.ts_us[top], dur), dur)

    # Backward operators and the forward operator each was created by.
    bwd_rows = np.flatnonzero(linked.backward_of >= 0)
    fwd_of_top = np.full(len(t), _NONE, dtype=np.int64)
    if len(bwd_rows):
        holder = _outermost(parent, bwd_rows, is_op)
        ok = holder >= 0
        # Reversed so that the first flow end inside an operator wins.
        fwd_of_top[holder[ok][::-1]] = linked.backward_of[bwd_rows[ok]][::-1]
    evaluate = name_mask(t, top, lambda n: n.startswith(EVALUATE_PREFIX))
    is_bwd = evaluate | (fwd_of_top[top] >= 0) | np.isin(t.thread_id[top], autograd_threads)

    mod_rows = np.flatnonzero(is_mod)
    paths = module_paths(t, parent, mod_rows[on[mod_rows]], is_mod)

    def module_key(rows: np.ndarray) -> np.ndarray:
        m = _ancestors(parent, rows, is_mod)
        return np.array([paths.get(int(x), "") if x >= 0 else "" for x in m.tolist()], dtype=object)

    # Backward: the module of its forward operator, else unattributed.
    b = np.flatnonzero(is_bwd)
    fwd = fwd_of_top[top[b]]
    key = np.full(len(b), "", dtype=object)
    linked_fwd = fwd >= 0
    key[linked_fwd] = module_key(fwd[linked_fwd])
    attributed = key != ""
    out.append(_frame(step[b][attributed], "module", key[attributed], BACKWARD_PHASE, dur[b][attributed],
                      stall[b][attributed]))
    out.append(_frame(step[b][~attributed], "backward", "backward (unattributed)", "", dur[b][~attributed],
                      stall[b][~attributed]))

    # Forward and everything else: the innermost module, else the annotation.
    f = np.flatnonzero(~is_bwd)
    rows = top[f]
    key = module_key(rows)
    in_mod = key != ""
    out.append(_frame(step[f][in_mod], "module", key[in_mod], FORWARD, dur[f][in_mod], stall[f][in_mod]))
    rest, rstep, rdur, rstall = rows[~in_mod], step[f][~in_mod], dur[f][~in_mod], stall[f][~in_mod]
    opt = _ancestors(parent, rest, is_opt) >= 0
    comm = name_mask(t, rest, is_host_collective) & ~opt
    out.append(_frame(rstep[opt], "optimizer", "optimizer", "", rdur[opt], rstall[opt]))
    out.append(_frame(rstep[comm], "communication", "communication", "", rdur[comm], rstall[comm]))
    other = ~opt & ~comm
    ann = _ancestors(parent, rest[other], is_ann)
    names = np.array([t.strings[t.name_id[a]] if a >= 0 else "" for a in ann.tolist()], dtype=object)
    has = names != ""
    out.append(_frame(rstep[other][has], "annotation", names[has], "", rdur[other][has], rstall[other][has]))
    out.append(_frame(rstep[other][~has], "unknown", "unknown (not in any module)", "", rdur[other][~has],
                      rstall[other][~has]))
    return out


def _clipped_dur(t, rows: np.ndarray, end: np.ndarray) -> np.ndarray:
    return np.maximum(np.minimum(t.ts_us[rows] + t.dur_us[rows], end) - t.ts_us[rows], 0.0)


def spikiness(step_us: np.ndarray) -> dict:
    """Per-step variation of a run: coefficient of variation (%, sample
    standard deviation over the mean) and the worst step over the median.
    None where undefined (fewer than 2 steps, a mean or median of 0)."""
    x = np.asarray(step_us, dtype=np.float64)
    if len(x) < 2:
        return {"steps": int(len(x)), "cv_pct": None, "worst_to_median": None}
    mean, median = float(x.mean()), float(np.median(x))
    return {
        "steps": int(len(x)),
        "cv_pct": round(100.0 * float(x.std(ddof=1)) / mean, 2) if mean > 0 else None,
        "worst_to_median": round(float(x.max()) / median, 3) if median > 0 else None,
    }


def merged(ledger: StepLedger) -> StepLedger:
    """All steps as one `all` step (sums): the counterpart of a trace without
    step annotations, whose one step is the whole trace."""
    steps = pd.DataFrame({"step": [0], "name": ["all"], "step_us": [float(ledger.steps["step_us"].sum())],
                          "host_us": [float(ledger.steps["host_us"].sum())]})
    parts = ledger.parts.assign(step=0).groupby(["step", "kind", "key", "phase"], as_index=False,
                                                sort=False)[["us", "stall_us"]].sum()
    return StepLedger(steps=steps, parts=parts)


@dataclass(frozen=True)
class BackwardIndex:
    """The backward operators linked to a forward operator (top-level
    operators holding a `fwdbwd` flow end, as in the ledger), by their
    forward operator's start: any forward interval's backward time is two
    binary searches away."""

    fwd_ts: np.ndarray  # sorted start of each backward operator's forward operator
    cum_us: np.ndarray  # len(fwd_ts) + 1 prefix sums of the backward operators' durations

    def within(self, intervals) -> float:
        """Backward time of the forward operators starting inside `intervals` ([start, end) pairs)."""
        total = 0.0
        for start, end in intervals:
            lo, hi = np.searchsorted(self.fwd_ts, [start, end], side="left")
            total += float(self.cum_us[hi] - self.cum_us[lo])
        return total


def backward_index(linked: LinkedTrace, index: PieceIndex) -> BackwardIndex:
    t = linked.table
    if index.step_thread < 0:
        return BackwardIndex(np.empty(0), np.zeros(1))
    threads = np.concatenate(([index.step_thread], index.autograd_threads)).astype(np.int64)
    is_op = linked.is_host & (t.kind == Kind.CPU_OP)
    ops = np.flatnonzero(is_op & np.isin(t.thread_id, threads))
    parent = np.full(len(t), _NONE, dtype=np.int64)
    parent[ops] = nest(t.thread_id, t.ts_us, t.dur_us, ops)[0]
    ends = ops[linked.backward_of[ops] >= 0]
    holder = _outermost(parent, ends, is_op)
    fwd_of = {}
    for h, f in zip(holder.tolist(), linked.backward_of[ends].tolist()):
        fwd_of.setdefault(h, f)  # the first flow end inside an operator wins, as in the ledger
    rows = np.array(list(fwd_of), dtype=np.int64)
    fwd = np.array(list(fwd_of.values()), dtype=np.int64)
    fwd_ts = t.ts_us[fwd] if len(fwd) else np.empty(0)
    order = np.argsort(fwd_ts, kind="stable")
    dur = t.dur_us[rows][order] if len(rows) else np.empty(0)
    return BackwardIndex(fwd_ts[order], np.concatenate(([0.0], np.cumsum(dur))))
