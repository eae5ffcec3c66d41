"""Diagnostic-mode verdicts: from the decoded sweep records, how each stage
scales, why, and at which concurrency it is best.

Pure functions over the records (msgspec Structs from formats/diagnostic.py
or plain dicts with a "type" key, as read from the JSON lines); nothing here
imports the formats or the writing side. The terminal summary of a diagnose
run and the Diagnostic view both call `verdicts`, so they never disagree.

Thresholds (docs/diagnostic_format.md explains them; chosen so they hold on
a 2-core machine, where "linear up to the core count" is a single step 1 -> 2):
"""
from __future__ import annotations

from typing import Any, Iterable

import msgspec
import numpy as np
import pandas as pd

from ...readers.diagnostic import DiagnosticRun
from .spread import CONFIDENCE, crowded, level_spread, others_cpu_pct
from .threads import (ADVICE, cores_per_caller, cores_text, inside, inside_text, oversubscription,
                      oversubscription_text, workers_text)

BEST_WITHIN = 0.95  # best concurrency: the smallest level within 5 % of the best QPS
SCALE_EFFICIENCY = 0.7  # scales: QPS at min(cores, top level) >= 0.7 x level x QPS at level 1
FLAT_GAIN = 1.3  # a curve is flat when its best QPS is < 1.3 x its QPS at level 1
ONE_CORE_PCT = 130.0  # "about one busy core": thread-pool CPU <= 130 % at its best level
PROCESS_GAIN = 1.3  # processes scale where threads do not: best process QPS >= 1.3 x best thread QPS
GIL_HELD = 0.8  # GIL-bound: py-spy saw the GIL held >= 80 % of the sampled time (so a busy machine that
GIL_PARTLY = 0.5  # keeps processes from scaling does not hide it), or >= 50 % and processes scale; below 50 %
                  # with processes scaling, threads contend on something else
IO_HALF_LINEAR = 0.5  # I/O-bound: QPS at the best level >= 0.5 x level x QPS at level 1, the level past the
IO_CPU_PER_WORKER_PCT = 35.0  # core count (or >= 4 where the levels stop below it), each worker < 35 % of a core
# ... and its workers inside their calls at least this share of the time (QPS x median latency / level, Little's
# law): a waiting stage's workers wait in their calls (a 4 ms sleep at 4 threads: 0.9-1.0); a computing stage that
# a machine busy with other work starves sits outside them, unscheduled (a pure-Python loop beside three CPU hogs
# on 2 cores: 0.09, its CPU 0-35 % and its level 1 starved most, so "x9 at 4 workers with 0 % CPU").
IO_IN_CALLS = 0.4
CONTENTION_DROP = 0.7  # contention: QPS at the top level < 0.7 x the best QPS (machine not saturated)
SATURATED_BUSY = 0.75  # saturated: the stage or the machine keeps >= 75 % of all cores busy

VERDICT_LABELS = {
    "scales": "scales",
    "gil_bound": "GIL-bound",
    "cpu_saturated": "CPU-saturated",
    "io_bound": "I/O- or sleep-bound",
    "contention": "contention",
    "parallel_inside": "parallel inside",
    "oversubscribed": "oversubscribed",
    "inconclusive": "inconclusive",
    "not_swept": "not swept",
    "failing": "every call failed",
}

SWEEP_COLUMNS = [
    "stage", "executor", "concurrency", "items", "errors", "qps", "p50_latency_s", "p90_latency_s",
    "cpu_pct", "machine_cpu_pct", "peak_memory_bytes", "duration_s", "cut_short", "first_error",
    "slice_qps", "slice_cpu_pct", "slice_machine_cpu_pct", "qps_log_sd", "qps_log_se", "qps_df", "recordings",
    "intra_op_threads", "caller_cpu_pct", "cut_reason", "speedup",
]
BEST_COLUMNS = ["stage", "executor", "best_concurrency", "best_qps"]
GIL_COLUMNS = ["stage", "concurrency", "rank", "function", "file", "line", "samples", "share", "total_samples",
               "held_share", "skipped"]
VERDICT_COLUMNS = [
    "stage", "index", "verdict", "label", "reason", "cores",
    "best_thread_concurrency", "best_thread_qps", "best_process_concurrency", "best_process_qps",
    "thread_speedup", "process_speedup", "thread_cpu_pct", "process_cpu_pct", "peak_memory_bytes",
    "items", "errors", "first_error", "gil_function", "gil_file", "gil_line", "gil_share", "gil_held_share",
    "gil_skipped", "process_skipped", "cut_short", "thread_intra_op_threads", "process_intra_op_threads",
    "cores_by_itself", "oversubscription", "skipped_levels",
]


def as_dicts(records: Iterable[Any]) -> list[dict]:
    """Structs (tag = record type) or dicts -> dicts with a "type" key."""
    out = []
    for r in records:
        if isinstance(r, dict):
            out.append(r)
        else:
            out.append({"type": type(r).__struct_config__.tag, **msgspec.to_builtins(r)})
    return out


def environment(records: Iterable[Any]) -> dict:
    envs = [r for r in as_dicts(records) if r.get("type") == "environment"]
    return envs[0] if envs else {}


def sweep_frame(records: Iterable[Any]) -> pd.DataFrame:
    """One row per (stage, executor, concurrency); speedup is QPS over the
    same stage and executor's QPS at its lowest level."""
    # Fields left out because they held their default (omit_defaults) come back here.
    # `qps_log_sd`, `qps_log_se`, `qps_df`, `recordings`: only a group's pooled levels have them
    # (analysis/diagnostic/group.py).
    # `intra_op_threads`, `caller_cpu_pct`, `cut_reason`: 0 / "" in results written before they were measured.
    defaults = {"errors": 0, "cut_short": False, "first_error": "", "machine_cpu_pct": 0.0, "qps_log_sd": np.nan,
                "qps_log_se": np.nan, "qps_df": np.nan, "recordings": 1, "intra_op_threads": 0, "caller_cpu_pct": 0.0,
                "cut_reason": ""}
    no_slices = {"slice_qps": (), "slice_cpu_pct": (), "slice_machine_cpu_pct": ()}  # written before slices
    rows = [{**defaults, **no_slices, **r} for r in as_dicts(records) if r.get("type") == "sweep"]
    frame = pd.DataFrame(rows, columns=[c for c in SWEEP_COLUMNS if c != "speedup"])
    if frame.empty:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    frame = frame.sort_values(["stage", "executor", "concurrency"], kind="stable").reset_index(drop=True)
    base = frame.groupby(["stage", "executor"])["qps"].transform("first")
    frame["speedup"] = np.where(base > 0, frame["qps"] / base.where(base > 0, 1.0), np.nan)
    return frame[SWEEP_COLUMNS]


def best_concurrency(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per stage and executor: the smallest level within 5 % of the best QPS."""
    rows = []
    for (stage, executor), g in sweep.groupby(["stage", "executor"], sort=False):
        best = g["qps"].max()
        pick = g[g["qps"] >= BEST_WITHIN * best].sort_values("concurrency").iloc[0]
        rows.append({"stage": stage, "executor": executor, "best_concurrency": int(pick["concurrency"]),
                     "best_qps": float(pick["qps"])})
    return pd.DataFrame(rows, columns=BEST_COLUMNS)


def gil_holders(records: Iterable[Any]) -> pd.DataFrame:
    """Top GIL-holding functions per stage, rank 1 first; a stage that could
    not be sampled has one row with rank 0 and `skipped` saying why."""
    rows = []
    for r in as_dicts(records):
        if r.get("type") != "gil":
            continue
        base = {"stage": r["stage"], "concurrency": r["concurrency"], "total_samples": r.get("total_samples", 0),
                "held_share": r.get("held_share", 0.0), "skipped": r.get("skipped", "")}
        top = r.get("top") or []
        if not top:
            rows.append({**base, "rank": 0, "function": "", "file": "", "line": 0, "samples": 0, "share": 0.0})
        for rank, frame in enumerate(top, 1):
            rows.append({**base, "rank": rank, **{k: frame[k] for k in ("function", "file", "line", "samples",
                                                                        "share")}})
    return pd.DataFrame(rows, columns=GIL_COLUMNS)


def _curve(sweep: pd.DataFrame, stage: str, executor: str) -> pd.DataFrame:
    return sweep[(sweep["stage"] == stage) & (sweep["executor"] == executor)].sort_values("concurrency")


def _at_best(curve: pd.DataFrame) -> pd.Series | None:
    if curve.empty:
        return None
    best = curve["qps"].max()
    return curve[curve["qps"] >= BEST_WITHIN * best].iloc[0]


def _gain(curve: pd.DataFrame) -> float:
    """Best QPS over QPS at the lowest level (1.0 when unknown)."""
    if curve.empty or curve["qps"].iloc[0] <= 0:
        return 1.0
    return float(curve["qps"].max() / curve["qps"].iloc[0])


def scale_level(levels: Iterable[int], cores: int) -> int | None:
    """The thread level the "scales" rule reads: the largest level from 2 up
    to the core count, else the lowest level above 1 (None: no such level)."""
    levels = sorted(int(c) for c in levels)
    upto = [c for c in levels if 2 <= c <= cores] or [c for c in levels if c >= 2][:1]
    return max(upto) if upto else None


def _classify(threads: pd.DataFrame, procs: pd.DataFrame, cores: int, process_skipped: str,
              gil_name: str, gil_held: float | None) -> tuple[str, str]:
    t_best = _at_best(threads)
    p_best = _at_best(procs)
    if t_best is None and p_best is None:
        return "not_swept", "no sweep point was measured"

    # Several cores busy at one worker: the stage's own thread pool. Named before any rule reads the curves it
    # bends (on a few cores, one call already fills them; more workers then oversubscribe).
    found = inside(threads) or inside(procs)
    if found is not None:
        return "parallel_inside", _inside_reason(found, threads, procs, cores)
    lead = threads if t_best is not None else procs
    best = t_best if t_best is not None else p_best
    q1 = float(lead["qps"].iloc[0])
    level = int(best["concurrency"])
    speedup = float(best["qps"]) / q1 if q1 > 0 else 1.0

    # I/O or sleep: keeps gaining with more workers while each worker barely uses a core.
    cpu_per_worker = float(best["cpu_pct"]) / level
    top_level = int(lead["concurrency"].max())
    past_cores = level > cores and speedup > cores if top_level > cores else level >= 4
    in_calls = float(best["qps"]) * float(best["p50_latency_s"]) / level
    if (past_cores and speedup >= IO_HALF_LINEAR * level and cpu_per_worker < IO_CPU_PER_WORKER_PCT
            and not in_calls < IO_IN_CALLS):  # NaN latency (an old file): the other conditions alone
        return "io_bound", (f"QPS x{speedup:.1f} at {level} workers (more than the {cores} cores can explain) "
                            f"with only {best['cpu_pct']:.0f} % CPU: the time is spent waiting, not computing")

    # Held >= 80 % of the time, the GIL caps thread speed-up at 1/0.8 = 1.25x (Amdahl), whatever
    # noise a busy machine adds to the thread curve.
    if (t_best is not None and cores >= 2 and gil_held is not None and gil_held >= GIL_HELD
            and float(t_best["cpu_pct"]) <= ONE_CORE_PCT):
        holder = f"; GIL held most by {gil_name}" if gil_name else ""
        procs = f"; processes reach {p_best['qps']:.0f} QPS vs {t_best['qps']:.0f}" if p_best is not None else ""
        return "gil_bound", (f"threads x{_gain(threads):.2f} at {t_best['cpu_pct']:.0f} % CPU (about one core of "
                             f"{cores}); the GIL was held {100 * gil_held:.0f} % of the sampled time{procs}{holder}")

    # Scales: near-linear up to the core count.
    if t_best is not None and cores >= 2:
        c = scale_level(threads["concurrency"], cores)
        if c is not None:
            q = float(threads.loc[threads["concurrency"] == c, "qps"].iloc[0])
            if q1 > 0 and q >= SCALE_EFFICIENCY * min(c, cores) * q1:
                return "scales", (f"threads: QPS x{q / q1:.2f} at {c} (linear would be x{min(c, cores)}), "
                                  f"{best['cpu_pct']:.0f} % CPU at the best level")

    t_gain = _gain(threads)
    busy = SATURATED_BUSY * 100.0 * cores
    if t_best is not None and cores >= 2 and t_gain < FLAT_GAIN:
        holder = f"; GIL held most by {gil_name}" if gil_name else ""
        flat = f"threads flat (x{t_gain:.2f}) at {t_best['cpu_pct']:.0f} % CPU"
        procs_scale = p_best is not None and float(p_best["qps"]) >= PROCESS_GAIN * float(t_best["qps"])
        procs_said = (f"processes reach {p_best['qps']:.0f} QPS vs {t_best['qps']:.0f}" if procs_scale else
                      f"processes x{_gain(procs):.2f} (machine busy: {p_best['machine_cpu_pct']:.0f} % of "
                      f"{100 * cores} %)" if p_best is not None else
                      f"no processes ({process_skipped or 'not measured'})")
        one_core = float(t_best["cpu_pct"]) <= ONE_CORE_PCT
        if gil_held is None:
            if one_core and (procs_scale or p_best is None):
                return "gil_bound", (f"{flat}, about one core of {cores}; {procs_said}; GIL not sampled, so "
                                     f"not confirmed{holder}")
        elif one_core and gil_held >= GIL_PARTLY and procs_scale:
            return "gil_bound", (f"{flat}, about one core of {cores}; the GIL was held {100 * gil_held:.0f} % "
                                 f"of the sampled time; {procs_said}{holder}")
        elif gil_held < GIL_PARTLY and procs_scale and float(t_best["machine_cpu_pct"]) < busy:
            return "contention", (f"{flat} while {procs_said}, yet the GIL was held only {100 * gil_held:.0f} % "
                                  f"of the time: threads contend on something else they share (a lock, the "
                                  f"memory allocator, page faults), with cores to spare")

    for curve, b in ((threads, t_best), (procs, p_best)):
        over = oversubscription(curve, b, cores)
        if over is not None:
            return "oversubscribed", (f"{oversubscription_text(over)}: run at most "
                                      f"{workers_text(over['best_concurrency'], over['executor'])}")
    for b, what in ((t_best, "threads"), (p_best, "processes")):
        if b is not None and (float(b["cpu_pct"]) >= busy or float(b["machine_cpu_pct"]) >= busy):
            return "cpu_saturated", (f"{what}: QPS x{_gain(threads if what == 'threads' else procs):.2f} at best, "
                                     f"stage {b['cpu_pct']:.0f} % / machine {b['machine_cpu_pct']:.0f} % CPU "
                                     f"of {100 * cores} %: all cores are busy")
    for curve, what in ((threads, "threads"), (procs, "processes")):
        b = _at_best(curve)
        if b is not None and len(curve) >= 2:
            top = curve.iloc[-1]
            if float(top["qps"]) < CONTENTION_DROP * float(b["qps"]):
                return "contention", (f"{what}: QPS falls from {b['qps']:.0f} at {int(b['concurrency'])} to "
                                      f"{top['qps']:.0f} at {int(top['concurrency'])}")

    return "inconclusive", (f"threads x{t_gain:.2f} at {float(t_best['cpu_pct']) if t_best is not None else 0:.0f} % "
                            f"CPU, processes x{_gain(procs):.2f}: none of the patterns matches clearly")


def _inside_reason(found: dict, threads: pd.DataFrame, procs: pd.DataFrame, cores: int) -> str:
    """What a stage that runs parallel inside does at one worker, how the
    other executor fares with the threads it had, any oversubscription, and
    the advice."""
    parts = [inside_text(found)]
    other, name = (procs, "processes") if found["executor"] == "thread" else (threads, "threads")
    best = _at_best(other)
    if best is not None:
        own = inside(other)
        threads_each = int(other["intra_op_threads"].iloc[0])
        each = f" with {threads_each} intra-op thread{'' if threads_each == 1 else 's'} each" if threads_each else ""
        cores_each = f", {cores_text(own['cores'])} cores each at 1" if own else ""
        parts.append(f"{name}{each}: x{_gain(other):.2f}{cores_each}, best "
                     f"{workers_text(int(best['concurrency']), str(best['executor']))} ({best['qps']:.3g} QPS)")
    for curve in (threads, procs):
        over = oversubscription(curve, _at_best(curve), cores)
        if over is not None:
            parts.append(oversubscription_text(over))
    return "; ".join(parts) + f"; {ADVICE}"


def _intra_op(curve: pd.DataFrame) -> int | None:
    """torch's intra-op threads at the curve's lowest level (None: unknown, or no curve)."""
    threads = int(curve["intra_op_threads"].iloc[0]) if not curve.empty else 0
    return threads or None


def _skipped_levels(summary: dict) -> list[dict]:
    return [{k: s.get(k) for k in ("executor", "concurrency", "cause", "reason")}
            for s in summary.get("skipped_levels") or ()]


def verdicts(records: Iterable[Any]) -> pd.DataFrame:
    """One row per stage (in chain order) with VERDICT_COLUMNS."""
    records = as_dicts(records)
    cores = int(environment(records).get("cpu_count") or 1)
    sweep = sweep_frame(records)
    gil = gil_holders(records)
    summaries = {r["stage"]: r for r in records if r.get("type") == "stage"}
    order = list(summaries) + [s for s in dict.fromkeys(sweep["stage"]) if s not in summaries]
    rows = []
    for stage in order:
        summary = summaries.get(stage, {})
        threads, procs = _curve(sweep, stage, "thread"), _curve(sweep, stage, "process")
        g = gil[(gil["stage"] == stage)]
        top = g[g["rank"] == 1]
        gil_name = (f"{top['function'].iloc[0]} ({top['file'].iloc[0]}:{int(top['line'].iloc[0])})"
                    if len(top) else "")
        points = pd.concat([threads, procs])
        if summary.get("kind", "map") != "map" or (points.empty and summary.get("skipped")):
            verdict, reason = "not_swept", summary.get("skipped") or "not swept"
        elif not points.empty and (points["errors"] >= points["items"]).all():
            verdict, reason = "failing", f"every call raised: {points['first_error'].iloc[0]}"
        else:
            sampled = g[g["skipped"] == ""]
            held = float(sampled["held_share"].iloc[0]) if len(sampled) else None
            verdict, reason = _classify(threads, procs, cores, summary.get("process_skipped", ""), gil_name, held)
        t_best, p_best = _at_best(threads), _at_best(procs)
        has_top = len(top) > 0
        rows.append({
            "stage": stage, "index": summary.get("index"), "verdict": verdict,
            "label": VERDICT_LABELS[verdict], "reason": reason, "cores": cores,
            "best_thread_concurrency": int(t_best["concurrency"]) if t_best is not None else None,
            "best_thread_qps": float(t_best["qps"]) if t_best is not None else None,
            "best_process_concurrency": int(p_best["concurrency"]) if p_best is not None else None,
            "best_process_qps": float(p_best["qps"]) if p_best is not None else None,
            "thread_speedup": _gain(threads), "process_speedup": _gain(procs),
            "thread_cpu_pct": float(t_best["cpu_pct"]) if t_best is not None else None,
            "process_cpu_pct": float(p_best["cpu_pct"]) if p_best is not None else None,
            "peak_memory_bytes": int(points["peak_memory_bytes"].max()) if not points.empty else 0,
            "items": int(points["items"].sum()) if not points.empty else 0,
            "errors": int(points["errors"].sum()) if not points.empty else 0,
            "first_error": summary.get("first_error", "") or (
                next((e for e in points["first_error"] if e), None) if not points.empty else None) or None,
            "gil_function": top["function"].iloc[0] if has_top else None,
            "gil_file": top["file"].iloc[0] if has_top else None,
            "gil_line": int(top["line"].iloc[0]) if has_top else None,
            "gil_share": float(top["share"].iloc[0]) if has_top else None,
            "gil_held_share": float(g["held_share"].iloc[0]) if len(g) else None,
            "gil_skipped": (g["skipped"].iloc[0] or None) if len(g) else None,
            "process_skipped": summary.get("process_skipped") or None,
            "cut_short": bool(points["cut_short"].any()) or "cut short" in summary.get("skipped", ""),
            "thread_intra_op_threads": _intra_op(threads), "process_intra_op_threads": _intra_op(procs),
            "cores_by_itself": next((f["cores"] for f in (inside(threads), inside(procs)) if f), None),
            "oversubscription": "; ".join(oversubscription_text(o) for o in (
                oversubscription(threads, t_best, cores), oversubscription(procs, p_best, cores)) if o) or None,
            "skipped_levels": _skipped_levels(summary),
        })
    # Object columns: a stage without a thread curve has None, not a NaN
    # that would turn every other stage's concurrency into a float.
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS, dtype=object)


_POINT_FIELDS = ("concurrency", "qps", "speedup", "p50_latency_s", "p90_latency_s", "cpu_pct", "machine_cpu_pct",
                 "peak_memory_bytes", "items", "errors", "duration_s", "cut_short", "first_error", "recordings",
                 "intra_op_threads", "cut_reason")
_INTERVAL_FIELDS = ("qps_low", "qps_high", "cpu_pct_low", "cpu_pct_high")  # NaN (no slices) -> None
_ENVIRONMENT_FIELDS = ("python", "implementation", "free_threaded", "gil_enabled", "process_start_method", "levels",
                       "executors", "warmup_s", "duration_s", "source", "hostname")
_ENVIRONMENT_DEFAULTS = {"source": "function", "hostname": "", "free_threaded": False, "gil_enabled": True}
# Threads and the time limit: null where unknown (0 in the record, or written before they were).
_ENVIRONMENT_ZERO_IS_NULL = ("intra_op_threads", "process_intra_op_threads", "time_limit_s")


def report(run: DiagnosticRun) -> dict:
    """One run's results as the Diagnostic view reads them (the `diagnostic`
    route's answer but its `run`): per stage its verdict row, its curves
    (sweep points, best concurrency) and its GIL holders; how the sweep
    ended and on what machine."""
    records = as_dicts(run.records)
    sweep = sweep_frame(records)
    spread = level_spread(sweep)
    for column in _INTERVAL_FIELDS:
        sweep[column] = spread[column].to_numpy() if len(spread) else []
    best = best_concurrency(sweep).set_index(["stage", "executor"])
    summaries = {r["stage"]: r for r in records if r.get("type") == "stage"}
    gil = {r["stage"]: r for r in records if r.get("type") == "gil"}
    end = next((r for r in reversed(records) if r.get("type") == "end"), None)
    env = environment(records)
    cores = int(env.get("cpu_count") or 1)
    others, crowded_stages = others_cpu_pct(sweep, cores), crowded(sweep, cores)
    stages = []
    for v in verdicts(records).to_dict("records"):
        name = v["stage"]
        summary = summaries.get(name, {})
        stages.append({
            "stage": name, "index": v["index"], "kind": summary.get("kind"),
            "verdict": v["verdict"], "label": v["label"], "reason": v["reason"],
            **{k: v[k] for k in ("best_thread_concurrency", "best_thread_qps", "best_process_concurrency",
                                 "best_process_qps", "thread_speedup", "process_speedup", "peak_memory_bytes",
                                 "items", "errors", "cut_short", "first_error", "process_skipped",
                                 "cores_by_itself", "oversubscription", "skipped_levels")},
            "inputs": summary.get("inputs"), "input_errors": summary.get("input_errors", 0),
            "skipped": summary.get("skipped") or None, "curves": _curves(sweep, best, name),
            "gil": _gil_report(gil.get(name)), "others_cpu_pct": others.get(name, 0.0),
            "crowded": name in crowded_stages,
        })
    return {"complete": run.complete, "cut_short": run.cut_short,
            "reason": (end.get("reason") or None) if end else None,
            "elapsed_s": end.get("elapsed_s") if end else None,
            "environment": ({"cores": int(env.get("cpu_count") or 1),
                             **{k: env.get(k, _ENVIRONMENT_DEFAULTS.get(k)) for k in _ENVIRONMENT_FIELDS},
                             **{k: env.get(k) or None for k in _ENVIRONMENT_ZERO_IS_NULL}}
                            if env else None),
            "stages": stages, "warnings": list(run.warnings), "interval_confidence": CONFIDENCE,
            # A group of recordings (analysis/diagnostic/group.py): its recordings and measured spread.
            "group": getattr(run, "group", None)}


def _curves(sweep: pd.DataFrame, best: pd.DataFrame, stage: str) -> list[dict]:
    curves = []
    for executor in ("thread", "process"):
        points = sweep[(sweep["stage"] == stage) & (sweep["executor"] == executor)]
        if points.empty:
            continue
        b = best.loc[(stage, executor)]
        rows = [{**{k: p[k] for k in _POINT_FIELDS + _INTERVAL_FIELDS}, "cores_per_caller": cores_per_caller(p)}
                for p in points.to_dict("records")]
        for p in rows:
            for k in ("speedup", "cores_per_caller", *_INTERVAL_FIELDS):
                p[k] = None if np.isnan(p[k]) else p[k]
            for k in ("first_error", "intra_op_threads", "cut_reason"):
                p[k] = p[k] or None
        curves.append({"executor": executor, "best_concurrency": int(b["best_concurrency"]),
                       "best_qps": float(b["best_qps"]), "points": rows})
    return curves


def _gil_report(record: dict | None) -> dict | None:
    if record is None:
        return None
    return {"concurrency": record["concurrency"], "total_samples": record.get("total_samples", 0),
            "held_share": record.get("held_share", 0.0), "skipped": record.get("skipped") or None,
            "top": [{k: f[k] for k in ("function", "file", "line", "samples", "share")} for f in record.get("top", [])]}
