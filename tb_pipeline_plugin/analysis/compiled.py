"""Where torch.compile ran: the module paths whose calls ran compiled code.

A compiled module's forward runs as one graph (`Torch-Compiled Region`,
`CompiledFunction`, Inductor's `## Call CompiledFxGraph ...` annotation) and
its backward as `CompiledFunctionBackward`: its submodules never appear as
`nn.Module` calls, and their work is the region's. Comparing such a run with
an eager one, the compiled module's path is where the two meet: the eager
side's submodules are its subtree, not modules the compiled run lacks.
"""
from __future__ import annotations

import numpy as np

from ..trace.forest import nearest_marked_ancestor
from ..trace.link import LinkedTrace
from ..trace.names import name_mask
from .attribution import Attribution
from .labels import MODULE

_MARKERS = ("Torch-Compiled Region", "CompiledFunction", "## Call CompiledFxGraph")
# The autograd engine's wrapper of a compiled backward.
_BACKWARD_MARKER = "CompiledFunctionBackward"


def is_compiled_code(name: str) -> bool:
    return name.startswith(_MARKERS)


def compiled_modules(linked: LinkedTrace, attribution: Attribution) -> frozenset[str]:
    """The module paths of the top-level operators that ran compiled code (a
    compiled-code event is one of them or inside one): the module around a
    compiled forward, and for a compiled backward the module of its forward."""
    t = linked.table
    ops = attribution.operators
    rows = np.flatnonzero(linked.is_host)
    marked = rows[name_mask(t, rows, lambda name: is_compiled_code(name) or name.endswith(_BACKWARD_MARKER))]
    if not len(marked) or not len(ops):
        return frozenset()
    op_rows = ops["row"].to_numpy(np.int64)
    top_level = np.zeros(len(t), dtype=bool)
    top_level[op_rows] = True
    top = nearest_marked_ancestor(linked.parent, top_level, marked)
    at = np.searchsorted(op_rows, top[top >= 0])
    kind, key = ops["kind"].to_numpy(object)[at], ops["key"].to_numpy(object)[at]
    return frozenset(k for kd, k in zip(kind, key) if kd == MODULE and k)


def compiled_root(path: str, compiled: frozenset[str]) -> str | None:
    """The outermost compiled module at or above `path`, None outside any."""
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if prefix in compiled:
            return prefix
    return None
