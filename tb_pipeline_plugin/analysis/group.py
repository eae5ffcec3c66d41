"""Recordings of one configuration, seen as one run.

`tb-pipeline record --repeat N` records one command N times, each its own
process; comparing two such groups (`RecordingGroup`) instead of two single
recordings lets the noise between recordings be measured rather than
assumed (diff/significance/method.py). A group answers what the diff layer asks of
a run (`TraceProcessor`'s methods), pooled over its recordings:

* per-step samples (the overview's steps, the step ledger, launch health,
  per-step operator and kernel sums): every recording's steps, numbered one
  after the other, with `recording_of_step` telling each step's recording;
* tables (operators, kernels): the mean over recordings of each recording's
  table, so a group of three and one recording compare like with like;
* what has one structure per recording (the piece tree, the module tree,
  attribution, backward index): the representative recording's, the one
  whose mean step time is the median of the group's.

Spans of one run (a profiler `schedule(repeat=...)`) stay what they are
elsewhere: each recording of a group contributes its default trace (first
worker, last span).
"""
from __future__ import annotations


import numpy as np
import pandas as pd

from .device_time import LAUNCH_TABLE_KEYS
from .processor import TraceProcessor
from .views import Views, view

# Kernel columns that are a property of the kernel, not a count: taken from
# the first recording that ran it (the representative first).
_KERNEL_SUMS = ["calls", "total_us"]


class RecordingGroup(Views):
    def __init__(self, members: list[TraceProcessor], names: list[str]):
        if len(members) < 1 or len(members) != len(names):
            raise ValueError("a group needs one name per recording, and at least one recording")
        means = [float(np.mean(m.ledger().steps["step_us"])) if len(m.ledger().steps) else 0.0 for m in members]
        order = np.argsort(means, kind="stable")
        rep = int(order[(len(order) - 1) // 2])
        # The representative first: tables take non-summable columns from it.
        self._order = [rep] + [i for i in range(len(members)) if i != rep]
        self.members = members
        self.names = names
        self.representative = members[rep]
        super().__init__()

    # ---- what a run is -----------------------------------------------------------

    @property
    def recordings(self) -> int:
        return len(self.members)

    @property
    def shown_recording(self) -> str:
        """The representative's name: its pieces, module tree and timeline are the group's."""
        return self.names[self._order[0]]

    @property
    def has_device(self) -> bool:
        return any(m.has_device for m in self.members)

    @property
    def has_steps(self) -> bool:
        return all(m.has_steps for m in self.members)

    @property
    def step_count(self) -> int:
        return sum(m.step_count for m in self.members)

    @property
    def recording_of_step(self) -> np.ndarray:
        """The recording (index into `members`) of each pooled step."""
        return np.repeat(np.arange(len(self.members)), [m.step_count for m in self.members])

    @property
    def warnings(self) -> list[str]:
        return [f"{name}: {w}" for name, m in zip(self.names, self.members) for w in m.warnings]

    @property
    def linked(self):
        return self.representative.linked

    @property
    def operator_primary(self) -> str:
        return self.representative.operator_primary

    # ---- one structure per recording: the representative's -----------------------

    def pieces(self):
        return self.representative.pieces()

    def modules(self):
        return self.representative.modules()

    def attribution(self):
        return self.representative.attribution()

    def backward_index(self):
        return self.representative.backward_index()

    def memory(self):
        return self.representative.memory()

    def device_launches(self):
        return self.representative.device_launches()

    def compiled_modules(self) -> frozenset[str]:
        return self.representative.compiled_modules()

    def timeline_index(self):
        return self.representative.timeline_index()

    # ---- per-step samples: pooled -----------------------------------------------

    @view
    def overview(self, whole_window: bool = False) -> dict:
        return _pooled_overview([m.overview(whole_window) for m in self._members_in_order()],
                                self.representative.overview(whole_window))

    @view
    def ledger(self):
        return self._pooled_ledger([m.ledger() for m in self.members])

    @view
    def device_ledger(self):
        return self._pooled_ledger([m.device_ledger() for m in self.members])

    @view
    def device_interval_ledger(self):
        return self._pooled_ledger([m.device_interval_ledger() for m in self.members])

    @view
    def launch_health(self) -> pd.DataFrame:
        return _pooled_steps([m.launch_health() for m in self.members], [m.step_count for m in self.members])

    @view
    def operator_steps(self, group_by: str, column: str) -> pd.DataFrame:
        return _pooled_steps([m.operator_steps(group_by, column) for m in self.members],
                             [m.step_count for m in self.members])

    @view
    def launch_steps(self) -> pd.DataFrame:
        return _pooled_steps([m.launch_steps() for m in self.members], [m.step_count for m in self.members])

    @view
    def kernel_steps(self) -> pd.DataFrame:
        return _pooled_steps([m.kernel_steps() for m in self.members], [m.step_count for m in self.members])

    # ---- tables: the mean recording ------------------------------------------------

    @view
    def operators(self, group_by: str = "name") -> pd.DataFrame:
        return _mean_table([m.operators(group_by) for m in self._members_in_order()], ["name", "input_shape"],
                           sums=None)

    @view
    def launch_table(self) -> pd.DataFrame:
        return _mean_table([m.launch_table() for m in self._members_in_order()], LAUNCH_TABLE_KEYS,
                           sums=["calls", "total_us", "via_graph"])

    @view
    def kernels(self) -> pd.DataFrame:
        out = _mean_table([m.kernels() for m in self._members_in_order()], ["name"], sums=_KERNEL_SUMS)
        if "min_us" in out:  # the extremes over every recording, the mean from the totals
            frames = pd.concat([m.kernels() for m in self.members])
            out["min_us"] = out["name"].map(frames.groupby("name")["min_us"].min())
            out["max_us"] = out["name"].map(frames.groupby("name")["max_us"].max())
            out["mean_us"] = np.where(out["calls"] > 0, out["total_us"] / out["calls"].where(out["calls"] > 0, 1), 0.0)
        return out

    # ---- internals -----------------------------------------------------------------

    def _members_in_order(self) -> list[TraceProcessor]:
        return [self.members[i] for i in self._order]

    def _pooled_ledger(self, ledgers: list):
        counts = [len(lg.steps) for lg in ledgers]
        steps = _pooled_steps([lg.steps for lg in ledgers], counts)
        steps["recording"] = np.repeat(np.arange(len(ledgers)), counts)
        parts = _pooled_steps([lg.parts for lg in ledgers], counts)
        return type(ledgers[0])(steps=steps, parts=parts)


def _pooled_steps(frames: list[pd.DataFrame], step_counts: list[int]) -> pd.DataFrame:
    """Frames with a `step` column, one per recording, as one frame whose
    steps are numbered one recording after the other."""
    offsets = np.concatenate([[0], np.cumsum(step_counts)[:-1]]).astype(np.int64)
    shifted = [f.assign(step=f["step"].to_numpy(np.int64) + off) if "step" in f else f
               for f, off in zip(frames, offsets)]
    shifted = [f for f in shifted if len(f.columns)]
    return pd.concat(shifted, ignore_index=True) if shifted else frames[0].iloc[0:0]


def _mean_table(frames: list[pd.DataFrame], keys: list[str], sums: list[str] | None) -> pd.DataFrame:
    """The mean recording of a table: numeric columns (or `sums`) summed over
    recordings by key and divided by their number (absent = 0); other
    columns from the first recording that has the key."""
    n = len(frames)
    keys = [k for k in keys if k in frames[0].columns]
    stacked = pd.concat(frames, ignore_index=True)
    if stacked.empty:
        return frames[0].copy()
    numeric = sums if sums is not None else [c for c in stacked.columns
                                            if c not in keys and pd.api.types.is_numeric_dtype(stacked[c])]
    grouped = stacked.groupby(keys, dropna=False, sort=False)
    out = grouped[numeric].sum() / n
    rest = [c for c in stacked.columns if c not in keys and c not in numeric]
    if rest:
        out = out.join(grouped[rest].first())
    out = out.reset_index()[list(frames[0].columns)]
    if "calls" in out:
        out["calls"] = out["calls"].astype(np.float64)
    return out


def _pooled_overview(overviews: list[dict], representative: dict) -> dict:
    """One overview over every recording's steps: per-step figures over the
    pooled steps, whole-run figures (utilisation, memory, duration) the mean
    over recordings; the device and what has no mean, the representative's."""
    out = dict(representative)
    steps = []
    for ov in overviews:
        steps += list(ov.get("steps") or [])
    out["steps"] = [{**s, "step": i} for i, s in enumerate(steps)]
    durations = [s.get("duration_us") for s in steps]
    if durations and all(isinstance(d, (int, float)) for d in durations):
        out["avg_step_time_us"] = float(np.mean(durations))
    out["breakdown_us"] = _mean_dict([ov.get("breakdown_us") or {} for ov in overviews],
                                     [len(ov.get("steps") or []) or 1 for ov in overviews])
    for key in ("trace_duration_us", "gpu_utilization_pct"):
        out[key] = _mean_value([ov.get(key) for ov in overviews])
    starts = [ov.get("start_unix_s") for ov in overviews]
    # The group started when its first recording did.
    out["start_unix_s"] = min(starts) if starts and all(isinstance(s, (int, float)) for s in starts) else None
    memory = representative.get("memory")
    if isinstance(memory, dict):
        out["memory"] = {**memory, **{k: _mean_value([(ov.get("memory") or {}).get(k) for ov in overviews])
                                      for k in ("avg_bytes", "peak_bytes")}}
    out["warnings"] = [w for ov in overviews for w in (ov.get("warnings") or [])]
    return out


def _mean_value(values: list):
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return float(np.mean(numbers)) if numbers and len(numbers) == len(values) else None


def _mean_dict(dicts: list[dict], weights: list[int]) -> dict:
    out = {}
    for key in dicts[0]:
        values = [d.get(key) for d in dicts]
        if all(isinstance(v, (int, float)) for v in values):
            out[key] = float(np.average(values, weights=weights))
        else:
            out[key] = values[0]
    return out
