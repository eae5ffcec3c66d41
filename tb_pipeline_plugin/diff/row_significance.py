"""Significance of the rows of a delta table (operators, kernels), from the
per-step sums of each row's primary column (analysis/per_step.py).

Only the returned page is judged (a table can hold tens of thousands of
rows), but as one family of all the table's rows (Bonferroni over `family`),
so the marks do not depend on the page size.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import significance as S


def attach(rows: list[dict], keys: list[str], b_long: pd.DataFrame, e_long: pd.DataFrame, column: str,
           b_steps: int, e_steps: int, family: int) -> None:
    """Set `significance` on each row (in place): its `column`'s per-step
    sums in both runs, compared; a step without the row counts 0."""
    if not rows:
        return
    page = pd.DataFrame({k: [r[k] for r in rows] for k in keys})
    page["_i"] = np.arange(len(rows))
    b = _matrix(page, keys, b_long, column, b_steps)
    e = _matrix(page, keys, e_long, column, e_steps)
    for row, sig in zip(rows, S.compare(b, e, family=max(family, len(rows)))):
        row["significance"] = sig


def _matrix(page: pd.DataFrame, keys: list[str], long: pd.DataFrame, column: str, n_steps: int) -> np.ndarray:
    out = np.zeros((len(page), n_steps))
    if len(long) == 0 or n_steps == 0:
        return out
    # None input shapes (grouped by name) must join: compare as text.
    left = page.assign(**{k: page[k].astype("string").fillna("") for k in keys})
    right = long.assign(**{k: long[k].astype("string").fillna("") for k in keys})
    hit = left.merge(right, on=keys, how="inner")
    np.add.at(out, (hit["_i"].to_numpy(np.int64), hit["step"].to_numpy(np.int64)), hit[column].to_numpy(np.float64))
    return out
