"""`diff/overview`: every overview metric of the pair side by side."""
from __future__ import annotations

import numpy as np

from ... import contract as C
from ...analysis.run import Run
from .. import step_basis as B
from ..delta import delta_pct
from .. import tree as T
from ..overview import STEP_TIME, overview_rows
from ..significance.pipeline import data_wait_significance, data_wait_us
from ..work_rows import caveat_rows, void_rows, work_rows
from . import UNNAMED, named

DATA_LOADING = "breakdown_us.data_loading"


def diff_overview_impl(pair, refs: dict | None = None) -> C.DiffOverviewResponse:
    """Every overview metric side by side. When both runs have recorded
    statistics, the step time's verdict is the one from every recorded step
    (as the explanation's). Work per step, when known, adds rows per sample
    or token (diff/units.py); the pair's differences come with the rows."""
    return named(pair.view(("diff/overview",), lambda: _answer(pair)), refs)


def _answer(pair) -> C.DiffOverviewResponse:
    out = _overview(pair)
    return C.DiffOverviewResponse(
        baseline=UNNAMED, experimental=UNNAMED, device_present=out["device_present"],
        rows=[C.DiffOverviewRow(**{**r, "significance": C.significance_of(r["significance"])}) for r in out["rows"]],
        note=out["note"], units=work_units(out["units"]), comparability=differences(out["comparability"]))


def work_units(u: dict) -> C.WorkUnits:
    """The pair's unit (diff/units.py's dict) as its Struct."""
    return C.WorkUnits(unit=u["unit"], baseline=C.WorkCounts(**u["baseline"]),
                       experimental=C.WorkCounts(**u["experimental"]))


def differences(rows: list[dict]) -> list[C.Difference]:
    """The pair's differences (diff/comparability.py's dicts) as their Structs."""
    return [C.Difference(**d) for d in rows]




def _overview(pair) -> dict:
    b, e = pair.runs
    ctx = pair.context
    common = {"device_present": pair.device_present, "units": ctx["units"], "comparability": ctx["comparability"]}
    if pair.basis.whole_window:
        # Per-step averages of a 3-step trace against one whole-trace "step"
        # would show a regression that is not there: compare whole windows.
        without = "baseline" if not b.has_steps else "experimental"
        note = (f"The {without} trace has no ProfilerStep annotations, so both runs are compared over their "
                "whole profiled window (all steps taken as one).")
        # Whole windows: one step per recording.
        rows = overview_rows(b.overview(whole_window=True), e.overview(whole_window=True),
                             tuple(_whole_window_recordings(tp) for tp in (b, e)), noise=pair.noise)
        void_rows(rows, ctx["void"], recorded=False)
        return {**common, "rows": rows, "note": note}
    rows = overview_rows(b.overview(), e.overview(), pair.recordings, noise=pair.noise)
    note = None
    recorded = B.recorded(pair)
    # The step time the verdict is about, and the one a gate reads: the explanation's (diff/step_basis.py).
    step = recorded if recorded is not None else B.profiled_step(pair) if pair.basis.device_bound else None
    if step is not None:
        sig = step["significance"]
        for row in rows:
            if row["metric"] == STEP_TIME:
                # Which steps it is of, where the profiled steps' count stands beside it.
                of = (f"{sig['baseline_steps']} vs {sig['experimental_steps']} steady recorded steps"
                      if recorded is not None else "device intervals of the profiled steps" if pair.basis.ahead
                      else "device time of the profiled steps")
                row.update(baseline=step["baseline_us"], experimental=step["experimental_us"],
                           delta=step["delta_us"], significance=sig, label=f"{row['label']} ({of})",
                           delta_pct=delta_pct(step["baseline_us"], step["delta_us"]))
        note = (f"Average step time: {B.describe(pair, (sig['baseline_steps'], sig['experimental_steps']))}"
                + ("; the breakdown is of the profiled steps." if recorded is not None else "."))
    rows += work_rows(pair)
    void_rows(rows, ctx["void"], recorded=recorded is not None)
    if pair.pipelines is not None and _recorded_data_wait(pair, rows):
        note = T.join_notes(note, "Data loading is the recorded steps' data wait, as the Pipeline tab measures it.")
    caveat_rows(rows, ctx["units"])
    return {**common, "rows": rows, "note": note}


def _recorded_data_wait(pair, rows: list[dict]) -> bool:
    """The data-loading row from the statistics, which measure that part of
    every recorded step (its figures and mark, as the Pipeline tab's data
    wait), when the row is there; whether it was."""
    row = next((r for r in rows if r["metric"] == DATA_LOADING), None)
    if row is None:
        return False
    (bw, _), (ew, _) = (data_wait_us(t) for t in pair.pipelines)
    if not len(bw) or not len(ew):
        return False
    b, e = round(float(bw.mean()), 3), round(float(ew.mean()), 3)
    # Measured on every recorded step: the profiled steps' void (diff/comparability.py) is not its.
    row.update(baseline=b, experimental=e, delta=round(e - b, 3), delta_pct=delta_pct(b, e - b),
               significance=data_wait_significance(*pair.pipelines, noise=pair.noise), caveat=None)
    return True


def _whole_window_recordings(run: Run):
    return None if run.recordings == 1 else np.arange(run.recordings)
