"""nn.Module call tree with host and device time per module."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..trace.link import LinkedTrace
from ..trace.table import Kind, Phase
from ..trace.names import MODULE_PREFIX, is_module, module_class, name_mask


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
    n = len(t)
    is_module = np.zeros(n, dtype=bool)
    is_module[rows] = True
    py_rows = np.flatnonzero(t.python_id >= 0)
    if len(py_rows) and np.all(t.python_id[rows] >= 0):
        by_id = pd.Series(py_rows, index=t.python_id[py_rows])
        by_id = by_id[~by_id.index.duplicated(keep="last")]
        step = np.full(n, -1, dtype=np.int64)
        pos = by_id.index.get_indexer(t.python_parent_id[py_rows])
        step[py_rows[pos >= 0]] = by_id.to_numpy()[pos[pos >= 0]]
    else:
        step = linked.parent
    cur = step[rows].copy()
    pending = np.flatnonzero(cur >= 0)
    pending = pending[~is_module[cur[pending]]]
    guard = 0
    while len(pending) and guard < 10_000:
        cur[pending] = step[cur[pending]]
        pending = pending[cur[pending] >= 0]
        pending = pending[~is_module[cur[pending]]]
        guard += 1
    return cur


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

    # Depth in the module tree, then node ids level by level (path merging).
    depth = np.zeros(len(rows), dtype=np.int64)
    cur = parent_idx.copy()
    while np.any(cur >= 0):
        depth += cur >= 0
        cur = np.where(cur >= 0, parent_idx[np.maximum(cur, 0)], -1)
    node = np.full(len(rows), -1, dtype=np.int64)
    node_parent: list[int] = []
    node_name: list[int] = []
    for level in range(int(depth.max()) + 1):
        at = np.flatnonzero(depth == level)
        parent_node = np.where(parent_idx[at] >= 0, node[np.maximum(parent_idx[at], 0)], -1)
        key = pd.MultiIndex.from_arrays([parent_node, t.name_id[rows[at]]])
        codes, uniques = pd.factorize(key)
        node[at] = codes + len(node_parent)
        node_parent.extend(int(p) for p, _ in uniques)
        node_name.extend(int(nm) for _, nm in uniques)

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
