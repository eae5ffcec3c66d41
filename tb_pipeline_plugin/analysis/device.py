"""What the run ran on: device properties and distributed setup from metadata."""
from __future__ import annotations

import numpy as np

from ..trace.link import LinkedTrace
from ..trace.table import DEVICE_ACTIVITY_KINDS, EventTable, Phase


def _used_devices(table: EventTable) -> list[int]:
    rows = (table.phase == Phase.COMPLETE) & np.isin(table.kind, DEVICE_ACTIVITY_KINDS)
    ids = np.unique(table.device[rows])
    return [int(i) for i in ids if i >= 0]


def device_info(linked: LinkedTrace) -> dict:
    table = linked.table
    props = table.metadata.get("deviceProperties") or []
    props = [p for p in props if isinstance(p, dict)]
    used = _used_devices(table)
    is_gpu = linked.has_device or bool(props)
    if not is_gpu:
        return {"type": "CPU", "name": None, "count": 0, "memory_bytes": None, "compute_capability": None}
    by_id = {p.get("id"): p for p in props}
    chosen = next((by_id[i] for i in used if i in by_id), props[0] if props else {})
    major, minor = chosen.get("computeMajor"), chosen.get("computeMinor")
    return {
        "type": "GPU",
        "name": chosen.get("name"),
        "count": len(used) if used else len(props),
        "memory_bytes": chosen.get("totalGlobalMem"),
        "compute_capability": f"{major}.{minor}" if major is not None and minor is not None else None,
    }


def distributed_info(table: EventTable) -> dict | None:
    info = table.metadata.get("distributedInfo")
    if not isinstance(info, dict):
        return None
    return {"rank": info.get("rank"), "world_size": info.get("world_size"), "backend": info.get("backend")}
