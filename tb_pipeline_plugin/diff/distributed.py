"""Baseline vs experimental, rank by rank (ranks matched by rank number) and
percentile by percentile (each quantity's own distribution over the ranks:
with thousands of ranks, "the 99th-percentile rank's communication grew"
says what a table of 10,000 deltas cannot)."""
from __future__ import annotations

from ..analysis.rank_distribution import SPREAD_PERCENTILES
from .delta import delta_fields

QUANTITIES = ("step_time_us", "computation_us", "communication_us", "idle_us")


def diff_ranks(baseline: dict, experimental: dict) -> dict:
    """`baseline`, `experimental`: `analysis.distributed.ranks_summary` of each
    run. Rows for the ranks both runs have, with delta fields; the others listed apart."""
    b_by_rank = {r["rank"]: r for r in baseline["ranks"]}
    e_by_rank = {r["rank"]: r for r in experimental["ranks"]}
    rows = []
    for rank in sorted(b_by_rank.keys() & e_by_rank.keys()):
        b, e = b_by_rank[rank], e_by_rank[rank]
        row = {"rank": rank, "baseline_worker": b["worker"], "experimental_worker": e["worker"]}
        for q in QUANTITIES:
            row.update(delta_fields(q, b[q], e[q]))
        rows.append(row)
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
