"""The shape of a verdict of diff/significance.py (its `_result` dicts),
declared once: the HTTP contract (server/contract.py) and the report of
`tb-pipeline diff` (report/model.py) both carry it, so a dashboard reading
either gets the same fields. Its own module so that neither needs numpy or
scipy to know the shape."""
from __future__ import annotations

from typing import Literal, Union

from msgspec import Struct

SignificanceVerdict = Literal["significant", "within_noise", "too_few_steps"]
NoiseSource = Literal["measured", "assumed"]


class Significance(Struct, forbid_unknown_fields=True, omit_defaults=False):
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
    delta: Union[int, float]
    ci_low: Union[int, float] | None
    ci_high: Union[int, float] | None
    baseline_steps: int
    experimental_steps: int
    baseline_recordings: int
    experimental_recordings: int
    noise: NoiseSource
    confidence: float
    min_steps: int
