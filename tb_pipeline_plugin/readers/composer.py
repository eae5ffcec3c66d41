"""Composer profiler traces (Chrome JSON written by Composer's
JSONTraceHandler) -> PipelineTables.

What Composer writes, and how it is read:
- `event/dataloader` spans: fetching a batch (data wait);
- `event/batch` spans: the training step's work between its callbacks;
- `callback/{Class}/event/{event}` and `algorithm/{Class}/event/{event}`
  spans: callbacks and algorithms, named `Class` in the tables;
- counter events `cpu` {cpu_percent}, `memory/virtual` {used_gb},
  `disk/{disk}/{field}` {"field_name": value} (sic), `network/{nic}/kb_sent`
  and `kb_recv`: host metrics. Composer's SystemProfiler divides memory by
  2**9 and network bytes by 2**3 while naming them GB and KB; the readings
  are multiplied back into bytes here.

A step runs from one batch request (`event/dataloader` start) to the next,
the same definition as the recorder's; the last step ends with its batch.
A Composer run writes one file per rank and profiling cycle
(`ep{epoch}-ba{batch}-rank{rank}.json`) and, on each node, a merge of them
(`merged_trace.json`, written by `json_trace_merger`): the statistics are the
lowest rank's cycles in time order (`statistics_files`, `read_composer_traces`),
never the merge, whose windows would join into one step across the
unprofiled batches between cycles.
Spans come from the project's trace decoder (B/E pairing, damaged files);
counter values, which the EventTable does not keep, from a second small pass.
"""
from __future__ import annotations

import re

import msgspec
import numpy as np
import pandas as pd

from ..trace import decode_trace
from ..trace.locate import chunk_text, last_boundaries, locate_events
from ..trace.reader import read_trace_bytes
from ..trace.table import Phase
from ..trace.worker_names import rank_in_name
from .tables import CALLBACK_COLUMNS, HOST_COLUMNS, STEP_COLUMNS, PipelineTables, frame

DATALOADER = "event/dataloader"
BATCH = "event/batch"
_HOOK = re.compile(r"^(callback|algorithm)/([^/]+)/event/")
_SNIFF_BYTES = 1 << 20
_BURST_S = 0.05
MARKERS = (b'"event/batch"', b'"event/dataloader"', b'"callback/', b'"event/epoch"')
# Composer's json_trace_merger opens every thread it copies with this event
# (the training loop re-sorts itself to the top later); a rank file never has it.
_MERGE_MARK = re.compile(rb'"name":\s*"thread_sort_index"[^}]*"sort_index":\s*99999')
_MERGE_HEAD_BYTES = 4096
# Composer's markers record an end whenever the batch it falls in is profiled,
# a begin only when the batch it starts in is: ends alone are how it writes.
_ORPHAN_ENDS = re.compile(r"^\d+ end \(E\) events without a begin and 0 begin")


class _Counter(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    ts: float = float("nan")
    args: msgspec.Raw = msgspec.Raw()


_COUNTERS = msgspec.json.Decoder(list[_Counter])
_ARGS = msgspec.json.Decoder(dict[str, object])


def composer_kind(path: str) -> str | None:
    """Cheap sniff of the file's first MB: "merged" for Composer's merge of
    its rank files, "rank" for a file of one rank's cycle, None otherwise."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return None
    if not any(m in head for m in MARKERS):
        return None
    return "merged" if _MERGE_MARK.search(head[:_MERGE_HEAD_BYTES]) else "rank"


def statistics_files(kinds: dict[str, str]) -> tuple[list[str], str | None]:
    """Which of a run's Composer files (`kinds`: path -> `composer_kind`) hold
    its statistics, and a note on what was left out. The lowest rank's files,
    every cycle (rank from the file name, as Composer names them); a merge
    only when the run has no rank file (Composer keeps `num_traces_to_keep`)."""
    ranked = sorted(p for p, k in kinds.items() if k == "rank")
    merged = sorted(p for p, k in kinds.items() if k == "merged")
    if not ranked:
        return merged[:1], (f"several merged Composer traces; read {_base(merged[0])}" if len(merged) > 1 else None)
    by_rank: dict[int, list[str]] = {}
    for p in ranked:
        by_rank.setdefault(rank_in_name(_base(p)) or 0, []).append(p)
    lowest = min(by_rank)
    note = None
    if len(by_rank) > 1:
        note = f"Composer traces of ranks {', '.join(map(str, sorted(by_rank)))}: the statistics are rank {lowest}'s"
    return by_rank[lowest], note


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def read_composer_traces(paths: list[str]) -> PipelineTables:
    """One rank's profiling cycles (a file each) as one run's tables: steps
    numbered on across the files in time order, on the earliest file's clock."""
    parts = []
    for path in paths:
        try:
            parts.append(read_composer_trace(path))
        except (OSError, ValueError) as exc:
            raise ValueError(f"Composer trace {_base(path)}: {exc}") from None
    if len(parts) == 1:
        return parts[0]
    parts.sort(key=lambda t: t.t0_wall_s)
    t0 = parts[0].t0_wall_s
    steps, callbacks, host, warnings, first = [], [], [], [], 0
    for t in parts:
        shift = t.t0_wall_s - t0
        steps.append(t.steps.assign(step=t.steps["step"] + first, t_s=t.steps["t_s"] + shift))
        callbacks.append(t.callbacks.assign(step=t.callbacks["step"] + first))
        host.append(t.host.assign(t_s=t.host["t_s"] + shift))
        warnings += [f"{_base(m['path'])}: {w}" for m in t.meta for w in t.warnings]
        first += len(t.steps)
    return PipelineTables(
        source="composer", steps=_concat(steps, STEP_COLUMNS), callbacks=_concat(callbacks, CALLBACK_COLUMNS),
        host=_concat(host, HOST_COLUMNS), meta=[m for t in parts for m in t.meta], warnings=warnings, t0_wall_s=t0,
    )


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True)[columns] if frames else frame([], columns)


def read_composer_trace(path: str) -> PipelineTables:
    data, warnings = read_trace_bytes(path)
    table = decode_trace(data)
    warnings = warnings + [w for w in table.warnings if not _ORPHAN_ENDS.match(w)]
    complete = np.flatnonzero(table.phase == Phase.COMPLETE)
    names = table.names(table.name_id[complete])
    counters, counter_warning = _counter_events(data)
    if counter_warning:
        warnings.append(counter_warning)
    is_dl = names == DATALOADER
    is_batch = names == BATCH
    hooks = [(i, m.group(1), m.group(2)) for i, n in enumerate(names) if (m := _HOOK.match(n or ""))]
    # Seconds since Composer's first event, computed in µs first: wall-clock µs
    # (~1.8e15) in float64 seconds would keep only ~0.25 µs of resolution.
    # Composer also copies the torch profiler's events into its file, on the
    # profiler's own clock: those do not set the origin.
    own = is_dl | is_batch
    own[[i for i, _, _ in hooks]] = True
    stamps_us = np.concatenate([table.ts_us[complete][own if own.any() else slice(None)], counters["ts_us"].to_numpy()])
    base_us = float(np.nanmin(stamps_us)) if len(stamps_us) else 0.0
    t0 = base_us / 1e6
    start = (table.ts_us[complete] - base_us) / 1e6
    end = start + table.dur_us[complete] / 1e6

    dl_start = np.sort(start[is_dl])
    if not len(dl_start):
        warnings.append(f"no {DATALOADER} spans: the trace has no steps to split")
    b_start, b_end = start[is_batch], end[is_batch]
    order = np.argsort(b_start)
    b_start, b_end = b_start[order], b_end[order]
    step_end = np.append(dl_start[1:], b_end[-1] if len(b_end) else (end[is_dl].max() if is_dl.any() else 0.0))
    if len(dl_start):
        step_end[-1] = max(step_end[-1], dl_start[-1])
    # Each span is charged to the step whose window holds its start.
    def step_of(t):
        return np.searchsorted(dl_start, t, side="right") - 1

    n = len(dl_start)
    wait = np.zeros(n)
    batch = np.zeros(n)
    cb = np.zeros(n)
    cb_in_batch = np.zeros(n)
    k = step_of(start[is_dl])
    np.add.at(wait, k[k >= 0], (end - start)[is_dl][k >= 0])
    kb = step_of(b_start)
    np.add.at(batch, kb[kb >= 0], (b_end - b_start)[kb >= 0])
    callbacks = []
    for i, kind, name in hooks:
        s = step_of(start[i])
        if s < 0 or start[i] >= step_end[s]:
            continue
        dur = end[i] - start[i]
        cb[s] += dur
        j = np.searchsorted(b_start, start[i], side="right") - 1
        if j >= 0 and end[i] <= b_end[j] + 1e-9:
            cb_in_batch[s] += dur
        callbacks.append({"step": int(s), "name": name, "kind": kind, "time_s": float(dur)})
    duration = step_end - dl_start
    compute = np.maximum(batch - cb_in_batch, 0.0)
    other = np.maximum(duration - wait - compute - cb, 0.0)
    steps = pd.DataFrame({
        "step": np.arange(n), "loader": 0, "t_s": dl_start, "wall_start_s": dl_start + t0, "duration_s": duration,
        "data_wait_s": wait, "compute_s": compute, "callbacks_s": cb, "other_s": other, "batch_size": np.nan,
        "tokens": np.nan, "cached": False,
        # Composer's events bound each step by its batch: no profiler start-up or epilogue inside one.
        "after_profiler_start": False, "open_at_end": False, "drives_cuda": False, "device_s": np.nan,
    })[STEP_COLUMNS]
    return PipelineTables(
        source="composer", steps=steps, callbacks=frame(callbacks, CALLBACK_COLUMNS),
        host=_host_table(counters, base_us), meta=[{"source": "composer", "path": path}], warnings=warnings, t0_wall_s=t0,
    )


def _counter_events(data: bytes) -> tuple[pd.DataFrame, str | None]:
    """(ts_us, name, key, value) of every counter event's numeric args."""
    region = locate_events(data)
    text = chunk_text(data, region.start, region.end)
    warning = None
    try:
        events = _COUNTERS.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        events = []
        for cut in last_boundaries(data, region.start, region.end):
            try:
                events = _COUNTERS.decode(chunk_text(data, region.start, cut))
                break
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        warning = "host metrics: the counter events after the damaged part of the trace were ignored"
    rows = []
    for e in events:
        if e.ph != "C" or not len(e.args):
            continue
        try:
            args = _ARGS.decode(e.args)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        for key, value in args.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                rows.append((e.ts, e.name, key, float(value)))
    return pd.DataFrame(rows, columns=["ts_us", "name", "key", "value"]), warning


def _host_table(counters: pd.DataFrame, base_us: float) -> pd.DataFrame:
    if not len(counters):
        return frame([], HOST_COLUMNS)
    c = counters
    series = {
        "cpu_pct": c[(c.name == "cpu") & (c.key == "cpu_percent")],
        # Composer writes bytes / 2**9 as "used_gb", bytes / 2**3 as "kb_*".
        "mem_used_bytes": c[(c.name == "memory/virtual") & (c.key == "used_gb")].assign(value=lambda d: d.value * 2**9),
        "disk_read_bytes": c[c.name.str.startswith("disk/") & c.name.str.endswith("/read_bytes")],
        "disk_write_bytes": c[c.name.str.startswith("disk/") & c.name.str.endswith("/write_bytes")],
        "net_sent_bytes": c[c.name.str.startswith("network/") & (c.key == "kb_sent")].assign(value=lambda d: d.value * 8),
        "net_recv_bytes": c[c.name.str.startswith("network/") & (c.key == "kb_recv")].assign(value=lambda d: d.value * 8),
    }
    # One row per sampling instant; devices and NICs are summed.
    parts = [s.groupby("ts_us")["value"].sum().rename(col) for col, s in series.items() if len(s)]
    if not parts:
        return frame([], HOST_COLUMNS)
    # Composer stamps each counter separately: carry readings forward and keep
    # the last row of each burst (readings less than _BURST_S apart).
    wide = pd.concat(parts, axis=1).sort_index().ffill()
    t_s = (wide.index.to_numpy(float) - base_us) / 1e6
    keep = np.append(np.diff(t_s) >= _BURST_S, True)
    wide = wide[keep].reset_index(drop=True)
    wide["t_s"] = t_s[keep]
    wide["wall_time_s"] = (base_us / 1e6) + wide["t_s"]
    for col in HOST_COLUMNS:
        if col not in wide:
            wide[col] = np.nan
    return wide[HOST_COLUMNS]
