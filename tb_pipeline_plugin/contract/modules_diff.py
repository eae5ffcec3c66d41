"""The aligned piece tree of a pair (`diff/modules`): a node, a page of its children, their trends."""
from __future__ import annotations

from typing import Literal

from msgspec import UNSET, UnsetType

from .common import Number, RunRef, _Shape
from .significance import Significance

# Which run(s) ran a module compiled (torch.compile); its other run's submodules are rolled up into it.
CompiledSide = Literal["baseline", "experimental", "both"]
# Which runs have it: a piece of the module diff, a contributor of the explanation.
# "inside_compiled": one run has it, inside a module the other run ran compiled (its work is that module's there).
PieceStatus = Literal["matched", "baseline_only", "experimental_only", "inside_compiled"]
PieceKind = Literal["root", "step", "data_loading", "module", "backward", "optimizer", "annotation", "unknown",
                    "compiled_region"]


class KernelFamily(_Shape):
    """A compiled region's device time of one kernel family on each side (analysis/kernel_names.py:kernel_family):
    Inductor's fused `triton_poi` / `triton_red` / `triton_per`, or what eager kernels compute (`gemm`, ...)."""

    family: str
    baseline_us: float
    experimental_us: float
    delta_us: float
    # Kernel launches of the family in the region, each side.
    baseline_kernels: int
    experimental_kernels: int


class CompiledRegion(_Shape):
    """A `compiled_region` piece (diff/compiled_region.py): one run's compiled graph calls of `module` compared
    as one piece with the eager pieces the other run ran in their place."""

    module: str
    side: CompiledSide  # the run that ran it compiled
    graphs: list[str]  # the graph calls' own names (`## Call CompiledFxGraph <hash> ##`)
    graph_ids: list[str]  # their hashes
    eager_pieces: list[str]  # the other run's pieces it replaced
    kernel_families: list[KernelFamily]


class DiffPiece(_Shape, kw_only=True):
    name: str
    kind: PieceKind
    key: str
    # The aligned step (first index of `path`); null on the root, which spans every step.
    step: int | None
    path: str
    status: PieceStatus
    has_children: bool
    # A module piece that ran compiled (torch.compile) in one run or both; null otherwise.
    compiled: CompiledSide | None
    baseline_name: str | None
    experimental_name: str | None
    note: str | None
    baseline_host_us: float
    experimental_host_us: float
    delta_host_us: float
    delta_host_pct: float | None
    baseline_device_us: float
    experimental_device_us: float
    delta_device_us: float
    delta_device_pct: float | None
    baseline_calls: Number
    experimental_calls: Number
    delta_calls: Number
    # The node only (absent on its children: UNSET): its children were aligned by an approximate fallback.
    approximate: bool | None | UnsetType = UNSET
    # Module pieces (diff/modules only): backward operators whose forward
    # operator ran inside the call (fwdbwd flows); null on other pieces.
    baseline_backward_us: float | None
    experimental_backward_us: float | None
    delta_backward_us: float | None
    # Host time with backward moved to the modules: a module piece's forward
    # plus backward, the `backward` piece what no sibling module claims
    # ("backward (unattributed)"), other pieces their host time.
    baseline_with_backward_us: float
    experimental_with_backward_us: float
    delta_with_backward_us: float
    delta_with_backward_pct: float | None
    # Module pieces: the module across steps (its per-step time in every
    # step of each run, diff/significance/marks.py), judged as one family per
    # level; forward + backward, forward, backward. Null on other pieces.
    significance: Significance | None = None
    forward_significance: Significance | None = None
    backward_significance: Significance | None = None
    # A `compiled_region` piece's graphs, the eager pieces it replaced and its kernels by family; absent
    # (UNSET) on other pieces.
    compiled_region: CompiledRegion | None | UnsetType = UNSET


class DiffTrend(_Shape):
    """Running sums over the returned children in execution order (µs)."""

    baseline_host_us: list[float]
    experimental_host_us: list[float]
    delta_host_us: list[float]
    baseline_device_us: list[float]
    experimental_device_us: list[float]
    delta_device_us: list[float]
    # The same for the host time with backward moved to the modules (DiffPiece.*_with_backward_us).
    baseline_with_backward_us: list[float]
    experimental_with_backward_us: list[float]
    delta_with_backward_us: list[float]


class Crumb(_Shape):
    name: str
    path: str


class DiffModulesResponse(_Shape):
    baseline: RunRef
    experimental: RunRef
    path: str
    breadcrumb: list[Crumb]
    node: DiffPiece
    approximate: bool
    children_total: int
    offset: int
    limit: int
    children: list[DiffPiece]
    trend: DiffTrend
    device_present: bool
    # A run kept the device busy most of its steps: the view opens on device time.
    device_bound: bool
    # The runs' work per step differs: the pieces are one step's, not per sample (the Overview, the
    # explanation and the tables are); null when the runs do the same work a step.
    per_unit_note: str | None
    # A group of recordings shows one recording's pieces and steps, its representative's (the median step
    # time): which, for each side (null: one recording), and the sentence the view shows; null for two runs.
    baseline_recording: str | None
    experimental_recording: str | None
    recordings_note: str | None
