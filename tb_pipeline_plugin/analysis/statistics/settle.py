"""Which recorded steps are steps of the loop as it runs: warm-up and the
loop's epilogue left out of every figure and verdict, and said so.

* *Warm-up*: the first steps of a recording (lazy initialisation, allocator
  growth, cuDNN autotuning, the first `torch.compile`) and the first step
  after a profiler started (its start-up is in that step) are warm-up when
  slower than `WARMUP_FACTOR` times the recording's usual step (its median
  past the first `WARMUP_MAX_STEPS`). A warm-up step that is not slower is
  kept: it cost nothing to speak of.
* *Settling* (a recording that drove a CUDA device: `drives_cuda`): a
  loop that does not synchronize each step runs ahead of its device until
  the launch queue fills, and again after anything that drained it (the
  profiler's start and stop synchronize); those host steps time the
  launching and are faster than the loop's pace. Compilation, autotuning
  and the profiler's observed steps are slower. The steady state is the
  settled tail: the steps after the last one off the loop's pace (the
  median of the later half of its steps) by `WARMUP_FACTOR` either way,
  when at least `MIN_STEPS_TO_JUDGE` steps and a quarter of the recording
  are left after it (a loop that never settles keeps its steps). The
  queue's work the host ran ahead of is paid at the loop's end: a last step
  slower than `DRAIN_FACTOR` times the pace then holds that *drain* and is
  left out with the warm-up it balances. In the steady state the host waits
  for the device once per step, so a host step is the device's.
* *Epilogue*: the time from the last batch to the end of the run is no step
  (a DataLoader shutting down persistent workers at exit takes up to 5 s a
  worker). The recorder ends the last step when the loop ends and writes the
  epilogue on its own (formats/pipeline.py:LoopEnd, RunEnd); a last step
  still running when the recorder closed, or in a file written before that,
  holds the epilogue when it is `EPILOGUE_FACTOR` times the usual step.

Each recording of a pooled group (a `recording` column) is judged on its own.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

WARMUP_FACTOR = 1.5
WARMUP_MAX_STEPS = 3
EPILOGUE_FACTOR = 3.0
# A settled CUDA loop's last step this much over its pace holds the launch queue's drain.
DRAIN_FACTOR = 1.2
# Fewer steps than this give no usual step to compare with.
MIN_STEPS_TO_JUDGE = 4


def settle(steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(the steps kept, the warm-up steps (queue filling and its drain
    included), the steps holding the epilogue)."""
    if not len(steps):
        return steps, steps.iloc[0:0], steps.iloc[0:0]
    warm = np.zeros(len(steps), dtype=bool)
    tail = np.zeros(len(steps), dtype=bool)
    groups = steps.groupby("recording", sort=False).indices if "recording" in steps else {None: np.arange(len(steps))}
    for positions in groups.values():
        order = positions[np.argsort(steps["t_s"].to_numpy(np.float64)[positions], kind="stable")]
        w, t = _judged(steps.iloc[order])
        warm[order], tail[order] = w, t
    return steps[~(warm | tail)], steps[warm], steps[tail]


def _judged(steps: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Warm-up and epilogue masks of one recording's steps in time order."""
    n = len(steps)
    warm, tail = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    if n < MIN_STEPS_TO_JUDGE:
        return warm, tail
    d = pd.to_numeric(steps["duration_s"], errors="coerce").to_numpy(np.float64)
    if "device_s" in steps:
        # Steps timed on the device's clock (CUDA events) settle on it: the host's may only time launching.
        device = pd.to_numeric(steps["device_s"], errors="coerce").to_numpy(np.float64)
        if np.isfinite(device).all():
            d = device
    rest = d[WARMUP_MAX_STEPS:-1] if n > WARMUP_MAX_STEPS + 2 else d[1:-1]
    usual = float(np.nanmedian(rest)) if len(rest) and np.isfinite(rest).any() else float("nan")
    if not np.isfinite(usual) or usual <= 0:
        return warm, tail
    for i in range(min(WARMUP_MAX_STEPS, n - 1)):
        if not d[i] > WARMUP_FACTOR * usual:
            break
        warm[i] = True
    if "after_profiler_start" in steps:
        started = steps["after_profiler_start"].fillna(False).to_numpy(bool)
        warm |= started & (d > WARMUP_FACTOR * usual)
    if "open_at_end" in steps:
        last = steps["open_at_end"].fillna(False).to_numpy(bool)
        tail |= last & (d > EPILOGUE_FACTOR * usual)
    if drives_cuda(steps):
        warm |= _settling(d) & ~tail
    warm &= ~tail
    return warm, tail


def drives_cuda(steps: pd.DataFrame) -> bool:
    """The steps' recording drove a CUDA device (readers/records.py)."""
    return "drives_cuda" in steps and bool(steps["drives_cuda"].fillna(False).astype(bool).any())


def _settling(d: np.ndarray) -> np.ndarray:
    """The steps (in time order) before a CUDA loop's steady state, and the
    last step when it holds the queue's drain (module docstring)."""
    n = len(d)
    out = np.zeros(n, dtype=bool)
    late = d[n // 2:-1]
    pace = float(np.nanmedian(late)) if np.isfinite(late).any() else float("nan")
    if not np.isfinite(pace) or pace <= 0:
        return out
    off = np.flatnonzero((d[:-1] < pace / WARMUP_FACTOR) | (d[:-1] > WARMUP_FACTOR * pace))
    if not len(off):
        return out
    last = int(off[-1])
    left = n - 1 - last - 1  # steady steps after it, the last step not counted
    if left < max(MIN_STEPS_TO_JUDGE, n / 4):
        return out
    out[:last + 1] = True
    out[-1] = d[-1] > DRAIN_FACTOR * pace
    return out


def epilogue_s(tables, held: pd.DataFrame) -> float | None:
    """The loop's epilogue per recording (mean): the recorded one
    (formats/pipeline.py:RunEnd), else the duration of a last step that held
    it; None when neither is known."""
    recorded = [e["epilogue_s"] for e in getattr(tables, "epilogues", []) if not e.get("last_step_open")]
    found = recorded + pd.to_numeric(held["duration_s"], errors="coerce").dropna().tolist()
    return float(np.mean(found)) if found else None
