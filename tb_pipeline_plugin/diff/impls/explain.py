"""`diff/explain`: the step-time delta split into ranked contributors."""
from __future__ import annotations

from ... import contract as C
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
from . import UNNAMED, named
from .overview import differences, work_units


def diff_explain_impl(pair, refs: dict | None = None) -> C.DiffExplainResponse:
    """The step-time delta split into ranked contributors (diff/explain/contributors.py),
    on the clock and steps of the pair's basis (diff/step_basis.py). When
    both runs have recorded statistics, their part
    (diff/explain/pipeline.py) joins the answer and its clause the
    sentence. When the runs' work per step differs, the step, its verdict
    and the contributors are per sample or token (diff/units.py), the
    per-step figures beside them; host-time verdicts of the profiled steps
    are withheld when the runs' profiler options differ
    (diff/comparability.py)."""
    return named(pair.view(("diff/explain",), lambda: _answer(_explain(pair))), refs)


# ---- the Struct, from the explanation's dict (its sentence and the gates read that) ----------

def _answer(x: dict) -> C.DiffExplainResponse:
    busy, pipeline, conclusive = x["device_busy_pct"], x["pipeline"], x["conclusive"]
    return C.DiffExplainResponse(
        baseline=UNNAMED, experimental=UNNAMED,
        device_present=x["device_present"], sentence=x["sentence"], step=_step(x["step"]),
        spikiness=C.SpikinessPair(baseline=C.Spikiness(**x["spikiness"]["baseline"]),
                                  experimental=C.Spikiness(**x["spikiness"]["experimental"])),
        contributors=[_contributor(c) for c in x["contributors"]],
        waterfall=[C.WaterfallBar(**w) for w in x["waterfall"]],
        launch=[C.LaunchRow(**{**r, "significance": C.Significance(**r["significance"])}) for r in x["launch"]],
        note=x["note"], clock=x["clock"],
        device_busy_pct=None if busy is None else C.BusyPair(**busy),
        pipeline=None if pipeline is None else _pipeline(pipeline),
        between_run_pct=x["between_run_pct"], noise=C.ExplainNoise(**x["noise"]),
        comparability=differences(x["comparability"]),
        conclusive=None if conclusive is None else C.Advice(**conclusive),
    )


def _step(s: dict) -> C.ExplainStep:
    profiled, units, per_step = s["profiled"], s["units"], s["per_step"]
    return C.ExplainStep(**{
        **s, "significance": C.Significance(**s["significance"]),
        "profiled": None if profiled is None else C.ProfiledStep(
            **{**profiled, "significance": C.Significance(**profiled["significance"])}),
        "units": None if units is None else work_units(units),
        "per_step": None if per_step is None else C.StepFigures(**per_step),
    })


def _contributor(c: dict) -> C.Contributor:
    top = c["top_operator"]
    return C.Contributor(**{**c, "significance": C.Significance(**c["significance"]),
                            "top_operator": None if top is None else C.TopOperator(**top)})


def _pipeline(p: dict) -> C.ExplainPipeline:
    wait, stage, gil, loader = p["data_wait"], p["stage"], p["gil"], p["loader"]
    return C.ExplainPipeline(
        data_wait=C.ExplainDataWait(**{**wait, "significance": C.Significance(**wait["significance"])}),
        input_bound=C.ExplainInputBound(**p["input_bound"]),
        stage=None if stage is None else C.ExplainStageChange(**stage),
        gil=None if gil is None else C.ExplainGilLimit(**gil),
        loader=None if loader is None else C.ExplainLoaderLimit(**loader),
        clause=p["clause"])


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
