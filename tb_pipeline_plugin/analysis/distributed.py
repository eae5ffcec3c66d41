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
Each rank is read from its record (`rank_record`, kept in the rank roll-up:
sources/rollup.py), never from its tables, so 10,000 ranks are 10,000 small
records.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.worker_names import natural_key, rank_in_name
from .rank_distribution import QUANTITIES, SPREAD_PERCENTILES, ranks_at_percentiles, spread

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


def rank_record(overview: dict, has_device: bool) -> dict:
    """What the distributed view keeps of one rank (its roll-up record,
    sources/rollup.py): the trace's own rank, world size and backend, its
    profiler steps and the split of its average step."""
    info = overview.get("distributed") or {}
    return {"rank": info.get("rank"), "world_size": info.get("world_size"), "backend": info.get("backend"),
            "steps": len(overview["steps"]), **rank_split(overview, has_device), "has_device": bool(has_device)}


# The slowest ranks listed by name (the whole table holds every rank).
SLOWEST_LISTED = 10


def ranks_summary(ranks: list[tuple[str, Any]]) -> dict:
    """`ranks`: (worker name, record) per worker file of the run, the record
    holding `rank_record`'s fields as attributes (sources/rollup.py:RankRecord).

    Rows are ordered by rank (`rank_numbers`: distinct, whatever their
    source); `slowest` names the straggler, `slowest_ranks` the first few by
    step time (ties: lower rank first); `percentiles` and `spread` give the
    distribution over ranks (analysis/rank_distribution.py). Orders are
    numpy sorts of columns: a run of 10,000 ranks is one pass of Python."""
    if not ranks:
        return {"ranks": [], "slowest": None, "median_step_time_us": None, "slowest_ranks": [],
                "percentiles": [], "spread_percentiles": list(SPREAD_PERCENTILES), "spread": []}
    workers = [w for w, _ in ranks]
    numbers, source = rank_numbers(workers, [rec.rank for _, rec in ranks])
    n = len(ranks)
    # One pass of attribute reads into a (rank, quantity) array: numpy from there.
    split = np.array([(rec.step_time_us, rec.computation_us, rec.communication_us, rec.idle_us) for _, rec in ranks],
                     dtype=np.float64).reshape(n, len(QUANTITIES))
    columns = {q: split[:, i] for i, q in enumerate(QUANTITIES)}
    step, rank_col = columns["step_time_us"], np.asarray(numbers)
    median = float(np.median(step))
    from_trace = source == "trace"
    row_of: dict[int, dict] = {}
    rows = []
    for i in np.argsort(rank_col, kind="stable").tolist():
        worker, rec = ranks[i]
        vs = rec.step_time_us - median
        row_of[i] = row = {
            "worker": worker, "rank": numbers[i], "rank_from_trace": from_trace, "rank_source": source,
            "world_size": rec.world_size, "backend": rec.backend, "steps": rec.steps,
            "step_time_us": rec.step_time_us, "computation_us": rec.computation_us,
            "communication_us": rec.communication_us, "idle_us": rec.idle_us,
            # Undefined against a median rank with no step time (every rank stepless).
            "vs_median_us": vs, "vs_median_pct": 100.0 * vs / median if median else None,
        }
        rows.append(row)
    slowest_first = np.lexsort((rank_col, -step))[:SLOWEST_LISTED]
    slowest = row_of[int(slowest_first[0])]
    return {
        "ranks": rows,
        "slowest": {"worker": slowest["worker"], "rank": slowest["rank"], "step_time_us": slowest["step_time_us"],
                    "vs_median_us": slowest["vs_median_us"], "vs_median_pct": slowest["vs_median_pct"]},
        "median_step_time_us": median,
        "slowest_ranks": [row_of[int(i)] for i in slowest_first],
        "percentiles": ranks_at_percentiles([row_of[int(i)] for i in np.lexsort((rank_col, step))]),
        "spread_percentiles": list(SPREAD_PERCENTILES),
        "spread": spread(columns),
    }
