"""Baseline vs experimental CUDA memory snapshots: peaks, reserved, fragmentation, what was live at each peak.

Each side is the run's snapshots read (readers/memory_snapshot.py) and
replayed (analysis/memory/snapshot.py); a run with several takes its last
(by file name). Devices are matched by name; rows (by category, user frame,
module) are joined by key, largest |delta| first. The sentence: the peak's
change, reserved, then what was live at the peaks that changed most.
"""
from __future__ import annotations

import numpy as np

from ...analysis.memory.snapshot import DeviceSnapshot
from ...byte_units import bytes_text as size
from ..delta import delta_pct

MAX_CURVE_POINTS = 1500
MAX_ROWS = 50


def diff_snapshots(b: list[DeviceSnapshot] | None, e: list[DeviceSnapshot] | None,
                   files: tuple[str | None, str | None], messages: list[str]) -> dict | None:
    """The `snapshot` part of `diff/memory`; None when neither run has a snapshot nor a refused file."""
    if not b and not e and not messages:
        return None
    by_b, by_e = {d.device: d for d in b or []}, {d.device: d for d in e or []}
    names = sorted(set(by_b) | set(by_e))
    devices = [_device(n, by_b.get(n), by_e.get(n)) for n in names]
    shown = next((d for d in devices if d["baseline"] and d["experimental"]), devices[0] if devices else None)
    return {"baseline_file": files[0], "experimental_file": files[1], "messages": messages, "devices": devices,
            "sentence": snapshot_sentence(shown) if shown else ""}


def _side(d: DeviceSnapshot | None) -> dict | None:
    if d is None:
        return None
    return {"peak_allocated_bytes": d.peak_allocated_bytes, "peak_step": d.peak_step,
            "reserved_at_peak_bytes": d.reserved_at_peak_bytes, "peak_reserved_bytes": d.peak_reserved_bytes,
            "end_reserved_bytes": d.end_reserved_bytes, "end_allocated_bytes": d.end_allocated_bytes,
            "start_allocated_bytes": d.start_allocated_bytes,
            "fragmentation_at_peak_bytes": d.fragmentation_at_peak_bytes,
            "end_fragmentation_bytes": d.end_fragmentation_bytes,
            "largest_segments": d.largest_segments, "step_peaks": d.step_peaks, "curve": _curve(d)}


def _metric(name: str, b: int | None, e: int | None) -> dict:
    delta = e - b if b is not None and e is not None else None
    return {"metric": name, "baseline_bytes": b, "experimental_bytes": e, "delta_bytes": delta,
            "delta_pct": delta_pct(b, delta) if delta is not None else None}


def _device(name: str, b: DeviceSnapshot | None, e: DeviceSnapshot | None) -> dict:
    def v(d, attr):
        return getattr(d, attr) if d is not None else None

    metrics = [_metric(label, v(b, attr), v(e, attr)) for label, attr in (
        ("peak allocated", "peak_allocated_bytes"), ("reserved (at the end)", "end_reserved_bytes"),
        ("reserved at the peak", "reserved_at_peak_bytes"),
        ("fragmentation at the peak (reserved, not allocated)", "fragmentation_at_peak_bytes"),
        ("fragmentation at the end", "end_fragmentation_bytes"),
        ("allocated before the history", "start_allocated_bytes"))]
    return {"device": name, "baseline": _side(b), "experimental": _side(e), "metrics": metrics,
            "by_category": _rows(b, e, "by_category"), "by_frame": _rows(b, e, "by_frame"),
            "by_module": _rows(b, e, "by_module")}


def _rows(b: DeviceSnapshot | None, e: DeviceSnapshot | None, table: str) -> list[dict]:
    rb = {r.key: r for r in getattr(b, table, [])} if b else {}
    re_ = {r.key: r for r in getattr(e, table, [])} if e else {}
    rows = []
    for key in {**rb, **re_}:
        x, y = rb.get(key), re_.get(key)
        bb, eb = x.bytes if x else 0, y.bytes if y else 0
        rows.append({"key": key, "detail": (y or x).detail, "baseline_bytes": bb, "experimental_bytes": eb,
                     "delta_bytes": eb - bb, "delta_pct": delta_pct(bb, eb - bb),
                     "baseline_blocks": x.blocks if x else 0, "experimental_blocks": y.blocks if y else 0})
    rows.sort(key=lambda r: (-abs(r["delta_bytes"]), r["key"]))
    return rows[:MAX_ROWS]


def _curve(d: DeviceSnapshot) -> dict:
    """Allocated, active and reserved bytes over the history, ms from its start, thinned keeping each bucket's highest allocated."""
    t = d.time_us
    if not len(t):
        return {"t_ms": [], "allocated_bytes": [], "active_bytes": [], "reserved_bytes": [], "steps": []}
    idx = np.arange(len(t))
    if len(idx) > MAX_CURVE_POINTS:
        idx = np.array([bk[np.argmax(d.allocated_bytes[bk])] for bk in np.array_split(idx, MAX_CURVE_POINTS)])
    t0 = float(t[0])
    return {"t_ms": np.round((t[idx] - t0) / 1e3, 3).tolist(),
            "allocated_bytes": d.allocated_bytes[idx].astype(float).tolist(),
            "active_bytes": d.active_bytes[idx].astype(float).tolist(),
            "reserved_bytes": d.reserved_bytes[idx].astype(float).tolist(),
            "steps": [{"step": n, "t_ms": round((s - t0) / 1e3, 3)} for n, s in d.steps if s >= t0]}


def snapshot_sentence(d: dict) -> str:
    """"CUDA memory snapshots (GPU 0): experimental's peak allocated is 2.12 GiB lower (9.14 GiB → 7.02 GiB,
    -23 %); reserved 9.89 GiB → 8.12 GiB; at the peaks, activations changed most (...)"."""
    b, e, where = d["baseline"], d["experimental"], d["device"]
    if b is None or e is None:
        only, side = ("experimental", e) if b is None else ("baseline", b)
        return (f"Only the {only} run has a CUDA memory snapshot of {where} (peak allocated "
                f"{size(side['peak_allocated_bytes'])}, reserved {size(side['end_reserved_bytes'])}).")
    pb, pe = b["peak_allocated_bytes"], e["peak_allocated_bytes"]
    growth = pe - pb
    pct = delta_pct(pb, growth)
    pct_text = f", {pct:+.0f} %" if pct is not None else ""
    if growth == 0:
        head = f"CUDA memory snapshots ({where}): both peaks allocated are {size(pb)}"
    else:
        head = (f"CUDA memory snapshots ({where}): experimental's peak allocated is {size(abs(growth))} "
                f"{'higher' if growth > 0 else 'lower'} ({size(pb)} → {size(pe)}{pct_text})")
    head += (f"; reserved {size(b['end_reserved_bytes'])} → {size(e['end_reserved_bytes'])}, of it not allocated "
             f"at the peak {size(b['fragmentation_at_peak_bytes'])} → {size(e['fragmentation_at_peak_bytes'])}")
    movers = [r for r in d["by_category"] if r["delta_bytes"]][:2]
    if not movers:
        return head + "."
    parts = [f"{r['key']} {_signed(r['delta_bytes'])} ({size(r['baseline_bytes'])} → {size(r['experimental_bytes'])})"
             for r in movers]
    frame = next((r for r in d["by_frame"] if r["delta_bytes"] and not r["key"].startswith("(")), None)
    where_text = f"; the frame that changed most: {frame['key']} {_signed(frame['delta_bytes'])}" if frame else ""
    return f"{head}; at the peaks, {' and '.join(parts)} changed most{where_text}."


def _signed(n: int) -> str:
    return ("+" if n > 0 else "−") + size(abs(n))
