"""What a pair is before its verdicts (diff/units.py, diff/comparability.py):
the unit it is compared in and the differences between the runs. The HTTP
answers and the report of `tb-pipeline diff` (report/model.py) both carry it."""
from __future__ import annotations

from typing import Literal

from .common import Number, _Shape

WorkUnit = Literal["step", "sample", "token"]
CountSource = Literal["given", "statistics"]
# per_unit: answers are per sample or token; no_verdict: a number is meaningless as it stands and gets none;
# caveat: numbers stand, part of a delta may be this; note: worth knowing.
DifferenceEffect = Literal["per_unit", "no_verdict", "caveat", "note"]


class WorkCounts(_Shape):
    """One run's work per step; null where unknown. Source: given by the user, or its pipeline statistics."""

    samples_per_step: Number | None
    samples_source: CountSource | None
    tokens_per_step: Number | None
    tokens_source: CountSource | None


class WorkUnits(_Shape):
    """The unit the pair is compared in: "step" unless the runs' work per step differs."""

    unit: WorkUnit
    baseline: WorkCounts
    experimental: WorkCounts


class Difference(_Shape):
    """One difference between what the runs were (diff/comparability.py); the values as shown."""

    key: str
    label: str
    baseline: str | None
    experimental: str | None
    effect: DifferenceEffect
    text: str
