"""Baseline vs experimental, rank by rank (ranks matched by rank number) and
percentile by percentile (each quantity's own distribution over the ranks:
with thousands of ranks, "the 99th-percentile rank's communication grew"
says what a table of 10,000 deltas cannot)."""
from __future__ import annotations

import numpy as np

from ..analysis.rank_distribution import SPREAD_PERCENTILES
from .delta import delta_field_columns, delta_fields

QUANTITIES = ("step_time_us", "computation_us", "communication_us", "idle_us")


def diff_ranks(baseline: dict, experimental: dict) -> dict:
    """`baseline`, `experimental`: `analysis.distributed.ranks_summary` of each
    run. Rows for the ranks both runs have, with delta fields (computed a
    column at a time: 10,000 ranks), the others listed apart."""
    b_by_rank = {r["rank"]: r for r in baseline["ranks"]}
    e_by_rank = {r["rank"]: r for r in experimental["ranks"]}
    both = sorted(b_by_rank.keys() & e_by_rank.keys())
    b_rows, e_rows = [b_by_rank[r] for r in both], [e_by_rank[r] for r in both]
    columns: dict[str, list] = {"rank": both, "baseline_worker": [r["worker"] for r in b_rows],
                                "experimental_worker": [r["worker"] for r in e_rows]}
    for q in QUANTITIES:
        columns.update(delta_field_columns(q, np.array([r[q] for r in b_rows], dtype=np.float64),
                                           np.array([r[q] for r in e_rows], dtype=np.float64)))
    keys = list(columns)
    rows = [dict(zip(keys, values)) for values in zip(*columns.values())]
    return {"rows": rows, "unmatched_ranks": sorted(b_by_rank.keys() ^ e_by_rank.keys())}


def diff_percentiles(baseline: dict, experimental: dict) -> list[dict]:
    """One row per percentile of `SPREAD_PERCENTILES`: each quantity's value
    at that percentile over the ranks of each run, with delta fields. Empty
    when a run has no ranks."""
    b = {s["quantity"]: s["values"] for s in baseline["spread"]}
    e = {s["quantity"]: s["values"] for s in experimental["spread"]}
    if not b or not e:
        return []
    rows = []
    for i, pct in enumerate(SPREAD_PERCENTILES):
        row: dict = {"pct": pct}
        for q in QUANTITIES:
            row.update(delta_fields(q, b[q][i], e[q][i]))
        rows.append(row)
    return rows
