"""A pair's operator and kernel delta tables (`diff/operators`, `diff/kernels`)."""
from __future__ import annotations

from typing import Literal

from .common import Number, RunRef, _Shape
from .significance import Significance
from .tables import GroupBy

# How diff/kernels joins two runs' device time: by kernel name, or by what launched it (diff/launches.py).
KernelGroupBy = Literal["name", "operator", "module"]


class DiffOperatorRow(_Shape):
    name: str
    input_shape: str | None
    baseline_calls: Number
    experimental_calls: Number
    delta_calls: Number
    delta_calls_pct: float | None
    baseline_host_self_us: float
    experimental_host_self_us: float
    delta_host_self_us: float
    delta_host_self_pct: float | None
    baseline_host_total_us: float
    experimental_host_total_us: float
    delta_host_total_us: float
    delta_host_total_pct: float | None
    baseline_device_self_us: float
    experimental_device_self_us: float
    delta_device_self_us: float
    delta_device_self_pct: float | None
    baseline_device_total_us: float
    experimental_device_total_us: float
    delta_device_total_us: float
    delta_device_total_pct: float | None
    # Of the primary column's delta, from per-step sums; null inside a piece (`path`).
    significance: Significance | None


class KernelShare(_Shape):
    """One kernel (or memcpy, memset) a launching operator or module ran, whole profiled window."""

    name: str
    # Its display name (analysis/kernel_names.py), distinct among both runs' kernels.
    short_name: str
    calls: Number
    total_us: Number


class DiffKernelRow(_Shape):
    # The kernel's name; grouped by launch, the launching operator's (`operator`) or the module path (`module`).
    name: str
    # Grouped by kernel name: the kernel's display name (templates and parameters folded, analysis/kernel_names.py),
    # distinct among both runs' kernels; null grouped by launch (`name` is then an operator or module).
    short_name: str | None
    # Grouped by `operator`: the module path of the operator's part of the step (a compiled module's other run
    # rolled up into it); null otherwise.
    module: str | None
    # Grouped by launch: each run's kernels of the row, largest first; null grouped by kernel name.
    baseline_kernels: list[KernelShare] | None
    experimental_kernels: list[KernelShare] | None
    baseline_calls: Number
    experimental_calls: Number
    delta_calls: Number
    delta_calls_pct: float | None
    baseline_total_us: float
    experimental_total_us: float
    delta_total_us: float
    delta_total_pct: float | None
    # Grouped by kernel name only (`columns` says which statistics a row compares).
    baseline_mean_us: float | None
    experimental_mean_us: float | None
    delta_mean_us: float | None
    delta_mean_pct: float | None
    baseline_min_us: float | None
    experimental_min_us: float | None
    delta_min_us: float | None
    delta_min_pct: float | None
    baseline_max_us: float | None
    experimental_max_us: float | None
    delta_max_us: float | None
    delta_max_pct: float | None
    # Of the primary column's delta, from per-step sums; null inside a piece (`path`).
    significance: Significance | None


class _DiffTable(_Shape):
    baseline: RunRef
    experimental: RunRef
    path: str
    device_present: bool
    total: int
    offset: int
    limit: int
    sort: str
    order: Literal["desc", "asc"]
    # The statistic the default order ranks by (its delta, largest |delta| first).
    primary: str
    # The statistics each row compares: baseline_X, experimental_X, delta_X and
    # its delta % (`delta_host_self_pct` for `host_self_us`: diff/delta.py, pct_name).
    columns: list[str]
    # "sample" / "token": the runs' work per step differs, so every summed time
    # (not calls, not a kernel's per-call mean/min/max) is µs per sample (token),
    # the marks too; null: each run's totals over its profiled window (or piece).
    per_unit: Literal["sample", "token"] | None
    per_unit_note: str | None


class DiffOperatorsResponse(_DiffTable):
    table: Literal["operators"]
    group_by: GroupBy
    rows: list[DiffOperatorRow]


class DiffKernelsResponse(_DiffTable):
    table: Literal["kernels"]
    # "name": kernels joined by name; "operator": device time by launching operator and module path, each run's
    # kernels listed (fp32 and bf16 GEMMs of one aten::addmm side by side); "module": by module path.
    group_by: KernelGroupBy
    rows: list[DiffKernelRow]
