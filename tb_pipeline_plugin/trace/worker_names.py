"""What a trace file's worker name says: the rank in it, and the order names sort in.

Shared by discovery (the picker's worker order), the distributed view (rank numbers of traces without a
distinct `distributedInfo.rank`) and the Composer reader (which rank's files hold the statistics).
"""
from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")
# `rank3`, `rank_3`, `sampled_rank-3`, Composer's `ep0-ba7-rank3`; a bare number
# (a process id in `host_pid`, torch's default worker name) is not a rank.
_RANK = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


def natural_key(name: str) -> list:
    """Sort key putting `rank2` before `rank10`: digit runs compare as numbers."""
    return [(0, int(part), part) if part.isdigit() else (1, 0, part) for part in _DIGITS.split(name) if part]


def rank_in_name(name: str) -> int | None:
    m = _RANK.search(name)
    return int(m.group(1)) if m else None
