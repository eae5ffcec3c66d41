"""`diff/memory`: where the memory peak went, in the traces and in the CUDA memory snapshots."""
from __future__ import annotations

from ... import contract as C
from ...analysis.memory.snapshot import NO_SNAPSHOT, RunSnapshot
from ..memory.compare import diff_memory
from ..memory.snapshot import diff_snapshots
from . import UNNAMED, named


def diff_memory_impl(pair, snapshots: tuple[RunSnapshot, RunSnapshot] = (NO_SNAPSHOT, NO_SNAPSHOT),
                     refs: dict | None = None) -> C.DiffMemoryResponse:
    """Where the peak went (diff/memory/compare.py) and both runs' snapshots
    compared (diff/memory/snapshot.py), computed once per pair and snapshot files."""
    b, e = snapshots
    return named(pair.view(("diff/memory", b.key, e.key), lambda: _answer(pair, b, e)), refs)


def _answer(pair, b: RunSnapshot, e: RunSnapshot) -> C.DiffMemoryResponse:
    out = diff_memory(pair.b.memory(), pair.e.memory())
    messages = [f"baseline: {m}" for m in b.messages] + [f"experimental: {m}" for m in e.messages]
    snap = diff_snapshots(list(b.devices), list(e.devices), (b.file, e.file), messages)
    sentence = out["sentence"]
    if snap and snap["sentence"]:
        sentence = f"{sentence} {snap['sentence']}".strip()
    return C.DiffMemoryResponse(
        baseline=UNNAMED, experimental=UNNAMED, devices=[_device(d) for d in out["devices"]], device=out["device"],
        sentence=sentence, message=out["message"], snapshot=None if snap is None else _snapshot(snap))


# ---- the Structs, from the comparisons' dicts (their sentences read those) ----------------

_ROWS = ("by_module", "by_operator", "steady_by_module", "steady_by_operator")


def _device(d: dict) -> C.MemoryDeviceDiff:
    return C.MemoryDeviceDiff(**{
        **d,
        "baseline": _maybe(C.MemoryPeak, d["baseline"]), "experimental": _maybe(C.MemoryPeak, d["experimental"]),
        **{k: [C.MemoryRow(**r) for r in d[k]] for k in _ROWS},
        "steps": [C.MemoryStepPeak(**s) for s in d["steps"]],
        "baseline_curve": _maybe(C.MemoryCurve, d["baseline_curve"]),
        "experimental_curve": _maybe(C.MemoryCurve, d["experimental_curve"]),
    })


def _snapshot(s: dict) -> C.SnapshotDiff:
    return C.SnapshotDiff(**{**s, "devices": [_snapshot_device(d) for d in s["devices"]]})


def _snapshot_device(d: dict) -> C.SnapshotDeviceDiff:
    return C.SnapshotDeviceDiff(
        device=d["device"], baseline=_snapshot_side(d["baseline"]), experimental=_snapshot_side(d["experimental"]),
        metrics=[C.SnapshotMetric(**m) for m in d["metrics"]],
        **{k: [C.SnapshotRow(**r) for r in d[k]] for k in ("by_category", "by_frame", "by_module")})


def _snapshot_side(s: dict | None) -> C.SnapshotSide | None:
    if s is None:
        return None
    curve = s["curve"]
    return C.SnapshotSide(**{
        **s,
        "largest_segments": [C.SnapshotSegment(**g) for g in s["largest_segments"]],
        "step_peaks": [C.SnapshotStepPeak(**p) for p in s["step_peaks"]],
        "curve": C.SnapshotCurve(**{**curve, "steps": [C.SnapshotStepMark(**m) for m in curve["steps"]]}),
    })


def _maybe(struct: type, fields: dict | None):
    return None if fields is None else struct(**fields)
