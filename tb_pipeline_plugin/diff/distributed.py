"""Baseline vs experimental, rank by rank (ranks matched by rank number)."""
from __future__ import annotations

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
