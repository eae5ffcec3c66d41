"""The shape of a verdict of diff/significance/method.py (its `_result` dicts) and
of the advice that would settle an inconclusive one: the HTTP answers and the
report of `tb-pipeline diff` (report/model.py) both carry it, so a dashboard
reading either gets the same fields. Here, not in diff/, so that neither needs
numpy or scipy to know the shape."""
from __future__ import annotations

from typing import Literal

from .common import Number, _Shape

# "not_comparable": the delta was measured, but a difference between the runs
# makes it meaningless as it stands (diff/comparability.py); `label` says which.
SignificanceVerdict = Literal["significant", "within_noise", "too_few_steps", "not_comparable"]
NoiseSource = Literal["measured", "assumed"]


class Significance(_Shape):
    """Is a delta more than the runs' noise (docs/http_api.md,
    "Significance")? `ci_low` / `ci_high`: the interval of the delta (null
    with too few steps), at `confidence` (0.95 for one quantity, higher for
    each of a family judged together); the steps and recordings each side's
    samples come from, and `min_steps`, the fewest a side needs for a
    verdict; `noise`: whether the spread between recordings was measured (a
    side with two or more recordings) or assumed (`between_run_pct`);
    `label`: the verdict in the words every surface shows."""

    verdict: SignificanceVerdict
    label: str
    delta: Number
    ci_low: Number | None
    ci_high: Number | None
    baseline_steps: int
    experimental_steps: int
    baseline_recordings: int
    experimental_recordings: int
    noise: NoiseSource
    confidence: float
    min_steps: int


# Why a step verdict is inconclusive, and so what would settle it (diff/significance/conclusive.py).
AdviceReason = Literal["too_few_steps", "more_data", "out_of_reach", "not_comparable"]


class Advice(_Shape):
    """What would make an inconclusive step verdict conclusive (diff/significance/conclusive.py)."""

    reason: AdviceReason
    steps_per_run: int | None  # steps per run that would do it (null: steps cannot)
    repeat: int | None  # recordings per side, `tb-pipeline record --repeat N` (null: out of reach)
    text: str


class ExplainNoise(_Shape):
    """Where the explanation's noise bands came from, for the sentence's reader."""

    source: NoiseSource
    baseline_recordings: int
    experimental_recordings: int
    note: str


def significance_of(mark: dict | None) -> Significance | None:
    """A row's significance mark (diff/significance's dict) as its Struct; None where the row has none."""
    return None if mark is None else Significance(**mark)
