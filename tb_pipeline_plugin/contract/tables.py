"""One run's tables: operators, kernels and the module tree (`operators`, `kernels`, `modules`)."""
from __future__ import annotations

from typing import Literal

from .common import _Shape

# How operator rows are grouped: by name, or by name and input shape (the
# routes' `group_by` parameter and answer field; analysis/operators.py's GROUP_BY).
GroupBy = Literal["name", "name_and_shape"]


class OperatorRow(_Shape):
    name: str
    input_shape: str | None
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float


class OperatorsResponse(_Shape):
    run: str
    worker: str
    span: str
    group_by: GroupBy
    device_present: bool
    total: int
    rows: list[OperatorRow]


class KernelRow(_Shape):
    # The full (demangled) kernel name: the row's key, what filtering matches.
    name: str
    # Its display name: templates and parameters folded, distinct within the table (analysis/kernel_names.py).
    short_name: str
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    grid: str | None
    block: str | None
    registers_per_thread: float | None
    shared_memory_bytes: float | None
    blocks_per_sm: float | None
    warps_per_sm: float | None
    occupancy_pct: float | None


class KernelsResponse(_Shape):
    run: str
    worker: str
    span: str
    device_present: bool
    total: int
    rows: list[KernelRow]


class ModuleNode(_Shape):
    name: str
    module_class: str
    calls: int
    host_total_us: float
    host_self_us: float
    device_total_us: float
    device_self_us: float
    children: list["ModuleNode"]


class ModulesResponse(_Shape):
    run: str
    worker: str
    span: str
    device_present: bool
    roots: list[ModuleNode]
