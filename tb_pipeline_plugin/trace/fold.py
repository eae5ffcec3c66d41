"""torch's folding of same-name nested operators.

`EventList._remove_dup_nodes` (torch/autograd/profiler_util.py) drops an
operator whose parent has the same name and no other child (an in-place op
calling its out-of-place form, `aten::div` calling `aten::div`): the parent
takes over its children and kernels, and `key_averages()` counts one call.
The operator table follows it so its numbers are torch's.
"""
from __future__ import annotations

import numpy as np

from .table import EventTable, Kind


def fold_same_name(table: EventTable, parent: np.ndarray, host_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(folded operator rows, sorted; the surviving ancestor of each).
    `host_rows`: the complete host events that `parent` nests.

    Children are counted among all host events (runtime calls, annotations
    too), like torch's `cpu_children`. Testing each operator against the
    original tree gives torch's fixed point: once a child is folded its
    parent has exactly the child's children, so the next level's test is
    the same.
    """
    empty = np.empty(0, np.int64)
    ops = host_rows[table.kind[host_rows] == Kind.CPU_OP]
    up = parent[ops]
    has = up >= 0
    ops, up = ops[has], up[has]
    same = (table.kind[up] == Kind.CPU_OP) & (table.name_id[up] == table.name_id[ops])
    candidates, their_parent = ops[same], up[same]
    if len(candidates) == 0:
        return empty, empty
    kid_parents = parent[host_rows]
    kid_parents = np.sort(kid_parents[kid_parents >= 0])
    n_kids = np.searchsorted(kid_parents, their_parent, side="right") - np.searchsorted(kid_parents, their_parent)
    only = n_kids == 1
    folded, survivor = candidates[only], their_parent[only].copy()
    order = np.argsort(folded)
    folded, survivor = folded[order], survivor[order]
    # Chains (A > A > A) fold into the top one: pointer jumping, each pass
    # doubling how far a survivor has climbed, so a chain of n takes log n
    # passes, not n.
    while True:
        pos = np.minimum(np.searchsorted(folded, survivor), len(folded) - 1)
        up = folded[pos] == survivor
        if not up.any():
            break
        survivor = np.where(up, survivor[pos], survivor)
    return folded.astype(np.int64), survivor.astype(np.int64)
