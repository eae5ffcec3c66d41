"""How much work one step of a run did: samples (its batch's leading
dimension) and tokens (the element count of its 2-D integer batch, token
ids), from the recorded steps the verdicts are judged on (`main_steps`:
warm-up and the loop's epilogue left out).

A step whose count was not recorded makes the run's count unknown: a mean
over the steps that have one would read a partial batch as the run's.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .report import main_steps

SAMPLES, TOKENS = "batch_size", "tokens"


def per_step_counts(tables, column: str) -> np.ndarray | None:
    """Each judged step's count (`SAMPLES` or `TOKENS`), None unless every
    judged step recorded a positive one."""
    used, _ = main_steps(tables.steps)
    if not len(used) or column not in used:
        return None
    counts = pd.to_numeric(used[column], errors="coerce").to_numpy(np.float64)
    if not np.isfinite(counts).all() or (counts <= 0).any():
        return None
    return counts


def mean_count(tables, column: str) -> float | None:
    """The mean count per judged step, None when unknown."""
    counts = per_step_counts(tables, column)
    return float(counts.mean()) if counts is not None else None
