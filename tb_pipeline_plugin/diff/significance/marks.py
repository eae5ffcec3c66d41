"""Significance marks of the rows of the diff routes: the module pieces of
`diff/modules` and the rows of `diff/operators` and `diff/kernels`.

Both judge what a row stands for across the steps of each run
(diff/significance/method.py), and both judge one page as a family with every row
of its level or table, so a row's mark does not depend on the page asked
for. No marks (null) when exactly one run has steps: a whole trace against
steps has no spread to judge by.

* A module piece is one call in one step: it has no spread of its own. What
  can be judged is the module across steps: the per-step time of the module
  at that path (analysis/ledger.py: its operators, submodules included,
  forward and the backward its forward created) in every step of each run,
  against the baseline's mean step time. Three marks: forward + backward,
  forward, backward; null on other pieces.
* A table row: the per-step sums of its primary column
  (analysis/per_step.py), against its own baseline mean; a step without the
  row counts 0. Only the rows of the pages asked for are judged (a table can
  hold tens of thousands of rows; each row's mark is its own, so the
  table's view keeps it for the next page or sort: diff/table_view.py);
  null inside a piece (one step's part).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.attribution import Attribution
from ...analysis.labels import BACKWARD_PHASE, FORWARD, MODULE
from ...analysis.ledger import StepLedger
from ...analysis.run import Run
from . import method as S
from .. import tree as T

PIECE_PHASES = {"significance": None, "forward_significance": FORWARD, "backward_significance": BACKWARD_PHASE}
PIECE_FIELDS = tuple(PIECE_PHASES)
# Above this many module pieces on one page, no marks: one level of a
# huge flat model would cost a ledger scan per piece.
MAX_PIECES = 500


def per_step(b: Run, e: Run) -> bool:
    """Whether the runs' rows can be judged step by step: not when exactly one has steps."""
    return b.has_steps == e.has_steps


# ------------------------------------------------------------ module pieces


def mark_pieces(b: Run, e: Run, chain: list[T.Node], pairs, family: int, noise: S.NoisePolicy) -> None:
    """Set `PIECE_FIELDS` on each (row, node) of `pairs` (in place): the
    level's node and children at the end of `chain`. `family`: the module
    pieces of the whole level."""
    modules = [(r, n) for r, n in pairs if n.any.kind == MODULE]
    for r, _ in pairs:
        r.update(dict.fromkeys(PIECE_FIELDS))
    if not modules or not per_step(b, e) or len(modules) > MAX_PIECES:
        return
    # The module nodes from the root down to this level (the node itself
    # last when it is a module).
    above = [n for n in chain if n.any.kind == MODULE]
    b_attr, e_attr = b.attribution(), e.attribution()

    def lineage(n: T.Node) -> list[T.Node]:
        return above if n is chain[-1] else above + [n]

    paths = [(_ledger_path(lineage(n), "b", b_attr), _ledger_path(lineage(n), "e", e_attr)) for _, n in modules]
    for (r, _), marks in zip(modules, judge_modules(b.ledger(), e.ledger(), paths, family, noise)):
        r.update(marks)


def _ledger_path(lineage: list[T.Node], side: str, attribution: Attribution) -> str:
    """The ledger key of the last module node of `lineage` (module nodes
    from the top down) on one side: its call's path (analysis/attribution.py),
    the identity the ledger's module parts carry. A node that side lacks is
    judged by the path it would have there (its nearest module above on
    that side, then the other side's names): the module at that path in
    the other run's steps, if it ran elsewhere."""
    present = [i for i, n in enumerate(lineage) if getattr(n, side) is not None]
    # Children of a node one side lacks are lacking too: the present ones lead.
    head = present[-1] if present else -1
    names = [n.any.name for n in lineage[head + 1:]]
    if head >= 0:
        names.insert(0, attribution.module_path([getattr(lineage[head], side).row])[0])
    return "/".join(names)


def judge_modules(b: StepLedger, e: StepLedger, paths: list[tuple[str, str]], family: int | None,
                  noise: S.NoisePolicy) -> list[dict]:
    """For each (baseline path, experimental path) of a level's modules:
    {significance, forward_significance, backward_significance}."""
    if not paths:
        return []
    b_step = b.steps["step_us"].to_numpy(np.float64)
    reference = np.full(len(paths), float(b_step.mean()) if len(b_step) else 0.0)
    out = [{} for _ in paths]
    for field, phase in PIECE_PHASES.items():
        bm = _module_samples(b, [p for p, _ in paths], phase)
        em = _module_samples(e, [p for _, p in paths], phase)
        recordings = (S.ledger_recordings(b), S.ledger_recordings(e))
        for i, sig in enumerate(S.compare(bm, em, reference, family=family, recordings=recordings, noise=noise)):
            out[i][field] = sig
    return out


def _module_samples(ledger: StepLedger, paths: list[str], phase: str | None) -> np.ndarray:
    """paths x steps matrix of µs: each path's module and its submodules."""
    steps = ledger.steps["step"].to_numpy()
    out = np.zeros((len(paths), len(steps)))
    parts = ledger.parts[ledger.parts["kind"] == MODULE]
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


# ------------------------------------------------------------ table rows


def mark_rows(b: Run, e: Run, rows: list[dict], keys: list[str], family: int, path: str,
              samples, column: str, scales: tuple[float, float] | None, noise: S.NoisePolicy) -> None:
    """Set `significance` on each row of a table page (in place): `column`'s
    per-step sums, `samples(run)` giving them in long form (keys, step,
    column). `family`: the rows of the whole table; `path`: the piece the
    table is restricted to ("" for none); `scales`: each side's per-step
    sums multiplied by (per sample when the work per step differs)."""
    if path or not per_step(b, e):
        for r in rows:
            r["significance"] = None
        return
    if not rows:
        return
    page = pd.DataFrame({k: [r[k] for r in rows] for k in keys})
    page["_i"] = np.arange(len(rows))
    bm = _row_samples(page, keys, samples(b), column, b.step_count)
    em = _row_samples(page, keys, samples(e), column, e.step_count)
    if scales is not None:
        bm, em = bm * scales[0], em * scales[1]
    recordings = (b.recording_of_step, e.recording_of_step)
    for row, sig in zip(rows, S.compare(bm, em, family=family, recordings=recordings, noise=noise)):
        row["significance"] = sig


def _row_samples(page: pd.DataFrame, keys: list[str], long: pd.DataFrame, column: str, n_steps: int) -> np.ndarray:
    out = np.zeros((len(page), n_steps))
    if len(long) == 0 or n_steps == 0:
        return out
    # None input shapes (grouped by name) must join: compare as text.
    left = page.assign(**{k: page[k].astype("string").fillna("") for k in keys})
    right = long.assign(**{k: long[k].astype("string").fillna("") for k in keys})
    hit = left.merge(right, on=keys, how="inner")
    np.add.at(out, (hit["_i"].to_numpy(np.int64), hit["step"].to_numpy(np.int64)), hit[column].to_numpy(np.float64))
    return out
