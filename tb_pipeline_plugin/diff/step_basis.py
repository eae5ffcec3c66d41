"""Which steps and which clock a comparison's numbers rest on: decided here
and nowhere else.

The overview's step-time row, the explanation's headline and contributors,
the advice on what would make a verdict conclusive, the module and table
marks, the reports and the CLI's gates all read a pair's `StepBasis`
(`Pair.basis`) and the step figures below, so one comparison states one
step time.

* **Steps**: every recorded step of the pipeline statistics when both runs
  have them, in their steady state (warm-up, a CUDA loop's settling and the
  loop's epilogue left out: analysis/statistics/settle.py), for the step
  verdict; the profiled steps otherwise, and always for the parts of a step.
  When exactly one run has ProfilerStep annotations, both are compared over
  their whole profiled window (a whole trace against one step would read as
  a large regression).
* **Clock**: the device's when both runs recorded CUDA events at their
  step boundaries (record/device_clock.py: the recorded steps are then
  judged on `device_s`); else device time when either run kept its device busy
  `DEVICE_BOUND_PCT` of its steps (the step time is the device's work, and
  host time spent waiting for it is no cause), else the host's.
* **A host that runs ahead**: a loop that does not synchronize each step
  (CUDA graphs, a queue that never fills) has host steps that time only the
  launching. When a run's host step (its recorded steady state, else its
  profiled steps' median) is under `AHEAD_RATIO` of the device's work per
  profiled step, the host's steps do not measure the step: both runs are
  judged on the device's clock over the profiled steps, whose windows last
  until the work they launched ends (trace/link.py), and the recorded steps
  give no step verdict.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..analysis.device_time import device_bound_pct
from ..analysis.labels import DEVICE_IDLE
from ..analysis.ledger import merged
from ..analysis.run import Run
from .significance import method as S
from .significance.pipeline import on_device_clock, recorded_step, step_mean_us, step_us
from .explain.words import duration
from .units import divisor, per_step_of, scaled

# A run whose device was busy this share of its steps' time is device-bound:
# the explanation is on device time.
DEVICE_BOUND_PCT = 50.0
# A host step under this share of the device's work per step ran ahead of the device: in a loop where the
# host waits for its device once per step a host step is at least that work (less is launching only).
AHEAD_RATIO = 0.8
HOST, DEVICE = "host", "device"
SIDES = ("baseline", "experimental")


@dataclass(frozen=True)
class StepBasis:
    # "device" or "host": what the step ledgers of the explanation measure.
    clock: str
    # Each run's device-busy share of its steps (%), None without device activity.
    busy_pct: dict | None
    # Exactly one run has ProfilerStep annotations: whole windows are compared.
    whole_window: bool
    # Both runs have pipeline statistics and their hosts' steps time the step: the step verdict is every
    # recorded step's.
    recorded: bool
    # The recorded steps' clock: "device" when both runs recorded CUDA events at their step boundaries.
    recorded_clock: str = HOST
    # The runs whose host ran ahead of the device (module docstring), with their host and device-work step
    # figures (µs): {"baseline": {"host_us": .., "device_work_us": ..}}.
    ahead: dict = field(default_factory=dict)

    @property
    def device_bound(self) -> bool:
        return self.clock == DEVICE


def step_basis(pair) -> StepBasis:
    """The basis of `pair` (a diff/pair.py `Pair`)."""
    present = pair.device_present
    busy = {"baseline": busy_pct(pair.b), "experimental": busy_pct(pair.e)} if present else None
    ahead = {}
    events = pair.pipelines is not None and all(on_device_clock(t) for t in pair.pipelines)
    if present and pair.b.has_steps and pair.e.has_steps and not events:
        for side, run, tables in zip(SIDES, pair.runs, pair.statistics):
            figures = _host_and_work_us(run, tables)
            if figures is not None and figures["host_us"] < AHEAD_RATIO * figures["device_work_us"]:
                ahead[side] = figures
    bound = present and (bool(ahead) or max(busy["baseline"] or 0.0, busy["experimental"] or 0.0) >= DEVICE_BOUND_PCT)
    return StepBasis(clock=DEVICE if bound or events else HOST, busy_pct=busy,
                     whole_window=pair.b.has_steps != pair.e.has_steps, recorded=pair.pipelines is not None and not ahead,
                     recorded_clock=DEVICE if events else HOST, ahead=ahead)


def _host_and_work_us(run: Run, tables) -> dict | None:
    """A run's host step (its recorded steady state's mean, else the median
    of its profiled steps' host durations) and the device's work per
    profiled step (median of each step's busy time); None without device
    work."""
    if not run.has_device:
        return None
    ledger = run.device_ledger()
    if not len(ledger.steps):
        return None
    idle = ledger.parts[ledger.parts["kind"] == DEVICE_IDLE].groupby("step")["us"].sum()
    steps = ledger.steps.set_index("step")
    work = float(np.median(steps["step_us"] - idle.reindex(steps.index, fill_value=0.0)))
    if work <= 0:
        return None
    recorded = step_mean_us(tables) if tables is not None else None
    host = recorded if recorded is not None else float(np.median(np.maximum(steps["host_us"], 0.0)))
    return {"host_us": round(host, 3), "device_work_us": round(work, 3),
            "host_from": "recorded" if recorded is not None else "profiled"}


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
    if clock == DEVICE and pair.basis.ahead:
        # A host that ran ahead: each step as long as its work took the device, on both sides.
        bl, el = b.device_interval_ledger(), e.device_interval_ledger()
    elif clock == DEVICE:
        bl, el = b.device_ledger(), e.device_ledger()
    else:
        bl, el = b.ledger(), e.ledger()
    if b.has_steps != e.has_steps:
        bl, el = (merged(bl), el) if b.has_steps else (bl, merged(el))
    return bl, el


def recorded(pair, units: dict | None = None) -> dict | None:
    """The step verdict from every recorded step (None unless the basis is
    the recorded steps: both runs have statistics, neither host ran ahead): means, delta and significance; per step, or per sample or
    token as `units` (diff/units.py: the pair's, or another unit's) say."""
    if not pair.basis.recorded:
        return None
    per = (divisor(units, "baseline"), divisor(units, "experimental")) if units else (None, None)
    column = _recorded_column(pair)
    return pair.view(("recorded_step", per), lambda: recorded_step(*pair.pipelines, per=per, noise=pair.noise,
                                                                   column=column))


def _recorded_column(pair) -> str:
    return "device_s" if pair.basis.recorded_clock == DEVICE else "duration_s"


def profiled_step(pair) -> dict:
    """The step figures and verdict of the profiled steps on the basis's
    clock (the explanation's when no recorded steps give the verdict):
    `ledger_means` and `significance`."""
    def make() -> dict:
        bl, el = step_ledgers(pair)
        samples = [ledger.steps["step_us"].to_numpy(np.float64) for ledger in (bl, el)]
        recordings = (S.ledger_recordings(bl), S.ledger_recordings(el))
        return {**ledger_means(bl, el), "significance": S.step_time(*samples, recordings, noise=pair.noise)}
    return pair.view(("profiled_step",), make)


def ledger_means(bl, el) -> dict:
    """Both ledgers' mean step (µs) and its delta."""
    bm, em = (float(x.steps["step_us"].mean()) if len(x.steps) else 0.0 for x in (bl, el))
    return {"baseline_us": round(bm, 3), "experimental_us": round(em, 3), "delta_us": round(em - bm, 3)}


def step_samples(pair) -> tuple:
    """((baseline µs, recordings), (experimental µs, recordings)): the
    per-step step times the step verdict is judged on: every recorded step
    when the basis is the recorded steps, else the step ledgers' on the
    basis's clock; per sample or token when the pair is compared so.
    Recordings: each step's, None for one recording."""
    units = pair.units
    if pair.basis.recorded:
        column = _recorded_column(pair)
        return (step_us(pair.pipelines[0], divisor(units, "baseline"), column),
                step_us(pair.pipelines[1], divisor(units, "experimental"), column))
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


def describe(pair, steps: tuple[int, int]) -> str:
    """Which clock and which steps a pair's step figures are of, in words:
    `steps`, the baseline's and the experimental's count."""
    basis = pair.basis
    counts = f"{steps[0]} vs {steps[1]}"
    if basis.whole_window:
        return f"{basis.clock} time of the whole profiled window, {counts}"
    if basis.recorded and basis.recorded_clock == DEVICE:
        return f"device step time, from CUDA events at step boundaries, {counts} steady recorded steps"
    if basis.recorded:
        text = f"host step time of the recorded steps' steady state, {counts} steps"
        if pair.device_present:
            text += " (there the host waits for its device once per step: a host step is the device's)"
        return text
    text = f"{basis.clock} step time of the profiled steps, {counts} steps"
    if basis.ahead:
        side, figures = next(iter(basis.ahead.items()))
        from_ = "recorded steady-state" if figures["host_from"] == "recorded" else "profiled"
        text += (f", each the device's interval for the work it launched: the {side}'s host ran ahead of its device "
                 f"({duration(figures['host_us'])} {from_} host steps against {duration(figures['device_work_us'])} "
                 "of device work per step), so its host steps time the launching, not the step")
    elif basis.clock == DEVICE:
        text += ", each lasting until the work it launched ended"
    return text
