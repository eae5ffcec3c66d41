"""Where one run's memory peak went: what was alive at the peak, and by whom.

Per device: the peak of allocated bytes over the steps' window (the
overview's peak), the step and operator running then, and the bytes alive
at the peak split by where each live block was allocated (part of the step,
phase, operator: `analysis/memory/events.py`). What the trace cannot place
is reported, not dropped:
* *before the window*: memory allocated before profiling started and still
  held (the allocator's total above the blocks the trace saw allocated);
* without block addresses (Kineto before 2022) no free can be paired with
  its allocation (`basis` "net"): the peak is split instead into what was
  held when its step began and each part's net allocation since.
The steady state is the same split of the time-weighted average over the
steps' window (blocks basis only).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...trace.link import LinkedTrace
from ..attribution import Attribution
from .series import DeviceSeries, _time_weighted, device_series, steps_window
from .blocks import NEVER_FREED, alive_at, device_blocks, has_addresses
from .events import call_path, memory_event_places
from ..step_windows import step_of

BEFORE_WINDOW = "before the window"
HELD_AT_STEP_START = "held when the step began"
GROUP_KEYS = ["part", "phase", "operator"]
ATTRIBUTION_COLUMNS = ("part", "phase", "operator", "bytes", "blocks", "call_path")


@dataclass(frozen=True, eq=False)
class DeviceMemory:
    device: str
    basis: str  # "blocks": live blocks replayed by address; "net": net bytes per part since the step began
    series: DeviceSeries
    peak_pos: int  # position in `series` of the event that reached the peak
    peak_bytes: int
    peak_us: float  # absolute trace time
    peak_step: int  # index into the steps, -1
    peak_operator: str  # the operator that made the peak's allocation
    peak_part: str  # and its part (module path, optimizer, ...)
    avg_allocated_bytes: float  # time-weighted over the steps' window (the overview's)
    attribution: pd.DataFrame  # ATTRIBUTION_COLUMNS: bytes alive at the peak (sum: peak_bytes)
    live_blocks: pd.DataFrame  # blocks alive at the peak with their place (blocks basis; else empty)
    alive_us: pd.DataFrame  # GROUP_KEYS + median_alive_us of the group's freed blocks, whole trace
    steady: pd.DataFrame  # GROUP_KEYS + avg_bytes (sum: avg_allocated_bytes); empty for basis "net"
    step_peaks: pd.DataFrame  # step (name), start_us, end_us, peak_bytes
    frees_before_window: int  # frees of blocks allocated before the window
    frees_before_window_bytes: int


@dataclass(frozen=True, eq=False)
class RunMemory:
    devices: list[DeviceMemory]
    step_names: list[str]

    def main_device(self) -> DeviceMemory | None:
        """The overview's device: the GPU with the highest peak, else the CPU."""
        gpus = [d for d in self.devices if d.device != "CPU"]
        return max(gpus or self.devices, key=lambda d: d.peak_bytes, default=None)


def run_memory(linked: LinkedTrace, attribution: Attribution) -> RunMemory:
    series = [s for s in device_series(linked) if len(s.events)]
    places = memory_event_places(linked, attribution) if series else None
    st = linked.steps
    start_us, end_us = attribution.step_start_us, np.asarray(st.end_us, dtype=np.float64)
    window = steps_window(linked)
    devices = [_device_memory(linked, s, places, start_us, end_us, window) for s in series]
    return RunMemory(devices, list(st.name))


def _device_memory(linked: LinkedTrace, s: DeviceSeries, places: pd.DataFrame, step_start: np.ndarray,
                   step_end: np.ndarray, window: tuple[float, float]) -> DeviceMemory:
    t0, t1 = window
    inside = np.flatnonzero((s.ts_us >= t0) & (s.ts_us <= t1))
    candidates = inside if len(inside) else np.arange(len(s.ts_us))
    peak_pos = int(candidates[np.argmax(s.allocated_bytes[candidates])])
    peak_bytes = int(s.allocated_bytes[peak_pos])
    peak_us = float(s.ts_us[peak_pos])
    peak_step = int(step_of(step_start, step_end, np.array([peak_us]))[0])
    event_place = places.iloc[s.events].reset_index(drop=True)
    avg = _time_weighted(s.ts_us, s.allocated_bytes, s.before_bytes, t0, t1) if t1 > t0 else float(peak_bytes)
    step_peaks = _step_peaks(s, step_start, step_end, linked.steps.name)
    if has_addresses(linked, s):
        blocks, orphans, orphan_bytes = device_blocks(linked, s)
        blocks = pd.concat([blocks, event_place.iloc[blocks["start_pos"].to_numpy()].reset_index(drop=True)], axis=1)
        live = blocks[alive_at(blocks, peak_pos)].reset_index(drop=True)
        attribution = _with_rest(_grouped(linked, live), peak_bytes - int(live["bytes"].sum()), BEFORE_WINDOW)
        steady = _steady(blocks, s, t0, t1, avg)
        basis = "blocks"
    else:
        live, orphans, orphan_bytes = _empty_blocks(), 0, 0
        attribution, steady = _net_since_step_start(linked, s, event_place, peak_pos, step_start, peak_step), _empty_steady()
        basis, blocks = "net", None
    return DeviceMemory(
        device=s.device, basis=basis, series=s, peak_pos=peak_pos, peak_bytes=peak_bytes, peak_us=peak_us,
        peak_step=peak_step, peak_operator=str(event_place["operator"].iat[peak_pos]),
        peak_part=str(event_place["part"].iat[peak_pos]), avg_allocated_bytes=float(avg), attribution=attribution,
        live_blocks=live, alive_us=_alive_us(blocks), steady=steady, step_peaks=step_peaks,
        frees_before_window=orphans, frees_before_window_bytes=orphan_bytes,
    )


def _grouped(linked: LinkedTrace, blocks: pd.DataFrame) -> pd.DataFrame:
    """Bytes and blocks per (part, phase, operator), largest first, with the
    call path of each group's largest block."""
    if not len(blocks):
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("part", "phase", "operator", "call_path") else np.int64)
                             for c in ATTRIBUTION_COLUMNS})
    largest = blocks.sort_values("bytes", ascending=False, kind="stable").drop_duplicates(GROUP_KEYS)
    g = blocks.groupby(GROUP_KEYS, sort=False).agg(bytes=("bytes", "sum"), blocks=("bytes", "size")).reset_index()
    g = g.merge(largest[GROUP_KEYS + ["op_row"]], on=GROUP_KEYS, how="left")
    g["call_path"] = [call_path(linked, r) if r >= 0 else "" for r in g.pop("op_row").tolist()]
    return g.sort_values("bytes", ascending=False, kind="stable").reset_index(drop=True)


def _with_rest(groups: pd.DataFrame, rest_bytes: int, label: str) -> pd.DataFrame:
    """`groups` and one row for the bytes no group holds (kept even at 0:
    "nothing from before the window" is an answer too)."""
    rest = pd.DataFrame({"part": [label], "phase": [""], "operator": [label], "bytes": [int(rest_bytes)],
                         "blocks": [0], "call_path": [""]})
    return pd.concat([groups, rest], ignore_index=True)


def _steady(blocks: pd.DataFrame, s: DeviceSeries, t0: float, t1: float, avg: float) -> pd.DataFrame:
    """Each group's time-weighted share of the average over [t0, t1]."""
    if t1 <= t0:
        return _empty_steady()
    end = blocks["end_us"].fillna(np.inf).to_numpy()
    overlap = np.clip(end, t0, t1) - np.clip(blocks["start_us"].to_numpy(), t0, t1)
    share = blocks["bytes"].to_numpy() * overlap / (t1 - t0)
    g = (blocks[GROUP_KEYS].assign(avg_bytes=share).groupby(GROUP_KEYS, sort=False)["avg_bytes"].sum()
         .reset_index())
    g = g[g["avg_bytes"] > 0]
    rest = pd.DataFrame({"part": [BEFORE_WINDOW], "phase": [""], "operator": [BEFORE_WINDOW],
                         "avg_bytes": [avg - float(g["avg_bytes"].sum())]})
    return pd.concat([g.sort_values("avg_bytes", ascending=False, kind="stable"), rest], ignore_index=True)


def _net_since_step_start(linked: LinkedTrace, s: DeviceSeries, event_place: pd.DataFrame, peak_pos: int, step_start: np.ndarray,
                          peak_step: int) -> pd.DataFrame:
    """Without addresses: the level held when the peak's step began, and
    each group's net bytes (allocated minus freed) from then to the peak."""
    begin_us = step_start[peak_step] if peak_step >= 0 else -np.inf
    first = int(np.searchsorted(s.ts_us, begin_us, side="left"))
    first = min(first, peak_pos)
    held = float(s.allocated_bytes[first - 1]) if first > 0 else s.before_bytes
    delta = s.allocated_bytes[first:peak_pos + 1] - np.concatenate(([held], s.allocated_bytes[first:peak_pos]))
    events = event_place.iloc[first:peak_pos + 1][GROUP_KEYS + ["op_row"]].assign(bytes=delta.astype(np.int64),
                                                                                 blocks=delta > 0)
    g = (events.groupby(GROUP_KEYS, sort=False).agg(bytes=("bytes", "sum"), blocks=("blocks", "sum")).reset_index())
    g["blocks"] = g["blocks"].astype(np.int64)
    # Each group's call path: that of its largest allocation.
    largest = events.sort_values("bytes", ascending=False, kind="stable").drop_duplicates(GROUP_KEYS)
    g = g.merge(largest[GROUP_KEYS + ["op_row"]], on=GROUP_KEYS, how="left")
    g["call_path"] = [call_path(linked, r) if r >= 0 else "" for r in g.pop("op_row").tolist()]
    g = g.sort_values("bytes", ascending=False, kind="stable").reset_index(drop=True)
    return _with_rest(g, int(round(held)), HELD_AT_STEP_START)


def _alive_us(blocks: pd.DataFrame | None) -> pd.DataFrame:
    if blocks is None or not len(blocks):
        return pd.DataFrame({"part": [], "phase": [], "operator": [], "median_alive_us": []})
    freed = blocks[blocks["end_pos"] != NEVER_FREED]
    return (freed.assign(alive_us=freed["end_us"] - freed["start_us"]).groupby(GROUP_KEYS, sort=False)["alive_us"]
            .median().rename("median_alive_us").reset_index())


def _step_peaks(s: DeviceSeries, step_start: np.ndarray, step_end: np.ndarray, names: list[str]) -> pd.DataFrame:
    """Each step's peak: the level at its start or any level reached in it."""
    lo = np.searchsorted(s.ts_us, step_start, side="left")
    hi = np.searchsorted(s.ts_us, step_end, side="right")
    at_start = np.where(lo > 0, s.allocated_bytes[np.maximum(lo - 1, 0)], s.before_bytes)
    peaks = [max(float(a), float(s.allocated_bytes[i:j].max()) if j > i else float(a))
             for a, i, j in zip(at_start.tolist(), lo.tolist(), hi.tolist())]
    return pd.DataFrame({"step": list(names), "start_us": step_start, "end_us": step_end,
                         "peak_bytes": np.asarray(peaks, dtype=np.int64)})


def _empty_blocks() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in ("start_pos", "end_pos", "start_us", "end_us", "bytes", "op_row",
                                         "part", "phase", "operator")})


def _empty_steady() -> pd.DataFrame:
    return pd.DataFrame({"part": [], "phase": [], "operator": [], "avg_bytes": []})
