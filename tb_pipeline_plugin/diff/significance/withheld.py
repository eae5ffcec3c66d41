"""A verdict withheld: a delta whose runs differ in a way that makes it
meaningless as it stands keeps its numbers, and its verdict says why it has
none (`not_comparable`). Why is diff/comparability.py's to say
(`host_time_void`); the explanation, the overview's work rows and the
reports withhold through here.
"""
from __future__ import annotations

from .method import NOT_COMPARABLE, VERDICT_WORDS


def voided(sig: dict | None, reason: str) -> dict | None:
    """`sig` with no verdict: its numbers stay, its verdict says why it has none."""
    if sig is None:
        return None
    return {**sig, "verdict": NOT_COMPARABLE, "label": f"{VERDICT_WORDS[NOT_COMPARABLE]}: {reason}"}
