"""Baseline vs experimental memory: both peaks, their growth, and where it went.

Devices are matched by name (`CPU`, `GPU 0`); on each, what was alive at
each run's peak (analysis/memory_peak.py) is joined by module (part and
phase) and by operator (and phase), largest |delta| first; the same for the
steady state (the time-weighted average) when its largest mover is not the
peak's. Each run's curve is its peak's step, aligned at that step's start.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.memory_peak import BEFORE_WINDOW, HELD_AT_STEP_START, DeviceMemory, RunMemory
from .delta import delta_pct
from .explain_memory import memory_sentence

NO_MEMORY = ("{sides} no `[memory]` events: recorded without profile_memory=True "
             "(torch.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True) records them, "
             "with_stack for the module of each allocation)")
MAX_CURVE_POINTS = 2000
MAX_LIFETIMES = 40  # blocks whose lifetimes a row carries, largest first
MAX_ROWS = 200
_BY = {"module": (["part", "phase"], "operator"), "operator": (["operator", "phase"], "part")}


def diff_memory(b: RunMemory, e: RunMemory) -> dict:
    missing = [side for side, run in (("baseline", b), ("experimental", e)) if not run.devices]
    if missing:
        sides = "Neither trace has" if len(missing) == 2 else f"The {missing[0]} trace has"
        return {"devices": [], "device": None, "sentence": "", "message": NO_MEMORY.format(sides=sides)}
    names = sorted({d.device for d in b.devices} | {d.device for d in e.devices}, key=lambda n: (n != "CPU", n))
    by_b, by_e = {d.device: d for d in b.devices}, {d.device: d for d in e.devices}
    devices = [_device(name, by_b.get(name), by_e.get(name)) for name in names]
    main_b, main_e = b.main_device(), e.main_device()
    main = (main_e or main_b).device if (main_e or main_b) else None
    shown = next((d for d in devices if d["device"] == main), None)
    return {"devices": devices, "device": main, "sentence": memory_sentence(shown) if shown else "", "message": None}


def _device(name: str, b: DeviceMemory | None, e: DeviceMemory | None) -> dict:
    growth = e.peak_bytes - b.peak_bytes if b and e else None
    out = {
        "device": name,
        "baseline": _peak(b), "experimental": _peak(e),
        "growth_bytes": growth,
        "growth_pct": delta_pct(b.peak_bytes, growth) if growth is not None else None,
        "basis": _basis(b, e),
        "by_module": _rows(b, e, "module", "attribution", "bytes"),
        "by_operator": _rows(b, e, "operator", "attribution", "bytes"),
        "steps": _steps(b, e),
        "baseline_curve": _curve(b), "experimental_curve": _curve(e),
    }
    steady_module = _rows(b, e, "module", "steady", "avg_bytes")
    differs = bool(steady_module) and bool(out["by_module"]) and (
        (steady_module[0]["key"], steady_module[0]["phase"]) != (out["by_module"][0]["key"], out["by_module"][0]["phase"]))
    out["steady_differs"] = differs
    out["steady_by_module"] = steady_module if differs else []
    out["steady_by_operator"] = _rows(b, e, "operator", "steady", "avg_bytes") if differs else []
    return out


def _basis(b: DeviceMemory | None, e: DeviceMemory | None) -> str:
    """"blocks" only when both runs' blocks were replayed: a net split
    compared with a live-block split would be no comparison."""
    bases = {d.basis for d in (b, e) if d is not None}
    return "blocks" if bases == {"blocks"} else "net"


def _peak(d: DeviceMemory | None) -> dict | None:
    if d is None:
        return None
    step_start = _step_start(d)
    rest = d.attribution["part"].isin([BEFORE_WINDOW, HELD_AT_STEP_START])
    return {
        "peak_bytes": d.peak_bytes,
        "peak_us": round(d.peak_us - step_start, 3) if step_start is not None else None,
        "step": str(d.step_peaks["step"].iat[d.peak_step]) if d.peak_step >= 0 else None,
        "operator": d.peak_operator, "part": d.peak_part,
        "avg_allocated_bytes": round(d.avg_allocated_bytes, 1),
        "before_window_bytes": int(d.attribution.loc[rest, "bytes"].sum()),
        "frees_before_window": d.frees_before_window,
        "basis": d.basis,
    }


def _step_start(d: DeviceMemory) -> float | None:
    return float(d.step_peaks["start_us"].iat[d.peak_step]) if d.peak_step >= 0 else None


def _grouped(d: DeviceMemory | None, by: str, table: str, value: str) -> pd.DataFrame:
    keys, other = _BY[by]
    if d is None or not len(getattr(d, table)):
        return pd.DataFrame(columns=keys + ["bytes", "blocks", "detail", "call_path"])
    t = getattr(d, table).rename(columns={value: "bytes"})
    if "blocks" not in t:
        t = t.assign(blocks=0, call_path="")
    t = t.sort_values("bytes", ascending=False, kind="stable")
    top = t.drop_duplicates(keys)[keys + [other, "call_path"]].rename(columns={other: "detail"})
    g = t.groupby(keys, sort=False).agg(bytes=("bytes", "sum"), blocks=("blocks", "sum")).reset_index()
    return g.merge(top, on=keys, how="left")


def _rows(b: DeviceMemory | None, e: DeviceMemory | None, by: str, table: str, value: str) -> list[dict]:
    keys, _ = _BY[by]
    gb, ge = _grouped(b, by, table, value), _grouped(e, by, table, value)
    j = gb.merge(ge, on=keys, how="outer", suffixes=("_b", "_e"))
    if not len(j):
        return []
    for c in ("bytes_b", "bytes_e", "blocks_b", "blocks_e"):
        j[c] = j[c].fillna(0)
    j["delta"] = j["bytes_e"] - j["bytes_b"]
    j = j.iloc[np.argsort(-np.abs(j["delta"].to_numpy()), kind="stable")].head(MAX_ROWS)
    alive_b, alive_e = _alive(b), _alive(e)
    rows = []
    for r in j.to_dict("records"):
        key = tuple(r[k] for k in keys)
        detail = _text(r.get("detail_e")) or _text(r.get("detail_b"))
        full = _full_key(by, key, detail)
        rows.append({
            "key": str(r[keys[0]]), "phase": str(r["phase"]), "detail": detail,
            "call_path": _text(r.get("call_path_e")) or _text(r.get("call_path_b")),
            "baseline_bytes": int(round(r["bytes_b"])), "experimental_bytes": int(round(r["bytes_e"])),
            "delta_bytes": int(round(r["delta"])), "delta_pct": delta_pct(r["bytes_b"], r["delta"]),
            "baseline_blocks": int(r["blocks_b"]), "experimental_blocks": int(r["blocks_e"]),
            "median_alive_us": alive_e.get(full, alive_b.get(full)),
            "baseline_lifetimes": _lifetimes(b, keys, key) if table == "attribution" else [],
            "experimental_lifetimes": _lifetimes(e, keys, key) if table == "attribution" else [],
        })
    return rows


def _text(v) -> str:
    return v if isinstance(v, str) else ""


def _alive(d: DeviceMemory | None) -> dict:
    """Median lifetime (µs) of the freed blocks of each (part, phase, operator)."""
    if d is None or not len(d.alive_us):
        return {}
    a = d.alive_us
    return {(p, ph, op): round(float(v), 3) for p, ph, op, v in
            zip(a["part"].tolist(), a["phase"].tolist(), a["operator"].tolist(), a["median_alive_us"].tolist())}


def _full_key(by: str, key: tuple, detail: str) -> tuple:
    """(part, phase, operator) of a row's largest finer group."""
    return (key[0], key[1], detail) if by == "module" else (detail, key[1], key[0])


def _lifetimes(d: DeviceMemory | None, keys: list[str], key: tuple) -> list[list[float | None]]:
    """[start, end] of the group's blocks alive at the peak, µs from the
    peak's step start (end None: never freed in the trace), largest first."""
    if d is None or not len(d.live_blocks):
        return []
    lb = d.live_blocks
    mask = np.ones(len(lb), dtype=bool)
    for k, v in zip(keys, key):
        mask &= (lb[k] == v).to_numpy()
    sel = lb[mask].sort_values("bytes", ascending=False, kind="stable").head(MAX_LIFETIMES)
    origin = _step_start(d) or 0.0
    return [[round(s - origin, 3), None if np.isnan(t) else round(t - origin, 3)]
            for s, t in zip(sel["start_us"].tolist(), sel["end_us"].tolist())]


def _steps(b: DeviceMemory | None, e: DeviceMemory | None) -> list[dict]:
    """Each step's peak of both runs, matched by position (the i-th profiled step of each)."""
    sb = b.step_peaks if b is not None else pd.DataFrame({"step": [], "peak_bytes": []})
    se = e.step_peaks if e is not None else pd.DataFrame({"step": [], "peak_bytes": []})
    n = max(len(sb), len(se))
    out = []
    for i in range(n):
        pb = int(sb["peak_bytes"].iat[i]) if i < len(sb) else None
        pe = int(se["peak_bytes"].iat[i]) if i < len(se) else None
        out.append({"index": i, "baseline_step": str(sb["step"].iat[i]) if i < len(sb) else None,
                    "experimental_step": str(se["step"].iat[i]) if i < len(se) else None,
                    "baseline_peak_bytes": pb, "experimental_peak_bytes": pe})
    return out


def _curve(d: DeviceMemory | None) -> dict | None:
    """Allocated and reserved bytes over the peak's step, µs from its start
    (the level at the start included); thinned to MAX_CURVE_POINTS keeping
    each bucket's highest point, so the peak survives."""
    if d is None:
        return None
    s = d.series
    if d.peak_step >= 0:
        t0 = float(d.step_peaks["start_us"].iat[d.peak_step])
        t1 = float(d.step_peaks["end_us"].iat[d.peak_step])
    else:
        t0, t1 = float(s.ts_us[0]), float(s.ts_us[-1])
    lo, hi = np.searchsorted(s.ts_us, [t0, t1], side="left")[0], np.searchsorted(s.ts_us, t1, side="right")
    start_level = float(s.allocated_bytes[lo - 1]) if lo > 0 else s.before_bytes
    idx = np.arange(lo, hi)
    if len(idx) > MAX_CURVE_POINTS:
        buckets = np.array_split(idx, MAX_CURVE_POINTS)
        idx = np.array([bk[np.argmax(s.allocated_bytes[bk])] for bk in buckets])
    reserved = s.reserved_bytes[idx]
    return {
        "step": str(d.step_peaks["step"].iat[d.peak_step]) if d.peak_step >= 0 else None,
        "duration_us": round(t1 - t0, 3),
        "t_us": [0.0] + np.round(s.ts_us[idx] - t0, 3).tolist(),
        "allocated_bytes": [start_level] + s.allocated_bytes[idx].tolist(),
        "reserved_bytes": None if np.isnan(reserved).all() else
        [None] + [None if np.isnan(v) else float(v) for v in reserved.tolist()],
        "peak_us": round(d.peak_us - t0, 3),
        "peak_bytes": d.peak_bytes,
    }
