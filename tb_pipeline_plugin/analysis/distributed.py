"""Ranks of one distributed run side by side: where each rank's step goes.

Built from each rank's overview (the step breakdown gives every microsecond
of a step one category, so the parts add up to the step time):

* with device activity: computation = kernel + memcpy + memset time,
  communication = communication kernels, idle = the rest of the step (the
  device waits: on the host, the launch queue, the data loader);
* host only: communication = host collectives, idle = data loading (the
  rank waits for input), computation = the rest.

The straggler is the rank with the longest average step; every rank is also
given against the median rank, which is what a straggler holds the others to.
"""
from __future__ import annotations

import statistics

from ..trace.worker_names import natural_key, rank_in_name

DEVICE_COMPUTE = ("kernel", "memcpy", "memset")
SPLIT = ("computation_us", "communication_us", "idle_us")


def _distinct(values: list) -> bool:
    return None not in values and len(set(values)) == len(values)


def rank_numbers(workers: list[str], traced: list[int | None]) -> tuple[list[int], str]:
    """Each worker's rank and where it comes from: "trace" (`distributedInfo.rank`,
    when every worker has a distinct one), "name" (`rankN` in every worker's
    name, distinct), else "order": the worker's position in natural order
    (`w2` before `w10`; copied or mislabelled files must not collapse into one rank)."""
    if _distinct(traced):
        return list(traced), "trace"
    named = [rank_in_name(w) for w in workers]
    if _distinct(named):
        return named, "name"
    order = sorted(range(len(workers)), key=lambda i: (natural_key(workers[i]), i))
    position = {worker_index: rank for rank, worker_index in enumerate(order)}
    return [position[i] for i in range(len(workers))], "order"


def rank_split(overview: dict, has_device: bool) -> dict:
    """Average step time of one rank and its computation / communication / idle parts (µs)."""
    b = overview["breakdown_us"]
    step = float(overview["avg_step_time_us"])
    comm = float(b["communication"])
    if has_device:
        compute = float(sum(b[c] for c in DEVICE_COMPUTE))
        idle = step - compute - comm
    else:
        idle = float(b["data_loading"])
        compute = step - comm - idle
    return {"step_time_us": step, "computation_us": compute, "communication_us": comm, "idle_us": max(idle, 0.0)}


def ranks_summary(ranks: list[tuple[str, dict, bool]]) -> dict:
    """`ranks`: (worker name, overview, has_device) per worker file of the run.

    Rows are ordered by rank (`rank_numbers`); `slowest` names the straggler."""
    infos = [ov.get("distributed") or {} for _, ov, _ in ranks]
    numbers, source = rank_numbers([w for w, _, _ in ranks], [info.get("rank") for info in infos])
    rows = []
    for rank, (worker, ov, has_device), info in zip(numbers, ranks, infos):
        rows.append({
            "worker": worker,
            "rank": rank,
            "rank_from_trace": source == "trace",
            "rank_source": source,
            "world_size": info.get("world_size"),
            "backend": info.get("backend"),
            "steps": len(ov["steps"]),
            **rank_split(ov, has_device),
        })
    rows.sort(key=lambda r: (r["rank"], r["worker"]))
    if not rows:
        return {"ranks": [], "slowest": None, "median_step_time_us": None}
    median = statistics.median(r["step_time_us"] for r in rows)
    for r in rows:
        r["vs_median_us"] = r["step_time_us"] - median
        # Undefined against a median rank with no step time (every rank stepless).
        r["vs_median_pct"] = 100.0 * r["vs_median_us"] / median if median else None
    slowest = max(rows, key=lambda r: (r["step_time_us"], -r["rank"]))
    return {
        "ranks": rows,
        "slowest": {"worker": slowest["worker"], "rank": slowest["rank"], "step_time_us": slowest["step_time_us"],
                    "vs_median_us": slowest["vs_median_us"], "vs_median_pct": slowest["vs_median_pct"]},
        "median_step_time_us": median,
    }
