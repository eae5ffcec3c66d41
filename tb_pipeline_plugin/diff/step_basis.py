"""Which steps and which clock a comparison's numbers rest on: decided here
and nowhere else.

The overview's step-time row, the explanation's headline and contributors,
the advice on what would make a verdict conclusive, the module and table
marks, the reports and the CLI's gates all read a pair's `StepBasis`
(`Pair.basis`) and the step figures below, so one comparison states one
step time.

* **Steps**: every recorded step of the pipeline statistics when both runs
  have them (warm-up and the loop's epilogue left out:
  analysis/statistics/settle.py) for the step verdict; the profiled steps
  otherwise, and always for the parts of a step. When exactly one run has
  ProfilerStep annotations, both are compared over their whole profiled
  window (a whole trace against one step would read as a large regression).
* **Clock**: device time when either run kept its device busy
  `DEVICE_BOUND_PCT` of its steps (the step time is the device's work, and
  host time spent waiting for it is no cause), else the host's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.device_time import device_bound_pct
from ..analysis.ledger import merged
from ..analysis.run import Run
from .significance import method as S
from .significance.pipeline import recorded_step, step_us
from .units import divisor, per_step_of, scaled

# A run whose device was busy this share of its steps' time is device-bound:
# the explanation is on device time.
DEVICE_BOUND_PCT = 50.0
HOST, DEVICE = "host", "device"


@dataclass(frozen=True)
class StepBasis:
    # "device" or "host": what the step ledgers of the explanation measure.
    clock: str
    # Each run's device-busy share of its steps (%), None without device activity.
    busy_pct: dict | None
    # Exactly one run has ProfilerStep annotations: whole windows are compared.
    whole_window: bool
    # Both runs have pipeline statistics: the step verdict is every recorded step's.
    recorded: bool

    @property
    def device_bound(self) -> bool:
        return self.clock == DEVICE


def step_basis(pair) -> StepBasis:
    """The basis of `pair` (a diff/pair.py `Pair`)."""
    present = pair.device_present
    busy = {"baseline": busy_pct(pair.b), "experimental": busy_pct(pair.e)} if present else None
    bound = present and max(busy["baseline"] or 0.0, busy["experimental"] or 0.0) >= DEVICE_BOUND_PCT
    return StepBasis(clock=DEVICE if bound else HOST, busy_pct=busy, whole_window=pair.b.has_steps != pair.e.has_steps,
                     recorded=pair.pipelines is not None)


def busy_pct(run: Run) -> float | None:
    """The share of a run's steps its device was busy (%, 2 decimals)."""
    pct = device_bound_pct(run.device_ledger())
    return None if pct is None else round(pct, 2)


def step_ledgers(pair, clock: str | None = None) -> tuple:
    """Both runs' step ledgers on `clock` (default: the basis's); when only
    one run has ProfilerStep annotations, the other's whole window as one
    step."""
    clock = clock or pair.basis.clock
    b, e = pair.b, pair.e
    bl, el = (b.device_ledger(), e.device_ledger()) if clock == DEVICE else (b.ledger(), e.ledger())
    if b.has_steps != e.has_steps:
        bl, el = (merged(bl), el) if b.has_steps else (bl, merged(el))
    return bl, el


def recorded(pair, units: dict | None = None) -> dict | None:
    """The step verdict from every recorded step (None unless both runs have
    statistics): means, delta and significance; per step, or per sample or
    token as `units` (diff/units.py: the pair's, or another unit's) say."""
    if pair.pipelines is None:
        return None
    per = (divisor(units, "baseline"), divisor(units, "experimental")) if units else (None, None)
    return pair.view(("recorded_step", per), lambda: recorded_step(*pair.pipelines, per=per, noise=pair.noise))


def ledger_means(bl, el) -> dict:
    """Both ledgers' mean step (µs) and its delta."""
    bm, em = (float(x.steps["step_us"].mean()) if len(x.steps) else 0.0 for x in (bl, el))
    return {"baseline_us": round(bm, 3), "experimental_us": round(em, 3), "delta_us": round(em - bm, 3)}


def step_samples(pair) -> tuple:
    """((baseline µs, recordings), (experimental µs, recordings)): the
    per-step step times the step verdict is judged on: every recorded step
    when both runs have pipeline statistics, else the step ledgers' on the
    basis's clock; per sample or token when the pair is compared so.
    Recordings: each step's, None for one recording."""
    units = pair.units
    if pair.pipelines is not None:
        return (step_us(pair.pipelines[0], divisor(units, "baseline")),
                step_us(pair.pipelines[1], divisor(units, "experimental")))
    bl, el = step_ledgers(pair)
    ledgers = (scaled(bl, per_step_of(units, "baseline")), scaled(el, per_step_of(units, "experimental")))
    return tuple((ledger.steps["step_us"].to_numpy(np.float64), S.ledger_recordings(ledger)) for ledger in ledgers)


def profiled_step_us(pair) -> tuple:
    """Each run's profiled step times (the overview's, µs) and recordings."""
    out = []
    for run in pair.runs:
        steps = run.overview()["steps"]
        out.append((np.array([s["duration_us"] for s in steps], np.float64), run.recording_of_step))
    return tuple(out)
