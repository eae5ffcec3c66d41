"""The memory budget every parse reserves its estimated peak against.

Light (threading only): TensorBoard's start (`pool.parse_early`) reserves
the first parses' memory before the plugin's own modules are imported, from
the same budget the plugin's loads reserve from later (`shared_budget`).
`TB_PIPELINE_MEMORY_BUDGET_MB` sets its size (default half the machine's memory).
"""
from __future__ import annotations

import threading

import psutil

from ..byte_units import bytes_text


class TraceTooLarge(Exception):
    """The trace's estimated parse footprint exceeds the memory budget."""


class MemoryBudget:
    """Reservations of estimated parse memory; blocks while others hold too much."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = budget_bytes
        self._used = 0
        self._cond = threading.Condition()

    def check(self, path: str, size: int, need: int) -> None:
        if need > self.budget_bytes:
            raise TraceTooLarge(
                f"not loaded: parsing this trace ({bytes_text(size)} on disk) needs about {bytes_text(need)} of memory, "
                f"over the budget of {bytes_text(self.budget_bytes)}; set TB_PIPELINE_MEMORY_BUDGET_MB to raise it "
                f"(this machine has {bytes_text(psutil.virtual_memory().total)})"
            )

    def acquire(self, need: int) -> None:
        with self._cond:
            # Alone, any parse that passed `check` may run.
            self._cond.wait_for(lambda: self._used == 0 or self._used + need <= self.budget_bytes)
            self._used += need

    def release(self, need: int) -> None:
        with self._cond:
            self._used -= need
            self._cond.notify_all()


_BUDGETS: dict[int, MemoryBudget] = {}
_BUDGETS_LOCK = threading.Lock()


def shared_budget(budget_bytes: int) -> MemoryBudget:
    """One budget per size per process, as one pool (`pool.shared_pool`): the
    parses TensorBoard's start begins and the plugin's own reserve together."""
    with _BUDGETS_LOCK:
        budget = _BUDGETS.get(budget_bytes)
        if budget is None:
            budget = _BUDGETS[budget_bytes] = MemoryBudget(budget_bytes)
        return budget
