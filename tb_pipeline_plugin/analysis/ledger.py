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
region threads (the step thread and the autograd threads); which part each
one's time goes to, what is backward and which forward created it, is
decided once in analysis/attribution.py (which the pieces and the module
diff's backward lookup read too). A step's operators are those starting
in its window, their time clipped to its end.

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
from .attribution import Attribution
from .labels import (
    ANNOTATION, BACKWARD, BACKWARD_PHASE, COMMUNICATION, DATA_LOADING, DATA_LOADING_NAME, DEVICE, FORWARD, HOST,
    MODULE, OPTIMIZER, UNKNOWN, WHOLE_TRACE_STEP,
)
from .overview import step_breakdown
from .step_windows import step_of

STALL_FACTOR = 3.0
STALL_MIN_US = 1000.0
STALL_MIN_CALLS = 3
USUAL_PERCENTILE = 25
# The order the operator parts are listed in (a part's rows keep it).
_OPERATOR_PARTS = ((MODULE, BACKWARD_PHASE), (BACKWARD, ""), (MODULE, FORWARD), (OPTIMIZER, ""),
                   (COMMUNICATION, ""), (ANNOTATION, ""), (UNKNOWN, ""))


@dataclass(frozen=True)
class StepLedger:
    """`steps`: one row per step (step, name, step_us: the overview's step
    time, host_us: the host window). `parts`: long form, one row per (step,
    kind, key, phase) with `us` and the `stall_us` within it; a step's parts
    sum to its `step_us`."""

    steps: pd.DataFrame
    parts: pd.DataFrame


def step_ledger(linked: LinkedTrace, attribution: Attribution) -> StepLedger:
    st = linked.steps
    n_steps = len(st.name)
    win_start, win_end = attribution.step_start_us, attribution.step_end_us
    overview_us = step_breakdown(linked)["duration_us"].to_numpy(np.float64)
    steps = pd.DataFrame({
        "step": np.arange(n_steps), "name": list(st.name), "step_us": overview_us, "host_us": win_end - win_start,
    })
    records: list[pd.DataFrame] = []
    if attribution.step_thread >= 0 and n_steps:
        records += _operator_parts(linked, attribution)
        attributed = np.zeros(n_steps)
        for r in records:
            np.add.at(attributed, r["step"].to_numpy(), r["us"].to_numpy())
        # The rest of the window: what no operator covers, so that the parts
        # add up to the step exactly (less where threads overlap, see above).
        records.append(_frame(np.arange(n_steps), HOST, HOST, "", (win_end - win_start) - attributed))
    else:  # no host events to attribute: the whole window is unexplained host time
        records.append(_frame(np.arange(n_steps), HOST, HOST, "", win_end - win_start))
    records.append(_frame(np.arange(n_steps), DEVICE, DEVICE, "", overview_us - (win_end - win_start)))
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


def _operator_parts(linked: LinkedTrace, attribution: Attribution) -> list[pd.DataFrame]:
    """Data loading annotations whole, then each part's operators (analysis/attribution.py)."""
    t = linked.table
    win_start, win_end = attribution.step_start_us, attribution.step_end_us
    dl = attribution.data_loading_rows
    dl_step = step_of(win_start, win_end, t.ts_us[dl])
    keep = dl_step >= 0
    dl, dl_step = dl[keep], dl_step[keep]
    out = [_frame(dl_step, DATA_LOADING, DATA_LOADING_NAME, "", _clipped_dur(t, dl, win_end[dl_step]))]

    ops = attribution.operators
    ops = ops[(ops["step"] >= 0) & (ops["kind"] != DATA_LOADING)]
    rows, step = ops["row"].to_numpy(), ops["step"].to_numpy()
    kind, key, phase = (ops[c].to_numpy() for c in ("kind", "key", "phase"))
    dur = _clipped_dur(t, rows, win_end[step])
    stall = np.minimum(stalls(t.name_id[rows], step, t.ts_us[rows], dur), dur)
    for part_kind, part_phase in _OPERATOR_PARTS:
        m = (kind == part_kind) & (phase == part_phase)
        out.append(_frame(step[m], part_kind, key[m], part_phase, dur[m], stall[m]))
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
    step annotations, whose one step is the whole trace. A group's pooled
    ledger (a `recording` column) keeps one such step per recording."""
    if "recording" not in ledger.steps:
        steps = pd.DataFrame({"step": [0], "name": [WHOLE_TRACE_STEP],
                              "step_us": [float(ledger.steps["step_us"].sum())],
                              "host_us": [float(ledger.steps["host_us"].sum())]})
        parts = ledger.parts.assign(step=0).groupby(["step", "kind", "key", "phase"], as_index=False,
                                                    sort=False)[["us", "stall_us"]].sum()
        return StepLedger(steps=steps, parts=parts)
    recording = ledger.steps.set_index("step")["recording"]
    steps = ledger.steps.groupby("recording", as_index=False, sort=True)[["step_us", "host_us"]].sum()
    steps = steps.assign(step=steps["recording"], name=WHOLE_TRACE_STEP)[["step", "name", "step_us", "host_us",
                                                                          "recording"]]
    parts = ledger.parts.assign(step=ledger.parts["step"].map(recording).to_numpy()).groupby(
        ["step", "kind", "key", "phase"], as_index=False, sort=False)[["us", "stall_us"]].sum()
    return StepLedger(steps=steps, parts=parts)
