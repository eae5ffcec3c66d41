"""Baseline vs experimental memory: both peaks, their growth, and where it went.

Devices are matched by name (`CPU`, `GPU 0`); on each, what was alive at
each run's peak (analysis/memory/peak.py) is joined by module (part and
phase) and by operator (and phase), largest |delta| first; the same for the
steady state (the time-weighted average) when its largest mover is not the
peak's. Each run's curve is its peak's step, aligned at that step's start.
"""
from __future__ import annotations

import numpy as np

from ...analysis.memory.peak import BEFORE_WINDOW, HELD_AT_STEP_START, DeviceMemory, RunMemory
from ..delta import delta_pct
from .sentence import memory_sentence

# torch.profiler records allocations only when asked; `record --profile` does
# not by default, for what it costs (benchmarks/README.md, bench_record_profile.py).
NO_MEMORY = ("{missing}: the profiler records allocations only when asked to. "
             "Record them with `tb-pipeline record --profile memory=1 -- python train.py` "
             "(with a schedule of your own: `--profile wait=5,warmup=2,active=5,memory=1`). "
             "Only the profiled steps pay for it: on the demo (a CPU run) they took 20-30 % longer than "
             "with `--profile` alone, and the trace was a fifth larger. "
             "A script that runs torch.profiler itself: pass it `profile_memory=True` "
             "(and `with_stack=True` to see which module allocated what).")
MAX_CURVE_POINTS = 2000
MAX_LIFETIMES = 40  # blocks whose lifetimes a row carries, largest first
MAX_ROWS = 200
_BY = {"module": (["part", "phase"], "operator"), "operator": (["operator", "phase"], "part")}


def diff_memory(b: RunMemory, e: RunMemory) -> dict:
    missing = [side for side, run in (("baseline", b), ("experimental", e)) if not run.devices]
    if missing:
        which = ("Neither run's trace has memory events" if len(missing) == 2
                 else f"The {missing[0]} run's trace has no memory events")
        return {"devices": [], "device": None, "sentence": "", "message": NO_MEMORY.format(missing=which)}
    names = sorted({d.device for d in b.devices} | {d.device for d in e.devices}, key=lambda n: (n != "CPU", n))
    by_b, by_e = {d.device: d for d in b.devices}, {d.device: d for d in e.devices}
    devices = [_device(name, by_b.get(name), by_e.get(name)) for name in names]
    # The sentence's device: the overview's rule (the GPU with the highest
    # peak, else the CPU) over the devices both runs have, else the experimental's.
    both = [by_e[n] for n in names if n in by_b and n in by_e]
    main = RunMemory(both, []).main_device() if both else e.main_device()
    main = main.device if main else None
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


def _grouped(d: DeviceMemory | None, by: str, table: str, value: str) -> dict[tuple, dict]:
    """The run's (part, phase, operator) groups summed by `by`'s keys, with
    the largest finer group's other name (`detail`) and call path. The
    tables are a few hundred rows at most: plain Python beats pandas' fixed
    costs here."""
    keys, other = _BY[by]
    if d is None:
        return {}
    t = getattr(d, table)
    cols = {c: t[c].tolist() for c in ("part", "phase", "operator")}
    sizes = t[value].tolist()
    blocks = t["blocks"].tolist() if "blocks" in t else [0] * len(sizes)
    paths = t["call_path"].tolist() if "call_path" in t else [""] * len(sizes)
    out: dict[tuple, dict] = {}
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        key = tuple(cols[k][i] for k in keys)
        g = out.get(key)
        if g is None:
            out[key] = {"bytes": sizes[i], "blocks": blocks[i], "detail": cols[other][i], "call_path": paths[i]}
        else:
            g["bytes"] += sizes[i]
            g["blocks"] += blocks[i]
    return out


_REST = (BEFORE_WINDOW, HELD_AT_STEP_START)


def _rows(b: DeviceMemory | None, e: DeviceMemory | None, by: str, table: str, value: str) -> list[dict]:
    keys, _ = _BY[by]
    gb, ge = _grouped(b, by, table, value), _grouped(e, by, table, value)
    none = {"bytes": 0, "blocks": 0, "detail": "", "call_path": ""}
    joined = [(key, gb.get(key, none), ge.get(key, none)) for key in {**gb, **ge}]
    # The rest rows (before the window, held at the step's start) at 0 on both
    # sides are no row: the peak's `before_window_bytes` already says "none".
    joined = [j for j in joined if j[1]["bytes"] or j[2]["bytes"] or str(j[0][0]) not in _REST]
    joined.sort(key=lambda j: -abs(j[2]["bytes"] - j[1]["bytes"]))
    alive_b, alive_e = _alive(b), _alive(e)
    spans_b, spans_e = (_lifetimes(b, keys), _lifetimes(e, keys)) if table == "attribution" else ({}, {})
    rows = []
    for key, rb, re_ in joined[:MAX_ROWS]:
        detail = re_["detail"] or rb["detail"]
        full = _full_key(by, key, detail)
        delta = re_["bytes"] - rb["bytes"]
        rows.append({
            "key": str(key[0]), "phase": str(key[1]), "detail": str(detail),
            "call_path": re_["call_path"] or rb["call_path"],
            "baseline_bytes": int(round(rb["bytes"])), "experimental_bytes": int(round(re_["bytes"])),
            "delta_bytes": int(round(delta)), "delta_pct": delta_pct(rb["bytes"], delta),
            "baseline_blocks": int(rb["blocks"]), "experimental_blocks": int(re_["blocks"]),
            "median_alive_us": alive_e.get(full, alive_b.get(full)),
            "baseline_lifetimes": spans_b.get(key, []),
            "experimental_lifetimes": spans_e.get(key, []),
        })
    return rows


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


def _lifetimes(d: DeviceMemory | None, keys: list[str]) -> dict[tuple, list[list[float | None]]]:
    """Per group: [start, end] of its blocks alive at the peak, µs from the
    peak's step start (end None: never freed in the trace), largest first."""
    if d is None or not len(d.live_blocks):
        return {}
    origin = _step_start(d) or 0.0
    lb = d.live_blocks.sort_values("bytes", ascending=False, kind="stable")
    out: dict[tuple, list] = {}
    for *key, s, t in zip(*(lb[k].tolist() for k in keys), lb["start_us"].tolist(), lb["end_us"].tolist()):
        spans = out.setdefault(tuple(key), [])
        if len(spans) < MAX_LIFETIMES:
            spans.append([round(s - origin, 3), None if np.isnan(t) else round(t - origin, 3)])
    return out


def _steps(b: DeviceMemory | None, e: DeviceMemory | None) -> list[dict]:
    """Each step's peak of both runs, matched by position (the i-th profiled step of each)."""
    def side(d: DeviceMemory | None) -> tuple[list, list]:
        return (d.step_peaks["step"].astype(str).tolist(), d.step_peaks["peak_bytes"].astype(int).tolist()) if d else ([], [])

    (nb, pb), (ne, pe) = side(b), side(e)
    return [{"index": i, "baseline_step": nb[i] if i < len(nb) else None,
             "experimental_step": ne[i] if i < len(ne) else None,
             "baseline_peak_bytes": pb[i] if i < len(pb) else None,
             "experimental_peak_bytes": pe[i] if i < len(pe) else None}
            for i in range(max(len(nb), len(ne)))]


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
    lo, hi = int(np.searchsorted(s.ts_us, t0, side="left")), int(np.searchsorted(s.ts_us, t1, side="right"))
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
