"""`diff/explain`: the step-time delta split into ranked contributors."""
from __future__ import annotations

from ...analysis.device_time import graph_us_per_step
from .. import step_basis as B
from .. import tree as T
from ..delta import delta_pct
from ..explain.bound import bound_clause, work_clause
from ..explain.contributors import explain
from ..explain.pipeline import pipeline_part, with_clause
from ..explain.words import duration
from ..launch_health import launch_rows
from ..launches import top_operator
from ..significance.conclusive import advice
from ..units import STEP, per_step_of, scaled


def diff_explain_impl(pair) -> dict:
    """The step-time delta split into ranked contributors (diff/explain/contributors.py),
    on the clock and steps of the pair's basis (diff/step_basis.py). When
    both runs have recorded statistics, their part
    (diff/explain/pipeline.py) joins the answer and its clause the
    sentence. When the runs' work per step differs, the step, its verdict
    and the contributors are per sample or token (diff/units.py), the
    per-step figures beside them; host-time verdicts of the profiled steps
    are withheld when the runs' profiler options differ
    (diff/comparability.py)."""
    return pair.view(("diff/explain",), lambda: _explain(pair))


def _explain(pair) -> dict:
    b, e = pair.runs
    ctx, basis = pair.context, pair.basis
    units = ctx["units"]
    present = pair.device_present
    busy, clock = basis.busy_pct, basis.clock
    bl, el = B.step_ledgers(pair)
    note = None
    if basis.whole_window:
        without = "baseline" if not b.has_steps else "experimental"
        note = (f"The {without} trace has no ProfilerStep annotations, so both runs are compared over their whole "
                "profiled window (all steps taken as one): there is no per-step spread to judge the deltas by.")
    elif clock == B.DEVICE:
        note = (f"Compared on device time: the device was busy {_pct(busy['baseline'])} of the baseline's steps and "
                f"{_pct(busy['experimental'])} of the experimental's, so the step time is the device's work; each "
                "kernel, memcpy and memset counts for the operator that launched it and that operator's part of "
                "the step, and `device idle` is the step time the device waited for the host.")
    elif present:
        note = ("Step time is the Overview's (a step lasts until its GPU work ends); the contributors are measured "
                "on the host, and `GPU work after the host step` is the difference.")
    launch = (launch_rows(b.launch_health(), e.launch_health(), pair.recordings, noise=pair.noise)
              if present else [])
    compiled = pair.compiled
    top = (lambda key: top_operator(b, e, key, frozenset(compiled))) if clock == B.DEVICE else None
    recorded = B.recorded(pair)
    per_step = None
    if units["unit"] != STEP:
        figures = recorded or B.ledger_means(bl, el)
        per_step = {k: figures[k] for k in ("baseline_us", "experimental_us", "delta_us")}
        per_step["delta_pct"] = delta_pct(per_step["baseline_us"], per_step["delta_us"])
        bl, el = scaled(bl, per_step_of(units, "baseline")), scaled(el, per_step_of(units, "experimental"))
        recorded = B.recorded(pair, units)
    void = ctx["void"] if clock == B.HOST else None
    out = {"device_present": present,
           **explain(bl, el, compiled, clock, top, recorded, units=units, per_step=per_step, void=void,
                     noise=pair.noise),
           "launch": launch, "note": note, "pipeline": None, "clock": clock, "device_busy_pct": busy,
           "comparability": ctx["comparability"]}
    sig = out["step"]["significance"]
    out["step"]["basis"] = B.describe(pair, (sig["baseline_steps"], sig["experimental_steps"]))
    if basis.ahead:
        out["note"] = T.join_notes(out["note"], f"The step time is the {out['step']['basis']}.")
    out["conclusive"] = advice(out["step"], *(us for us, _ in B.step_samples(pair)))
    graph_us = max(graph_us_per_step(run.device_launches(), len(run.linked.steps.name)) for run in (b, e)) \
        if present else 0.0
    if graph_us:
        out["note"] = T.join_notes(out["note"], (
            f"{duration(graph_us)} per step ran in CUDA graphs: a graph's kernels count for the operator that "
            "launched the graph, and which module inside the graph ran each of them the trace does not say."))
    bound = bound_clause(b.overview(), e.overview()) if present and not basis.whole_window else None
    for clause in (work_clause(ctx["comparability"], device=present), bound):
        if clause is not None:
            out["sentence"] = with_clause(out["sentence"], clause)
    if pair.pipelines is not None:
        out["pipeline"] = pipeline_part(*pair.pipelines, pair.noise)
        out["sentence"] = with_clause(out["sentence"], out["pipeline"]["clause"])
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} %"
