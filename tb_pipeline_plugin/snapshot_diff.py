"""`tb-pipeline diff a.pickle b.pickle`: two CUDA memory snapshots compared
on their own, without a trace or statistics (issue 46), as the Memory tab
and `diff/memory` compare a run's snapshot: the sentence, each device's
peak allocated, reserved and fragmentation, and what was live at the peaks.
The snapshots are read with the unpickler that refuses every global
(readers/memory_snapshot.py).
"""
from __future__ import annotations

import json

from .analysis.memory.snapshot import snapshot_memory
from .diff.memory.snapshot import diff_snapshots
from .readers.memory_snapshot import SnapshotError, read_snapshot
from .report.text import table

SUFFIX = ".pickle"


def is_snapshot_pair(baseline: str, experimental: str) -> bool:
    return str(baseline).endswith(SUFFIX) and str(experimental).endswith(SUFFIX)


def snapshot_pair(baseline: str, experimental: str) -> dict:
    """`diff/memory`'s snapshot part for two snapshot files; ValueError names a file that is not one."""
    sides = []
    for path in (baseline, experimental):
        try:
            sides.append(snapshot_memory(read_snapshot(str(path))))
        except SnapshotError as exc:
            raise ValueError(f"{path}: {exc}") from None
    names = tuple(str(p).rsplit("/", 1)[-1] for p in (baseline, experimental))
    return diff_snapshots(sides[0], sides[1], names, [])


def render(part: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(part, indent=2) + "\n"
    if fmt != "text":
        raise ValueError("two snapshots compared on their own print --format text or json; put each beside its "
                         "run's trace for every report format")
    out = [f"baseline:     {part['baseline_file']}", f"experimental: {part['experimental_file']}", "",
           part["sentence"]]
    for device in part["devices"]:
        out += ["", f"{device['device']} (bytes)",
                table([{"metric": m["metric"], "baseline_bytes": m["baseline_bytes"],
                        "experimental_bytes": m["experimental_bytes"], "delta_bytes": m["delta_bytes"],
                        "delta_pct": m["delta_pct"]} for m in device["metrics"]],
                      ["metric", "baseline_bytes", "experimental_bytes", "delta_bytes", "delta_pct"]),
                "", "Live at the peaks by category (bytes)",
                table([{"category": r["key"], "baseline_bytes": r["baseline_bytes"],
                        "experimental_bytes": r["experimental_bytes"], "delta_bytes": r["delta_bytes"],
                        "delta_pct": r["delta_pct"]} for r in device["by_category"]],
                      ["category", "baseline_bytes", "experimental_bytes", "delta_bytes", "delta_pct"])]
    return "\n".join(out) + "\n"
