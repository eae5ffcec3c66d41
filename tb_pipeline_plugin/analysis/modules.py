"""nn.Module call tree with host and device time per module."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.forest import depths, nearest_marked_ancestor
from ..trace.link import LinkedTrace
from ..trace.table import Kind, Phase
from ..trace.names import MODULE_PREFIX, is_module, module_class, name_mask

# Levels smaller than this are merged with a dict: a pandas call per level
# would dominate on a deep, narrow tree (one module per level).
_SMALL_LEVEL = 256


def module_rows(linked: LinkedTrace) -> np.ndarray:
    t = linked.table
    py = np.flatnonzero((t.phase == Phase.COMPLETE) & (t.kind == Kind.PYTHON_FUNCTION))
    return py[name_mask(t, py, is_module)]


def module_parents(linked: LinkedTrace, rows: np.ndarray) -> np.ndarray:
    """For each module call row, the enclosing module call row (or -1).

    Walks `Python parent id` where the trace has it (exact even when calls
    start in the same microsecond), else the time nesting.
    """
    t = linked.table
    marked = np.zeros(len(t), dtype=bool)
    marked[rows] = True
    if np.any(t.python_id >= 0) and np.all(t.python_id[rows] >= 0):
        step = linked.python_parent
    else:
        step = linked.parent
    return nearest_marked_ancestor(step, marked, step[rows])


def _tree_nodes(parent_idx: np.ndarray, name_ids: np.ndarray) -> tuple[np.ndarray, list[int], list[int]]:
    """Merge calls with the same name path: (node of each call, parent node
    of each node, name id of each node), nodes numbered parents first, in
    order of first appearance within a level."""
    depth, rooted = depths(parent_idx)
    if not rooted.all():  # only with corrupt links; cut the loop loose
        parent_idx = np.where(rooted, parent_idx, -1)
        depth, _ = depths(parent_idx)
    node = np.full(len(parent_idx), -1, dtype=np.int64)
    node_parent: list[int] = []
    node_name: list[int] = []
    order = np.argsort(depth, kind="stable")
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(depth[order])) + 1, [len(order)]))
    for a, b in zip(cuts[:-1], cuts[1:]):
        at = order[a:b]
        parent_node = np.where(parent_idx[at] >= 0, node[np.maximum(parent_idx[at], 0)], -1)
        if len(at) < _SMALL_LEVEL:
            seen: dict[tuple[int, int], int] = {}
            ids = []
            for key in zip(parent_node.tolist(), name_ids[at].tolist()):
                got = seen.get(key)
                if got is None:
                    got = seen[key] = len(node_parent)
                    node_parent.append(key[0])
                    node_name.append(key[1])
                ids.append(got)
            node[at] = ids
            continue
        key = pd.MultiIndex.from_arrays([parent_node, name_ids[at]])
        codes, uniques = pd.factorize(key)
        node[at] = codes + len(node_parent)
        node_parent.extend(int(p) for p, _ in uniques)
        node_name.extend(int(nm) for _, nm in uniques)
    return node, node_parent, node_name


def module_tree(linked: LinkedTrace) -> list[dict]:
    """Roots of the module tree; calls with the same name path are merged."""
    t = linked.table
    rows = module_rows(linked)
    if len(rows) == 0:
        return []
    parents = module_parents(linked, rows)
    index_of = pd.Series(np.arange(len(rows)), index=rows)
    parent_idx = np.full(len(rows), -1, dtype=np.int64)
    has = parents >= 0
    parent_idx[has] = index_of.reindex(parents[has]).fillna(-1).to_numpy(np.int64)
    node, node_parent, node_name = _tree_nodes(parent_idx, t.name_id[rows])

    frame = pd.DataFrame({
        "node": node, "calls": 1, "host_total_us": t.dur_us[rows],
        "device_total_us": linked.device_total_us[rows],
    }).groupby("node").sum()
    count = len(node_parent)
    host = frame["host_total_us"].reindex(range(count), fill_value=0.0).to_numpy()
    device = frame["device_total_us"].reindex(range(count), fill_value=0.0).to_numpy()
    calls = frame["calls"].reindex(range(count), fill_value=0).to_numpy()
    parent_arr = np.array(node_parent, dtype=np.int64)
    child_host = np.zeros(count)
    child_device = np.zeros(count)
    has_parent = parent_arr >= 0
    np.add.at(child_host, parent_arr[has_parent], host[has_parent])
    np.add.at(child_device, parent_arr[has_parent], device[has_parent])

    nodes = []
    for i in range(count):
        name = t.strings[node_name[i]][len(MODULE_PREFIX):]
        nodes.append({
            "name": name, "module_class": module_class(name), "calls": int(calls[i]),
            "host_total_us": float(host[i]), "host_self_us": float(max(host[i] - child_host[i], 0.0)),
            "device_total_us": float(device[i]), "device_self_us": float(max(device[i] - child_device[i], 0.0)),
            "children": [],
        })
    roots = []
    for i in range(count):
        (nodes[parent_arr[i]]["children"] if parent_arr[i] >= 0 else roots).append(nodes[i])
    return roots
