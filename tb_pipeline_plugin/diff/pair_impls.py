"""Every diff route's implementation: a pair of loaded runs (or their
statistics, or their diagnostic results) and typed values in, the route's
answer out, all but the runs' references, which the route adds.

The server parses request parameters into the arguments here; the notebook
API (`compare.py`) and the CLI call the same functions, so every surface
shows the same numbers.
"""
from __future__ import annotations

import functools
import inspect
import os
import threading
import weakref
from typing import Callable

import numpy as np

from ..analysis.device_time import device_bound_pct, launch_table
from ..analysis.kernels import kernels
from ..analysis.labels import BACKWARD, MODULE
from ..analysis.ledger import merged
from ..analysis.operators import GROUP_BY, operators, primary_column
from ..analysis.pieces import Piece, PieceIndex, device_rows, op_rows
from ..analysis.run import Run
from ..analysis.run_facts import run_facts
from ..bounded_cache import BoundedCache
from ..errors import BadRequest
from . import significance as S
from . import significance_marks, tables
from . import tree as T
from .delta import delta_fields, delta_pct
from .comparability import differences, host_time_void, voided
from .conclusive import advice
from .diagnostic.compare import compare_diagnostic
from .explain import duration, explain
from .launches import LAUNCH_COLUMNS, launch_join, launch_keys, launch_samples, top_operator
from .statistics.explain import pipeline_part, with_clause
from .launch_health import launch_rows
from .memory.compare import diff_memory
from .overview import STEP_TIME, overview_rows
from .statistics.significance import recorded_step, step_us
from .statistics.compare import compare_pipeline
from .tables import TableQuery
from .timeline import DEFAULT_MAX_EVENTS, DEFAULT_WIDTH_PX, timeline_diff
from .units import (STEP, Given, counts_text, divisor, pair_units, per_step_of, pieces_note, rate_per_s, run_counts,
                    scaled, table_note, table_scales)

OPERATOR_KEYS = ["name", "input_shape"]
KERNEL_KEYS = ["name"]
KERNEL_PRIMARY = "total_us"

# `diff/modules` children paging: the default returns every child of any
# ordinary level; a level of 60k pieces would be a ~50 MB answer.
MODULES_DEFAULT_LIMIT = 5000
MODULES_MAX_LIMIT = T.CACHE_MAX_NODES
# A run whose device was busy this share of its steps' time is device-bound:
# the explanation is on device time.
DEVICE_BOUND_PCT = 50.0

_HOST_WINDOW_NOTE = (
    "Steps and pieces are compared on the host: a step is its CPU-side ProfilerStep window. The Overview's "
    "step time also waits for the step's GPU work to finish, so it can be longer; use Device time for the "
    "GPU side of each piece."
)


# Answers, per pair of loaded runs: a page asks the same answer again (a
# reload, back to a tab, the overview and the explanation after a sort), and
# a warm answer should cost a lookup. Weak on the runs, so a pair's answers
# go with either run; keyed by the impl, its arguments and the between-run
# spread in force (it moves every noise band).
ANSWERS_PER_PAIR = 32
_ANSWERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ANSWERS_LOCK = threading.Lock()


def _answers(b: Run, e: Run) -> BoundedCache:
    with _ANSWERS_LOCK:
        per_b = _ANSWERS.get(b)
        if per_b is None:
            per_b = _ANSWERS[b] = weakref.WeakKeyDictionary()
        cache = per_b.get(e)
        if cache is None:
            cache = per_b[e] = BoundedCache(ANSWERS_PER_PAIR)
        return cache


def _remembered(impl: Callable[..., dict]) -> Callable[..., dict]:
    """`impl(b, e, *args)` computed once per pair and arguments. An argument
    that is not hashable (a run's statistics) counts by identity, and the
    answer holds it, so its identity is not reused while the answer is kept."""
    signature = inspect.signature(impl)

    @functools.wraps(impl)
    def remembered(b: Run, e: Run, *args, **kwargs) -> dict:
        bound = signature.bind(b, e, *args, **kwargs)
        bound.apply_defaults()
        values = tuple(bound.arguments.values())[2:]
        key = (impl.__name__, os.environ.get(S.BETWEEN_RUN_ENV), *map(_key_part, values))
        return _answers(b, e).get_or_make(key, lambda: (values, impl(b, e, *values)))[1]
    return remembered


def _key_part(value):
    """`value` in a cache key: itself when hashable, a tuple part by part,
    anything else by identity."""
    if isinstance(value, tuple):
        return ("tuple", *map(_key_part, value))
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


def device_present(b: Run, e: Run) -> bool:
    """Either run has device activity: device time is the primary measure."""
    return b.has_device or e.has_device


NO_STATISTICS = (None, None)
NOT_GIVEN = (Given(), Given())


def both(statistics: tuple) -> tuple | None:
    """Both runs' statistics when both have them (they give the step verdict), else None."""
    return statistics if statistics[0] is not None and statistics[1] is not None else None


@_remembered
def pair_context(b: Run, e: Run, statistics: tuple = NO_STATISTICS, given: tuple = NOT_GIVEN) -> dict:
    """What every answer about the pair needs to know before a verdict: the
    unit the runs are compared in (diff/units.py), every difference between
    them (diff/comparability.py), and why host-time deltas of the profiled
    steps get no verdict, if they do not. `statistics`: each run's
    PipelineTables or None; `given`: each run's counts per step given by the
    user (`units.Given`)."""
    units = pair_units(run_counts(statistics[0], given[0]), run_counts(statistics[1], given[1]))
    items = differences(run_facts(b, statistics[0]), run_facts(e, statistics[1]), units)
    return {"units": units, "comparability": items, "void": host_time_void(items)}


# The overview rows measured on the host in the profiled steps: what the
# profiler's options inflate (diff/comparability.py).
_HOST_ROWS = (STEP_TIME, "breakdown_us.data_loading", "breakdown_us.cpu_exec", "breakdown_us.runtime",
              "breakdown_us.other")


@_remembered
def diff_overview_impl(b: Run, e: Run, statistics: tuple = NO_STATISTICS, given: tuple = NOT_GIVEN) -> dict:
    """Every overview metric side by side. `statistics`: both runs'
    recorded statistics (each PipelineTables or None): when both have them,
    the step time's verdict is the one from every recorded step (as the
    explanation's). Work per step, when known, adds rows per sample or
    token (diff/units.py); the pair's differences come with the rows."""
    present = device_present(b, e)
    ctx = pair_context(b, e, statistics, given)
    pipelines = both(statistics)
    if b.has_steps == e.has_steps:
        rows = overview_rows(b.overview(), e.overview(), (b.recording_of_step, e.recording_of_step))
        note = None
        if pipelines is not None:
            # The step time the verdict is about, and the one a gate reads: every recorded step's.
            recorded = recorded_step(*pipelines)
            sig = recorded["significance"]
            for row in rows:
                if row["metric"] == STEP_TIME:
                    row.update(baseline=recorded["baseline_us"], experimental=recorded["experimental_us"],
                               delta=recorded["delta_us"], significance=sig,
                               delta_pct=delta_pct(recorded["baseline_us"], recorded["delta_us"]))
            note = (f"Average step time is over every recorded step ({sig['baseline_steps']} vs "
                    f"{sig['experimental_steps']}, the pipeline statistics: warm-up and the loop's epilogue left "
                    "out); the breakdown is of the profiled steps.")
        rows += work_rows(b, e, ctx["units"], pipelines)
        _void_rows(rows, ctx["void"], recorded=pipelines is not None)
        _caveat_rows(rows, ctx["units"])
        return {"device_present": present, "rows": rows, "note": note, "units": ctx["units"],
                "comparability": ctx["comparability"]}
    # Per-step averages of a 3-step trace against one whole-trace "step"
    # would show a regression that is not there: compare whole windows.
    without = "baseline" if not b.has_steps else "experimental"
    note = (f"The {without} trace has no ProfilerStep annotations, so both runs are compared over their "
            "whole profiled window (all steps taken as one).")
    # Whole windows: one step per recording.
    rows = overview_rows(b.overview(whole_window=True), e.overview(whole_window=True),
                         tuple(None if tp.recordings == 1 else np.arange(tp.recordings) for tp in (b, e)))
    _void_rows(rows, ctx["void"], recorded=False)
    return {"device_present": present, "rows": rows, "note": note, "units": ctx["units"],
            "comparability": ctx["comparability"]}


def work_rows(b: Run, e: Run, units: dict, pipelines: tuple | None) -> list[dict]:
    """Overview rows of work per step, for each of samples and tokens both
    runs know: the count per step, the time per sample (token) judged as
    the step time is (every recorded step's own count when both runs have
    statistics, else the profiled steps at the run's count), and the rate."""
    rows = []
    for unit in ("sample", "token"):
        bc, ec = units["baseline"][f"{unit}s_per_step"], units["experimental"][f"{unit}s_per_step"]
        if bc is None or ec is None:
            continue
        counted = {**units, "unit": unit}
        if pipelines is not None:
            judged = recorded_step(*pipelines, per=(divisor(counted, "baseline"), divisor(counted, "experimental")))
        else:
            (bs, b_rec), (es, e_rec) = _profiled_step_us(b, e)
            bs, es = bs / bc, es / ec
            bm, em = (float(bs.mean()) if len(bs) else 0.0), (float(es.mean()) if len(es) else 0.0)
            judged = {"baseline_us": round(bm, 3), "experimental_us": round(em, 3), "delta_us": round(em - bm, 3),
                      "significance": S.step_time(bs, es, (b_rec, e_rec))}
        b_rate, e_rate = rate_per_s(judged["baseline_us"]), rate_per_s(judged["experimental_us"])
        rows += [
            _row(f"{unit}s_per_step", f"{unit.capitalize()}s per step", "count", bc, ec),
            {**_row(f"time_per_{unit}_us", f"Time per {unit}", "us", judged["baseline_us"], judged["experimental_us"]),
             "significance": judged["significance"]},
            _row(f"{unit}s_per_s", f"{unit.capitalize()}s per second", "per_s", b_rate, e_rate),
        ]
    return rows


def _row(metric: str, label: str, unit: str, b, e) -> dict:
    numeric = b is not None and e is not None
    delta = round(e - b, 3) if numeric else None
    return {"metric": metric, "label": label, "unit": unit, "baseline": b, "experimental": e, "delta": delta,
            "delta_pct": delta_pct(b, delta) if numeric else None, "significance": None, "caveat": None}


def _void_rows(rows: list[dict], void: str | None, recorded: bool) -> None:
    """No verdict on the host-time rows of the profiled steps (`void`: why)."""
    for row in rows:
        row.setdefault("caveat", None)
        if void is None:
            continue
        profiled_step = row["metric"] in _HOST_ROWS and not (recorded and row["metric"] == STEP_TIME)
        per_work = row["metric"].startswith("time_per_") and not recorded
        if profiled_step or per_work:
            row["significance"] = voided(row["significance"], void)
            row["caveat"] = void


def _caveat_rows(rows: list[dict], units: dict) -> None:
    """The step time is per step: when the runs' work per step differs, it says where to look."""
    if units["unit"] == STEP:
        return
    for row in rows:
        if row["metric"] == STEP_TIME and row["caveat"] is None:
            row["caveat"] = (f"Per step, and the runs' steps differ in work ({counts_text(units)}): compare "
                             f"Time per {units['unit']}.")


def _profiled_step_us(b: Run, e: Run) -> tuple:
    """Each run's profiled step times (the overview's, µs) and recordings."""
    out = []
    for run in (b, e):
        steps = run.overview()["steps"]
        out.append((np.array([s["duration_us"] for s in steps], np.float64), run.recording_of_step))
    return tuple(out)


@_remembered
def diff_memory_impl(b: Run, e: Run) -> dict:
    """Where the peak went (diff/memory/compare.py), computed once per pair of runs' analyses."""
    return diff_memory(b.memory(), e.memory())


@_remembered
def diff_explain_impl(b: Run, e: Run, statistics: tuple = NO_STATISTICS, given: tuple = NOT_GIVEN) -> dict:
    """The step-time delta split into ranked contributors (diff/explain.py).
    On device time when either run kept the device busy for most of its
    steps (`DEVICE_BOUND_PCT`): then the step time is the device's work, and
    host time spent waiting for it is no cause. `statistics`: each run's
    recorded pipeline statistics (PipelineTables) or None; when both have
    them, their part (diff/statistics/explain.py) joins the answer and its
    clause the sentence. When the runs' work per step differs, the step,
    its verdict and the contributors are per sample or token
    (diff/units.py), the per-step figures beside them; host-time verdicts
    of the profiled steps are withheld when the runs' profiler options
    differ (diff/comparability.py)."""
    present = device_present(b, e)
    ctx = pair_context(b, e, statistics, given)
    units = ctx["units"]
    pipelines = both(statistics)
    busy = {"baseline": _busy_pct(b), "experimental": _busy_pct(e)} if present else None
    clock = "device" if device_bound(b, e) else "host"
    bl, el = _step_ledgers(b, e, clock)
    note = None
    if b.has_steps != e.has_steps:
        without = "baseline" if not b.has_steps else "experimental"
        note = (f"The {without} trace has no ProfilerStep annotations, so both runs are compared over their whole "
                "profiled window (all steps taken as one): there is no per-step spread to judge the deltas by.")
    elif clock == "device":
        note = (f"Compared on device time: the device was busy {_pct(busy['baseline'])} of the baseline's steps and "
                f"{_pct(busy['experimental'])} of the experimental's, so the step time is the device's work; each "
                "kernel, memcpy and memset counts for the operator that launched it and that operator's part of "
                "the step, and `device idle` is the step time the device waited for the host.")
    elif present:
        note = ("Step time is the Overview's (a step lasts until its GPU work ends); the contributors are measured "
                "on the host, and `GPU work after the host step` is the difference.")
    launch = (launch_rows(b.launch_health(), e.launch_health(), (b.recording_of_step, e.recording_of_step))
              if present else [])
    compiled = _compiled(b, e)
    top = (lambda key: top_operator(b, e, key, frozenset(compiled))) if clock == "device" else None
    recorded = recorded_step(*pipelines) if pipelines is not None else None
    per_step = None
    if units["unit"] != STEP:
        figures = recorded or _means(bl, el)
        per_step = {k: figures[k] for k in ("baseline_us", "experimental_us", "delta_us")}
        per_step["delta_pct"] = delta_pct(per_step["baseline_us"], per_step["delta_us"])
        bl, el = scaled(bl, per_step_of(units, "baseline")), scaled(el, per_step_of(units, "experimental"))
        if pipelines is not None:
            recorded = recorded_step(*pipelines, per=(divisor(units, "baseline"), divisor(units, "experimental")))
    void = ctx["void"] if clock == "host" else None
    out = {"device_present": present,
           **explain(bl, el, compiled, clock, top, recorded, units=units, per_step=per_step, void=void),
           "launch": launch, "note": note, "pipeline": None, "clock": clock, "device_busy_pct": busy,
           "comparability": ctx["comparability"]}
    out["conclusive"] = advice(out["step"], *(us for us, _ in step_samples(b, e, statistics, given)))
    graph_us = _graph_us_per_step(b, e) if present else 0.0
    if graph_us:
        out["note"] = T.join_notes(out["note"], (
            f"{duration(graph_us)} per step ran in CUDA graphs: a graph's kernels count for the operator that "
            "launched the graph, and which module inside the graph ran each of them the trace does not say."))
    if pipelines is not None:
        out["pipeline"] = pipeline_part(*pipelines)
        out["sentence"] = with_clause(out["sentence"], out["pipeline"]["clause"])
    return out


def _step_ledgers(b: Run, e: Run, clock: str) -> tuple:
    """Both runs' step ledgers on `clock` ("host" or "device"); when only one
    run has ProfilerStep annotations, the other's whole window as one step
    (a whole trace against one step would read as a large regression)."""
    bl, el = (b.device_ledger(), e.device_ledger()) if clock == "device" else (b.ledger(), e.ledger())
    if b.has_steps != e.has_steps:
        bl, el = (merged(bl), el) if b.has_steps else (bl, merged(el))
    return bl, el


def _means(bl, el) -> dict:
    """Both ledgers' mean step (µs) and its delta."""
    bm, em = (float(x.steps["step_us"].mean()) if len(x.steps) else 0.0 for x in (bl, el))
    return {"baseline_us": round(bm, 3), "experimental_us": round(em, 3), "delta_us": round(em - bm, 3)}


def step_samples(b: Run, e: Run, statistics: tuple = NO_STATISTICS, given: tuple = NOT_GIVEN) -> tuple:
    """((baseline µs, recordings), (experimental µs, recordings)): the
    per-step step times the explanation's step verdict is judged on, chosen
    as `diff_explain_impl` chooses them: every recorded step when both runs
    have pipeline statistics, else the step ledgers' (device time when
    device-bound); per sample or token when the pair is compared so.
    Recordings: each step's, None for one recording."""
    units = pair_context(b, e, statistics, given)["units"]
    pipelines = both(statistics)
    if pipelines is not None:
        return (step_us(pipelines[0], divisor(units, "baseline")),
                step_us(pipelines[1], divisor(units, "experimental")))
    ledgers = _step_ledgers(b, e, "device" if device_bound(b, e) else "host")
    ledgers = (scaled(ledgers[0], per_step_of(units, "baseline")), scaled(ledgers[1], per_step_of(units, "experimental")))
    return tuple((ledger.steps["step_us"].to_numpy(np.float64), S.ledger_recordings(ledger)) for ledger in ledgers)


def device_bound(b: Run, e: Run) -> bool:
    """Either run kept the device busy `DEVICE_BOUND_PCT` of its steps: its
    step time is the device's work, and views open on device time."""
    if not device_present(b, e):
        return False
    return max(_busy_pct(b) or 0.0, _busy_pct(e) or 0.0) >= DEVICE_BOUND_PCT


def _busy_pct(run: Run) -> float | None:
    pct = device_bound_pct(run.device_ledger())
    return None if pct is None else round(pct, 2)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} %"


def _compiled(b: Run, e: Run) -> dict[str, str]:
    """Module path -> the run(s) that ran it compiled."""
    bc, ec = b.compiled_modules(), e.compiled_modules()
    return {p: "both" if p in bc and p in ec else "baseline" if p in bc else "experimental" for p in bc | ec}


def _graph_us_per_step(b: Run, e: Run) -> float:
    """Device time per step run by CUDA graph launches, the larger of the two runs'."""
    def per_step(run: Run) -> float:
        launches = run.device_launches()
        steps = max(len(run.linked.steps.name), 1)
        return float(launches.loc[launches["via_graph"], "dur_us"].sum()) / steps
    return max(per_step(b), per_step(e))


@_remembered
def diff_modules_impl(b: Run, e: Run, path: str = "", offset: int = 0,
                      limit: int = MODULES_DEFAULT_LIMIT, statistics: tuple = NO_STATISTICS,
                      given: tuple = NOT_GIVEN) -> dict:
    """The node at `path` and one page of its aligned children (`children_total`
    counts them all). The trend arrays cover the returned children, as running
    sums over the whole level. `offset` and `limit` are bounded by the
    parameters (server/params.py:DiffModulesParams). The pieces are each
    run's own steps' pieces, whatever work a step holds: `per_unit_note`
    says so when the runs' work per step differs."""
    bi, ei = b.pieces(), e.pieces()
    chain = T.resolve(bi, ei, path or "")
    node = chain[-1]
    kids, approximate = T.children_info(bi, ei, node)
    row = T.row(bi, ei, node)
    if node.path == "" and device_present(b, e):
        row["note"] = T.join_notes(row.get("note"), _HOST_WINDOW_NOTE)
    row["approximate"] = approximate
    page = slice(offset, offset + limit)
    trend = {k: v[page] for k, v in T.trend(kids).items()}
    children = [T.row(bi, ei, k) for k in kids[page]]
    with_backward = _with_backward(b, e, node, kids)
    _add_backward(row, *with_backward[0])
    for child, fields in zip(children, with_backward[1][page]):
        _add_backward(child, *fields)
    trend.update({k: v[page] for k, v in with_backward[2].items()})
    level = [node] + list(kids)
    significance_marks.mark_pieces(b, e, chain, [(row, node)] + list(zip(children, kids[page])),
                                   family=sum(1 for n in level if n.any.kind == MODULE))
    return {
        "path": node.path,
        "breadcrumb": [{"name": n.any.name, "path": n.path} for n in chain],
        "node": row,
        "approximate": approximate,
        "children_total": len(kids),
        "offset": offset,
        "limit": limit,
        "children": children,
        "trend": trend,
        "device_present": device_present(b, e),
        "device_bound": device_bound(b, e),
        "per_unit_note": pieces_note(pair_context(b, e, statistics, given)["units"]),
    }


def _with_backward(b: Run, e: Run, node: T.Node, kids: list[T.Node]):
    """Each piece's backward time and its host time with backward moved to
    the modules, for the node and every child of the level (the trend runs
    over all of them): ((b_bwd, e_bwd, b_with, e_with) of the node, the same
    per child, the trend of the `with_backward` times).

    A module's backward is the backward operators whose forward operator ran
    inside the call (its submodules' included), so a module's cost is its
    forward plus its backward; the level's `backward` piece keeps what no
    sibling module claims, "backward (unattributed)", so the pieces of a step
    still add up to the step. Backward is null on other pieces."""
    bix, eix = b.backward_index(), e.backward_index()

    def bwd(n: T.Node) -> tuple[float | None, float | None]:
        if n.any.kind != MODULE:
            return None, None
        return (bix.within(n.b.intervals) if n.b is not None else 0.0,
                eix.within(n.e.intervals) if n.e is not None else 0.0)

    def host(p) -> float:
        return p.host_us if p is not None else 0.0

    kid_bwd = [bwd(k) for k in kids]
    claimed_b = sum(v[0] for v in kid_bwd if v[0] is not None)
    claimed_e = sum(v[1] for v in kid_bwd if v[1] is not None)
    fields = []
    for k, (bv, ev) in zip(kids, kid_bwd):
        bh, eh = host(k.b), host(k.e)
        if bv is not None:
            bw, ew = bh + bv, eh + ev
        elif k.any.kind == BACKWARD:
            # Clipped at 0: a sibling's backward ran outside this piece (another thread's window).
            bw, ew = (max(bh - claimed_b, 0.0) if k.b is not None else 0.0,
                      max(eh - claimed_e, 0.0) if k.e is not None else 0.0)
        else:
            bw, ew = bh, eh
        fields.append((bv, ev, bw, ew))
    nb, ne = bwd(node)
    node_fields = (nb, ne, host(node.b) + (nb or 0.0), host(node.e) + (ne or 0.0))
    bs = np.cumsum([f[2] for f in fields]) if fields else np.zeros(0)
    es = np.cumsum([f[3] for f in fields]) if fields else np.zeros(0)
    trend = {"baseline_with_backward_us": np.round(bs, 3).tolist(),
             "experimental_with_backward_us": np.round(es, 3).tolist(),
             "delta_with_backward_us": np.round(es - bs, 3).tolist()}
    return node_fields, fields, trend


def _add_backward(row: dict, bv: float | None, ev: float | None, bw: float, ew: float) -> None:
    """`*_backward_us` (null on pieces other than modules) and `*_with_backward_us` of one row."""
    if bv is None:
        row.update(baseline_backward_us=None, experimental_backward_us=None, delta_backward_us=None)
    else:
        row.update(baseline_backward_us=round(bv, 3), experimental_backward_us=round(ev, 3),
                   delta_backward_us=round(ev - bv, 3))
    row.update(delta_fields("with_backward_us", bw, ew))


@_remembered
def diff_operators_impl(b: Run, e: Run, query: TableQuery = TableQuery(), group_by: str = "name", path: str = "",
                        statistics: tuple = NO_STATISTICS, given: tuple = NOT_GIVEN) -> dict:
    """Operators joined by name (and input shape); times per sample (token)
    when the runs' work per step differs (`_per_unit`)."""
    per = _per_unit(b, e, path, statistics, given)
    table = operator_table(b, e, group_by, path, per["scales"])
    primary = operator_primary(b, e)
    out = tables.query(table, OPERATOR_KEYS, tables.OPERATOR_COLUMNS, primary, query)
    significance_marks.mark_rows(b, e, out["rows"], OPERATOR_KEYS, len(table), path,
                                 lambda tp: tp.operator_steps(group_by, primary), primary, per["step_scales"])
    return {"table": "operators", "group_by": group_by, "path": path, "device_present": device_present(b, e),
            **out, "per_unit": per["unit"], "per_unit_note": per["note"]}


@_remembered
def diff_kernels_impl(b: Run, e: Run, query: TableQuery = TableQuery(), path: str = "",
                      group_by: str = "name", statistics: tuple = NO_STATISTICS, given: tuple = NOT_GIVEN) -> dict:
    """Kernels joined by name, or device time joined by what launched it
    (`group_by` "operator" or "module": diff/launches.py); times per sample
    (token) when the runs' work per step differs."""
    per = _per_unit(b, e, path, statistics, given)
    if group_by == "name":
        table = kernel_table(b, e, path, per["scales"])
        keys, columns = KERNEL_KEYS, tables.KERNEL_COLUMNS
        samples = lambda tp: tp.kernel_steps()  # noqa: E731 - the one line each branch differs by
    else:
        compiled = frozenset(_compiled(b, e))
        sides = [_times_scaled(t, LAUNCH_TIMES, f) for t, f in zip(_piece_launch_tables(b, e, path), per["scales"])]
        table = launch_join(*sides, group_by, compiled)
        keys, columns = launch_keys(group_by), LAUNCH_COLUMNS
        samples = lambda tp: launch_samples(tp, group_by, compiled)  # noqa: E731
    out = tables.query(table, keys, columns, KERNEL_PRIMARY, query)
    significance_marks.mark_rows(b, e, out["rows"], keys, len(table), path, samples, KERNEL_PRIMARY,
                                 per["step_scales"])
    for row in out["rows"]:
        for field in _KERNEL_ROW_FIELDS:
            row.setdefault(field, None)
    return {"table": "kernels", "group_by": group_by, "path": path, "device_present": device_present(b, e), **out,
            "per_unit": per["unit"], "per_unit_note": per["note"]}


# The times a table row sums (scaled per sample when the work per step
# differs); per-call statistics (a kernel's mean, min, max) and calls are not.
OPERATOR_TIMES = ("host_self_us", "host_total_us", "device_self_us", "device_total_us")
KERNEL_TIMES = ("total_us",)
LAUNCH_TIMES = ("total_us",)


def _per_unit(b: Run, e: Run, path: str, statistics: tuple, given: tuple) -> dict:
    """How a table of the pair is scaled: `unit` (sample, token; None: each
    run's totals), `scales` (each side's table times x, (1, 1) unscaled),
    `step_scales` (each side's per-step samples x, for the marks), `note`."""
    units = pair_context(b, e, statistics, given)["units"]
    piece = bool(path) and T.resolve(b.pieces(), e.pieces(), path)[-1].any.kind != T.ROOT
    scales = table_scales(units, None if piece else (b.step_count, e.step_count))
    if scales is None:
        return {"unit": None, "scales": (1.0, 1.0), "step_scales": None, "note": None}
    return {"unit": units["unit"], "scales": scales, "step_scales": table_scales(units, None),
            "note": table_note(units, piece)}


def _times_scaled(table, columns: tuple, factor: float):
    """`table` with its time `columns` multiplied by `factor` (a copy; itself at 1)."""
    if factor == 1.0:
        return table
    out = table.copy()
    for c in columns:
        if c in out:
            out[c] = out[c].astype(np.float64) * factor
    return out


# What a kernel row has only grouped by name, or only grouped by launch: null in the other grouping.
_KERNEL_ROW_FIELDS = ("module", "baseline_kernels", "experimental_kernels") + tuple(
    f"{p}_{c}" for c in ("mean_us", "min_us", "max_us") for p in ("baseline", "experimental", "delta")) + (
    "delta_mean_pct", "delta_min_pct", "delta_max_pct")


def _piece_launch_tables(b: Run, e: Run, path: str) -> tuple:
    """Both runs' launch tables, of the `diff/modules` piece at `path` when
    given (the device activity launched inside it)."""
    if not path:
        return b.launch_table(), e.launch_table()
    bi, ei = b.pieces(), e.pieces()
    node = T.resolve(bi, ei, path)[-1]

    def inside(run: Run, index: PieceIndex, piece: Piece | None):
        launches = run.device_launches()
        if piece is None:
            launches = launches.iloc[0:0]
        elif piece.kind != T.ROOT:
            launches = launches[launches["row"].isin(device_rows(index, piece))]
        return launch_table(run.linked, launches)

    return inside(b, bi, node.b), inside(e, ei, node.e)


def diff_timeline_impl(b: Run, e: Run, path: str = "", from_us: float | None = None,
                       to_us: float | None = None, width_px: int = DEFAULT_WIDTH_PX,
                       max_events: int = DEFAULT_MAX_EVENTS, find: str = "") -> dict:
    """Both runs' events of one aligned piece, matched (diff/timeline.py);
    device streams drawn first when the runs are device-bound."""
    bound = device_bound(b, e)
    return {**timeline_diff(b, e, path, from_us, to_us, width_px, max_events, find, devices_first=bound),
            "device_bound": bound}


def diff_pipeline_impl(b_statistics, e_statistics) -> dict:
    """Both runs' pipeline statistics (PipelineTables) compared (diff/statistics/compare.py)."""
    return compare_pipeline(b_statistics, e_statistics)


def diff_diagnostic_impl(b_results, e_results) -> dict:
    """Both runs' diagnostic results (DiagnosticRun) compared (diff/diagnostic/compare.py)."""
    return compare_diagnostic(b_results, e_results)


def operator_primary(b: Run, e: Run) -> str:
    """Device self time when either trace has device activity, else host self time."""
    return primary_column(device_present(b, e))


def operator_table(b: Run, e: Run, group_by: str = "name", path: str = "", scales: tuple = (1.0, 1.0)):
    """Operators of both runs joined by name (and input shape when grouped
    so), optionally restricted to the `diff/modules` piece at `path`; each
    side's times multiplied by its `scales` (`_per_unit`)."""
    if group_by not in GROUP_BY:
        raise BadRequest(f"group_by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")
    if path:
        bi, ei = b.pieces(), e.pieces()
        node = T.resolve(bi, ei, path)[-1]
        b_table = _piece_operators(b, bi, node.b, group_by)
        e_table = _piece_operators(e, ei, node.e, group_by)
    else:
        b_table, e_table = b.operators(group_by), e.operators(group_by)
    b_table, e_table = (_times_scaled(t, OPERATOR_TIMES, f) for t, f in zip((b_table, e_table), scales))
    if group_by == "name_and_shape":
        return tables.join(b_table, e_table, OPERATOR_KEYS, tables.OPERATOR_COLUMNS)
    table = tables.join(b_table, e_table, ["name"], tables.OPERATOR_COLUMNS)
    table.insert(1, "input_shape", None)
    return table


def kernel_table(b: Run, e: Run, path: str = "", scales: tuple = (1.0, 1.0)):
    """Kernels of both runs joined by name, optionally restricted to those
    launched from inside the `diff/modules` piece at `path` (the kernels its
    `device_us` counts); each side's total time multiplied by its `scales`."""
    if path:
        bi, ei = b.pieces(), e.pieces()
        node = T.resolve(bi, ei, path)[-1]
        b_table, e_table = _piece_kernels(b, bi, node.b), _piece_kernels(e, ei, node.e)
    else:
        b_table, e_table = b.kernels(), e.kernels()
    b_table, e_table = (_times_scaled(t, KERNEL_TIMES, f) for t, f in zip((b_table, e_table), scales))
    return tables.join(b_table, e_table, KERNEL_KEYS, tables.KERNEL_COLUMNS)


def _piece_kernels(tp: Run, index: PieceIndex, piece: Piece | None):
    if piece is not None and piece.kind == T.ROOT:
        return tp.kernels()
    rows = device_rows(index, piece) if piece is not None else np.empty(0, dtype=np.int64)
    return kernels(tp.linked, rows=rows)


def _piece_operators(tp: Run, index: PieceIndex, piece: Piece | None, group_by: str):
    if piece is None:
        rows = np.empty(0, dtype=np.int64)
    elif piece.kind == T.ROOT:
        return tp.operators(group_by)
    else:
        rows = op_rows(index, piece)
    return operators(tp.linked, group_by, rows=rows)
