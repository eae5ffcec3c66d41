"""What would make an inconclusive step verdict conclusive: how many
profiled steps per run, or recordings per side (`tb-pipeline record
--repeat N`), would bring the step time's noise band under the change at
stake. Computed from the band this pair measured (diff/significance/method.py),
never from a rule of thumb.

The change at stake: the delta itself when it is at least the least effect
(`MIN_EFFECT_PCT` of the baseline's step), so that the band excludes 0 if
the delta is real; else the room left below the least effect, so that the
band shows the runs differ by less than what counts.

One recording a side: the band is the steps' bootstrap term (which
narrows as 1/sqrt(steps)) and the level and between-run terms (which do
not: more steps of the same recording sit on the same level) added in
quadrature. The steps' term is taken from the steps' own spread (the
normal limit of the bootstrap), the rest is what remains of the band; more
steps help only when the rest is narrower than the change. Groups of
recordings: the band is a Student t interval on the recordings' means, so
recordings are what narrows it; their spread is read back from the band,
and for one recording a side it is estimated from the band as if each run's
mean scattered by half of it (the between-run spread the band assumed).
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from ...analysis.t_quantile import t_quantile
from . import method as S
from ..explain.words import duration, signed_duration

# Beyond these the advice is "out of reach": the change is too small for
# this noise, whatever one records.
MAX_STEPS_PER_RUN = 100_000
MAX_RECORDINGS = 30

TOO_FEW_STEPS, MORE_DATA, OUT_OF_REACH, NOT_COMPARABLE = "too_few_steps", "more_data", "out_of_reach", "not_comparable"


def advice(step: dict, baseline_us, experimental_us) -> dict | None:
    """What would make the step verdict conclusive (None when it is
    significant): `reason`, `steps_per_run` (steps per run, profiled or
    recorded as `step["source"]` says; None when more steps cannot do it),
    `repeat` (recordings per side, None when out of reach) and `text`, in
    words. `step` is the explanation's `step` (with its `significance`);
    `baseline_us` / `experimental_us` the per-step samples it was judged on
    (diff/step_basis.py:step_samples)."""
    sig = step["significance"]
    if sig["verdict"] == S.SIGNIFICANT:
        return None
    if sig["verdict"] == S.NOT_COMPARABLE:
        # No amount of steps fixes a difference in how the runs were recorded.
        return _out(NOT_COMPARABLE, None, None, sig["label"].split(": ", 1)[-1])
    unit = step.get("unit") or "step"
    nb, ne = sig["baseline_steps"], sig["experimental_steps"]
    # Judged on every recorded step (both runs have pipeline statistics) more steps means a longer
    # run; on the traces' profiled steps, a longer profiler schedule.
    recorded = step.get("source") == "recorded"
    if sig["verdict"] == S.TOO_FEW_STEPS:
        need = sig["min_steps"]
        how = "Record" if recorded else "Profile"
        return _out(TOO_FEW_STEPS, need, None,
                    f"{how} at least {need} steps per run (this pair has {nb} vs {ne}) to measure the noise"
                    + ("." if recorded else f": `tb-pipeline record --profile active={need}`."))
    delta = abs(float(step["delta_us"]))
    least = S.MIN_EFFECT_PCT / 100.0 * abs(float(step["baseline_us"]))
    half = S.half_width(sig) or 0.0
    alpha = (1.0 - sig["confidence"]) / 2.0
    real = delta >= least
    target = delta if real else least - delta
    goal = (f"If the {signed_duration(step['delta_us'])} per {unit} is real, " if real else
            f"To show the runs differ by less than {S.MIN_EFFECT_PCT:g} % of the baseline's time per {unit} "
            f"({duration(least)}), ")
    rb, re_ = sig["baseline_recordings"], sig["experimental_recordings"]
    steps = None
    if min(rb, re_) >= S.MIN_RECORDINGS:
        spread = half / (t_quantile(1.0 - alpha, rb + re_ - 2) * math.sqrt(1.0 / rb + 1.0 / re_))
    else:
        z = NormalDist().inv_cdf(1.0 - alpha)
        steps = _steps_needed(half, z, np.asarray(baseline_us, np.float64), np.asarray(experimental_us, np.float64),
                              target, max(nb, ne), sig["min_steps"])
        spread = half / (z * math.sqrt(2.0))
    repeat = _recordings_needed(spread, target, alpha)
    if steps is None and repeat is None:
        return _out(OUT_OF_REACH, None, None,
                    f"{goal}its noise band (± {duration(half)}) would have to shrink below {duration(target)}: more "
                    f"than {MAX_RECORDINGS} recordings a side on this noise. Treat the runs as the same.")
    ways = []
    if steps is not None:
        ways.append(f"about {steps} recorded steps per run (now {nb} vs {ne}: a longer run)" if recorded else
                    f"about {steps} profiled steps per run (now {nb} vs {ne}: "
                    f"`tb-pipeline record --profile active={steps}`)")
    if repeat is not None:
        ways.append(f"{'or ' if ways else ''}about {repeat} recordings a side (now {rb} + {re_}: "
                    f"`tb-pipeline record --repeat {repeat}`)")
    why = "" if steps is not None or min(rb, re_) >= S.MIN_RECORDINGS else (
        "More steps will not narrow the band: most of it is the spread between recordings. ")
    return _out(MORE_DATA, steps, repeat,
                f"{why}{goal}{' '.join(ways)} would bring the noise band (± {duration(half)}) under "
                f"{duration(target)}.")


def _steps_needed(half: float, z: float, b: np.ndarray, e: np.ndarray, target: float, now: int,
                  min_steps: int) -> int | None:
    """Steps per run at which the band's steps term leaves room for the rest
    under `target`; None when the rest alone is wider (or no spread to scale)."""
    if len(b) < 2 or len(e) < 2:
        return None
    steps_half = z * math.sqrt(b.var(ddof=1) / len(b) + e.var(ddof=1) / len(e))
    rest_sq = max(half * half - steps_half * steps_half, 0.0)
    room_sq = target * target - rest_sq
    if steps_half <= 0.0 or room_sq <= 0.0:
        return None
    # Both runs' steps term shrinks as 1/n: scale the larger run's count.
    n = math.ceil(now * steps_half * steps_half / room_sq)
    if n > MAX_STEPS_PER_RUN:
        return None
    return max(n, now + 1, min_steps)


def _recordings_needed(spread: float, target: float, alpha: float) -> int | None:
    """The fewest recordings a side whose t interval (pooled over both
    sides, as diff/significance/method.py judges groups) is narrower than `target`."""
    if target <= 0.0:
        return None
    for r in range(S.MIN_RECORDINGS, MAX_RECORDINGS + 1):
        if t_quantile(1.0 - alpha, 2 * r - 2) * spread * math.sqrt(2.0 / r) < target:
            return r
    return None


def _out(reason: str, steps: int | None, repeat: int | None, text: str) -> dict:
    return {"reason": reason, "steps_per_run": steps, "repeat": repeat, "text": text}
