"""The explanation's pipeline part: what the pipeline statistics of both runs
say about the step-time delta, when both runs have them.

* data wait per step: each run's recorded steps (analysis/statistics/report.py's
  `main_steps`: the main loader, replayed steps of a headspace run) are the
  per-step samples; the delta is judged as every other per-step delta
  (diff/significance/method.py), against the baseline's mean step time, like a part
  of the step;
* the input-bound verdict of each run and whether it changed;
* the stage whose throughput changed most (relative), with its queue waits;
* the stage limiting a GIL-bound pipeline (analysis/statistics/gil.py), the
  experimental run's first: more threads will not help there.

The statistics cover every recorded step, the trace only the profiled ones:
the step counts in `significance` say which samples the verdict rests on.
"""
from __future__ import annotations

import math

import numpy as np

from ...analysis.statistics import report as ap
from ..delta import delta_pct
from ..significance.pipeline import data_wait_significance, data_wait_us, step_mean_us
from ..statistics.compare import STAGE_KEYS
from .words import INPUT_BOUND_WORDS, duration

# A stage whose throughput moved less than this is not worth a clause.
STAGE_NOTABLE_PCT = 10.0


def _mean(a: np.ndarray) -> float | None:
    return round(float(a.mean()), 3) if len(a) else None


def data_wait(b_tables, e_tables, noise) -> dict:
    """Mean data wait per step (µs) of both runs, delta and significance."""
    (bw, _), (ew, _) = data_wait_us(b_tables), data_wait_us(e_tables)
    b_step, e_step = step_mean_us(b_tables), step_mean_us(e_tables)
    sig = data_wait_significance(b_tables, e_tables, noise=noise)
    b, e = _mean(bw), _mean(ew)
    delta = round(e - b, 3) if b is not None and e is not None else None
    return {"baseline_us": b, "experimental_us": e, "delta_us": delta, "delta_pct": delta_pct(b, delta),
            "baseline_step_us": None if b_step is None else round(b_step, 3),
            "experimental_step_us": None if e_step is None else round(e_step, 3),
            "significance": sig}


def input_bound(b_report: dict, e_report: dict) -> dict:
    b, e = b_report["input_bound"], e_report["input_bound"]
    return {"baseline": b["verdict"], "experimental": e["verdict"], "changed": b["verdict"] != e["verdict"],
            "baseline_data_wait_pct": b["data_wait_pct"], "experimental_data_wait_pct": e["data_wait_pct"]}


def _finite(v) -> float | None:
    return float(v) if isinstance(v, (int, float, np.floating)) and math.isfinite(float(v)) else None


def _delta_pct(b, e) -> float | None:
    """delta.py's delta % of two statistics, None where either is not finite."""
    b, e = _finite(b), _finite(e)
    return None if b is None or e is None else delta_pct(b, e - b)


def stage_change(b_tables, e_tables) -> dict | None:
    """The stage both runs have (matched by pipeline index and name, as
    diff/statistics/compare.py's stage rows) that changed most: by |delta mean task
    time| (the stage's own cost: in a steady pipeline every stage's
    throughput follows the slowest one, so throughput alone does not say
    which stage changed), stages without task timings (source, sink) after
    those, by relative throughput change. None without a stage in both runs."""
    b = ap.stage_table(b_tables.stage_tasks, b_tables.stage_queues)
    e = ap.stage_table(e_tables.stage_tasks, e_tables.stage_queues)
    both = b.merge(e, on=STAGE_KEYS, how="inner", suffixes=("_b", "_e"))
    best, best_key = None, (-1, -1.0)
    for r in both.to_dict("records"):
        tb, te = _finite(r["task_mean_s_b"]), _finite(r["task_mean_s_e"])
        qps = _delta_pct(r["qps_b"], r["qps_e"])
        key = (1, abs(te - tb)) if tb is not None and te is not None else (0, abs(qps) if qps is not None else -1.0)
        if key > best_key:
            best_key = key
            best = {"stage": str(r["stage_name"]), "pipeline_index": int(r["pipeline_index"]),
                    "baseline_task_mean_s": tb, "experimental_task_mean_s": te,
                    "delta_task_mean_pct": _delta_pct(tb, te),
                    "baseline_qps": _finite(r["qps_b"]), "experimental_qps": _finite(r["qps_e"]),
                    "delta_qps_pct": qps,
                    "baseline_busy_pct": _finite(r["busy_pct_b"]), "experimental_busy_pct": _finite(r["busy_pct_e"]),
                    "baseline_get_wait_s": _finite(r["get_wait_mean_s_b"]),
                    "experimental_get_wait_s": _finite(r["get_wait_mean_s_e"]),
                    "baseline_put_wait_s": _finite(r["put_wait_mean_s_b"]),
                    "experimental_put_wait_s": _finite(r["put_wait_mean_s_e"])}
    return best


def gil_limit(b_report: dict, e_report: dict) -> dict | None:
    """{run, stage, cpu_cores} of the GIL-bound run, experimental first."""
    for run, rep in (("experimental", e_report), ("baseline", b_report)):
        neck = rep["bottleneck"]
        if neck["gil_bound"]:
            return {"run": run, "stage": neck["slowest_stage"], "cpu_cores": neck["gil_cpu_cores"]}
    return None


def loader_limit(b_report: dict, e_report: dict) -> dict | None:
    """{run, part, stage} of the DataLoader part limiting an input-bound run,
    experimental first."""
    for run, rep in (("experimental", e_report), ("baseline", b_report)):
        neck = rep["bottleneck"]
        if neck.get("loader_part") and rep["input_bound"]["verdict"] in ("yes", "partly"):
            return {"run": run, "part": neck["loader_part"], "stage": neck["slowest_stage"]}
    return None


def pipeline_part(b_tables, e_tables, noise) -> dict:
    """The `pipeline` part of the explanation for two runs' recorded
    statistics (pipeline.PipelineTables), judged under the `noise` policy
    (significance.NoisePolicy)."""
    b_report, e_report = ap.report(b_tables), ap.report(e_tables)
    part = {"data_wait": data_wait(b_tables, e_tables, noise), "input_bound": input_bound(b_report, e_report),
            "stage": stage_change(b_tables, e_tables), "gil": gil_limit(b_report, e_report),
            "loader": loader_limit(b_report, e_report)}
    part["clause"] = clause(part)
    return part


def clause(part: dict) -> str:
    """One clause for the sentence: "the pipeline's data wait grew from 2 ms
    to 19 ms per step (significant) and the run became input-bound; stage
    load's task time grew from 1 ms to 30 ms and its throughput fell 91 %"."""
    w, ib, st = part["data_wait"], part["input_bound"], part["stage"]
    if w["baseline_us"] is None or w["experimental_us"] is None:
        text = "the pipeline statistics hold no steps in " + ("either run" if w["baseline_us"] is None and
                                                            w["experimental_us"] is None else
                                                            "the baseline" if w["baseline_us"] is None
                                                            else "the experimental run")
    else:
        # Equal in the words the sentence prints ("fell from 106 µs to 106 µs" says nothing): stayed.
        same = duration(w["baseline_us"]) == duration(w["experimental_us"])
        verb = "stayed" if same else "grew" if w["delta_us"] > 0 else "fell" if w["delta_us"] < 0 else "stayed"
        span = (f"from {duration(w['baseline_us'])} to {duration(w['experimental_us'])}" if verb != "stayed"
                else f"at {duration(w['baseline_us'])}")
        text = (f"the pipeline's data wait {verb} {span} per step "
                f"({w['significance']['label']})")
    b, e = ib["baseline"], ib["experimental"]
    if ib["changed"]:
        if e == "yes":
            text += " and the run became input-bound"
        elif b == "yes":
            text += f" and the run is no longer input-bound (now {INPUT_BOUND_WORDS[e]})"
        else:
            text += f" and the run went from {INPUT_BOUND_WORDS[b]} to {INPUT_BOUND_WORDS[e]}"
    elif b in ("yes", "partly"):
        text += f"; both runs are {INPUT_BOUND_WORDS[b]}"
    if st is not None:
        moved = []
        task = st["delta_task_mean_pct"]
        if task is not None and abs(task) >= STAGE_NOTABLE_PCT:
            moved.append(f"task time {'grew' if task > 0 else 'fell'} from {duration(st['baseline_task_mean_s'] * 1e6)} "
                         f"to {duration(st['experimental_task_mean_s'] * 1e6)}")
        qps = st["delta_qps_pct"]
        if qps is not None and abs(qps) >= STAGE_NOTABLE_PCT:
            moved.append(f"throughput {'rose' if qps > 0 else 'fell'} {abs(qps):.0f} %")
        if moved:
            text += f"; stage {st['stage']}'s " + " and its ".join(moved)
    gil = part.get("gil")
    if gil is not None:
        text += (f"; the {gil['run']} pipeline's threads take turns at the GIL and stage {gil['stage']} limits it "
                 "(processes, not threads, would help)")
    loader = part.get("loader")
    if loader is not None:
        text += f"; in the {loader['run']} run the DataLoader's {loader['part']} limits loading"
    return text


def with_clause(sentence: str, text: str) -> str:
    """The explanation sentence with the pipeline clause as its last clause."""
    body = sentence[:-1] if sentence.endswith(".") else sentence
    return f"{body}; {text}."
