"""Significance marks of the module pieces in `diff/modules`.

A piece is one call in one step: it has no spread of its own. What can be
judged is the module across steps: the per-step time of the module at that
path (analysis/ledger.py: its operators, submodules included, forward and
the backward its forward created) in every step of each run, compared as
every per-step delta (diff/significance.py) against the baseline's mean
step time, the module pieces of one level judged as one family. Three
marks: forward, backward, and forward + backward.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.ledger import BACKWARD_PHASE, FORWARD, StepLedger
from . import significance as S

PHASES = {"significance": None, "forward_significance": FORWARD, "backward_significance": BACKWARD_PHASE}
FIELDS = tuple(PHASES)


def _samples(ledger: StepLedger, paths: list[str], phase: str | None) -> np.ndarray:
    """paths x steps matrix of µs: each path's module and its submodules."""
    steps = ledger.steps["step"].to_numpy()
    out = np.zeros((len(paths), len(steps)))
    parts = ledger.parts[ledger.parts["kind"] == "module"]
    if phase is not None:
        parts = parts[parts["phase"] == phase]
    if not len(parts) or not len(steps):
        return out
    per = parts.groupby(["key", "step"])["us"].sum()
    keys = per.index.get_level_values(0).to_numpy(dtype=object)
    col = pd.Index(steps).get_indexer(per.index.get_level_values(1))
    values = per.to_numpy(np.float64)
    for i, path in enumerate(paths):
        mine = np.array([k == path or k.startswith(path + "/") for k in keys], dtype=bool) & (col >= 0)
        np.add.at(out[i], col[mine], values[mine])
    return out


def judge(b: StepLedger, e: StepLedger, paths: list[tuple[str, str]], family: int | None = None) -> list[dict]:
    """For each (baseline path, experimental path) of a level's module
    pieces: {significance, forward_significance, backward_significance};
    `family`, how many pieces the level has (default: these)."""
    if not paths:
        return []
    b_step = b.steps["step_us"].to_numpy(np.float64)
    reference = np.full(len(paths), float(b_step.mean()) if len(b_step) else 0.0)
    out = [{} for _ in paths]
    for field, phase in PHASES.items():
        bm = _samples(b, [p for p, _ in paths], phase)
        em = _samples(e, [p for _, p in paths], phase)
        for i, sig in enumerate(S.compare(bm, em, reference, family=max(family or 0, len(paths)))):
            out[i][field] = sig
    return out
