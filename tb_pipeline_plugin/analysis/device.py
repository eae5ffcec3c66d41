"""What the run ran on: device properties and distributed setup from metadata.

Metadata comes straight from the file's top-level object, unchecked: every
field is validated here so odd values read as unknown, never as an error.
"""
from __future__ import annotations

import numpy as np

from ..trace.link import LinkedTrace
from ..trace.table import DEVICE_ACTIVITY_KINDS, EventTable, Phase


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value) -> str | None:
    return value if isinstance(value, str) else None


def _used_devices(table: EventTable) -> list[int]:
    rows = (table.phase == Phase.COMPLETE) & np.isin(table.kind, DEVICE_ACTIVITY_KINDS)
    ids = np.unique(table.device[rows])
    return [int(i) for i in ids if i >= 0]


def device_info(linked: LinkedTrace) -> dict:
    table = linked.table
    props = table.metadata.get("deviceProperties")
    # An entry describes a device only if it says which (an integer id).
    props = [p for p in props if isinstance(p, dict) and _int_or_none(p.get("id")) is not None] if isinstance(props, list) else []
    used = _used_devices(table)
    if not (linked.has_device or props):
        return {"type": "CPU", "name": None, "count": 0, "memory_bytes": None, "compute_capability": None}
    by_id = {i: p for p in props if (i := _int_or_none(p.get("id"))) is not None}
    chosen = next((by_id[i] for i in used if i in by_id), props[0] if props else {})
    major, minor = _int_or_none(chosen.get("computeMajor")), _int_or_none(chosen.get("computeMinor"))
    return {
        "type": "GPU",
        "name": _str_or_none(chosen.get("name")),
        # Devices this worker used; all listed ones when it launched nothing.
        "count": len(used) if used else len(props),
        "memory_bytes": _int_or_none(chosen.get("totalGlobalMem")),
        "compute_capability": f"{major}.{minor}" if major is not None and minor is not None else None,
    }


def distributed_info(table: EventTable) -> dict | None:
    info = table.metadata.get("distributedInfo")
    if not isinstance(info, dict):
        return None
    return {
        "rank": _int_or_none(info.get("rank")),
        "world_size": _int_or_none(info.get("world_size")),
        "backend": _str_or_none(info.get("backend")),
    }
