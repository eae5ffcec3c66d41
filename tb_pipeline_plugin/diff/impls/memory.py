"""`diff/memory`: where the memory peak went."""
from __future__ import annotations

from ..memory.compare import diff_memory


def diff_memory_impl(pair) -> dict:
    """Where the peak went (diff/memory/compare.py), computed once per pair."""
    return pair.view(("diff/memory",), lambda: diff_memory(pair.b.memory(), pair.e.memory()))
