"""Pipeline statistics analyses: pure functions over the tables of one run
(pipeline.PipelineTables or anything with the same DataFrame attributes).

Step split, input-bound verdict with the next step in words, throughput over
time, slowest callbacks, host metrics; the stage table is in stages.py.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .settle import WARMUP_FACTOR, drives_cuda, epilogue_s, settle
from .stages import STAGE_COLUMNS, bottleneck, flag, stage_table

SPLIT_PARTS = ("data_wait_s", "compute_s", "callbacks_s", "other_s")
PARTLY_PCT = 5.0  # data wait share from which the input is partly exposed
YES_PCT = 20.0  # ... and from which the run is input-bound
CALLBACKS_NOTABLE_PCT = 10.0
ONE_CORE_PCT = (80.0, 120.0)  # process-tree CPU that looks like one busy core: the GIL's signature
THROUGHPUT_POINTS = 60
# A window shorter than a few steps shows 0 or 1 step per window, not a rate.
STEPS_PER_WINDOW_MIN = 5
CALLBACK_COLUMNS = ["name", "kind", "calls", "total_s", "mean_s", "max_s", "per_step_s", "share_pct"]
HOST_METRIC_COLUMNS = ["t_s", "cpu_pct", "rss_bytes", "mem_used_bytes", "disk_read_bytes_per_s",
                       "disk_write_bytes_per_s", "net_sent_bytes_per_s", "net_recv_bytes_per_s", "gpu_util_pct",
                       "gpu_mem_used_bytes", "gil_contention_pct"]

__all__ = ["STAGE_COLUMNS", "bottleneck", "stage_table", "main_steps", "step_split", "input_bound", "throughput",
           "throughput_summary", "slowest_callbacks", "host_metrics", "host_summary", "report"]


def main_steps(steps: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The steps the split is computed over, and notes on what was left out
    (`_main_steps`)."""
    used, notes, _, _ = _main_steps(steps)
    return used, notes


def _main_steps(steps: pd.DataFrame) -> tuple[pd.DataFrame, list[str], int, int]:
    """The steps the split is computed over, notes on what was left out, and
    how many warm-up and epilogue-holding steps were left out.

    One loader: the one that fed most steps (an evaluation loader beside the
    training one would blend two kinds of step). Headspace runs: only the
    replayed steps, since the ones that filled the cache measured real loading.
    """
    notes = []
    if not len(steps):
        return steps, notes, 0, 0
    loaders = steps["loader"].value_counts()
    if len(loaders) > 1:
        main = loaders.index[0]
        notes.append(f"{int(loaders.sum() - loaders.iloc[0])} steps from {len(loaders) - 1} other loader(s) left out")
        steps = steps[steps["loader"] == main]
    cached = steps["cached"].astype(bool)
    if cached.any() and not cached.all():
        notes.append(f"headspace run: {int((~cached).sum())} steps that filled the cache left out, "
                     f"{int(cached.sum())} replayed steps used")
        steps = steps[cached]
    steps, warm, held = settle(steps)
    if len(warm) and drives_cuda(steps):
        notes.append(f"{_count(len(warm), 'warm-up step')} left out (the steps before the loop settled at its pace, "
                     f"{WARMUP_FACTOR:g}x faster or slower: a CUDA loop's host runs ahead of its device until the "
                     "launch queue fills, compiles, is profiled; and a last step that drained the queue)")
    elif len(warm):
        notes.append(f"{_count(len(warm), 'warm-up step')} left out (the first steps, or the first after the profiler "
                     f"started, slower than {WARMUP_FACTOR:g}x the usual step)")
    if len(held):
        seconds = pd.to_numeric(held["duration_s"], errors="coerce").max()
        notes.append(f"the last recorded step ({seconds:.3g} s) held the loop's epilogue (time after the last "
                     "batch, such as DataLoader workers shutting down): left out")
    return steps, notes, len(warm), len(held)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def step_split(steps: pd.DataFrame) -> dict:
    """Mean seconds per step of each part and its share of the step.
    Keys: steps, warmup_steps, epilogue_steps (left out), total_s,
    mean_step_s, {part}_s, {part}_pct for data_wait, compute, callbacks,
    other; notes."""
    used, notes, warm, held = _main_steps(steps)
    n = len(used)
    total = float(used["duration_s"].sum()) if n else 0.0
    out = {"steps": n, "warmup_steps": warm, "epilogue_steps": held, "total_s": total,
           "mean_step_s": total / n if n else None, "notes": notes}
    for part in SPLIT_PARTS:
        s = float(used[part].sum()) if n else 0.0
        out[part] = s / n if n else None
        out[part.removesuffix("_s") + "_pct"] = 100.0 * s / total if total > 0 else None
    return out


def input_bound(split: dict, slowest_callback: str | None = None) -> dict:
    """{verdict: yes|partly|no|unknown, data_wait_pct, summary, next_step}."""
    pct = split.get("data_wait_pct")
    if pct is None:
        return {"verdict": "unknown", "data_wait_pct": None, "summary": "no steps recorded",
                "next_step": "Record steps: wrap the loader with Recorder.wrap, or run the script through "
                             "`tb-pipeline record --logdir DIR -- python train.py`."}
    if pct >= YES_PCT:
        verdict = "yes"
        summary = f"Input-bound: the step waits for data {pct:.0f}% of the time."
        advice = ("Make data loading faster or more parallel: more DataLoader workers or SPDL stage concurrency, "
                  "prefetching, cheaper decoding or cached data. Run again with `--headspace N` to measure the "
                  "step rate with loading taken out: that is the ceiling this work can reach.")
    elif pct >= PARTLY_PCT:
        verdict = "partly"
        summary = f"Partly input-bound: {pct:.0f}% of the step waits for data."
        advice = ("Loading is not fully hidden behind compute: add prefetching or workers so the next batch is "
                  "ready when the step ends; what remains after that is compute.")
    else:
        verdict = "no"
        summary = f"Not input-bound: data wait is {pct:.1f}% of the step."
        advice = "Data loading is hidden. The step time is compute: profile the model (the trace views)."
    cb_pct = split.get("callbacks_pct") or 0.0
    if cb_pct >= CALLBACKS_NOTABLE_PCT:
        who = f", most of it in {slowest_callback}" if slowest_callback else ""
        advice += (f" Callbacks take {cb_pct:.0f}% of the step{who}: run them less often or asynchronously.")
    return {"verdict": verdict, "data_wait_pct": float(pct), "summary": summary, "next_step": advice}


def throughput(steps: pd.DataFrame, window_s: float | None = None) -> pd.DataFrame:
    """Rates over time in windows of `window_s` (default: about
    THROUGHPUT_POINTS windows over the run, each at least
    STEPS_PER_WINDOW_MIN median steps long). Columns: t_s (window start),
    window_s, steps, steps_per_s, samples_per_s (NaN when batch sizes are unknown)."""
    cols = ["t_s", "window_s", "steps", "steps_per_s", "samples_per_s"]
    if not len(steps):
        return pd.DataFrame(columns=cols)
    steps = steps.sort_values("t_s")
    start = steps["t_s"].to_numpy(float)
    end = start + steps["duration_s"].to_numpy(float)
    span = float(end.max() - start.min())
    if window_s is None:
        median_step_s = float(np.median(end - start))
        window_s = max(span / THROUGHPUT_POINTS, STEPS_PER_WINDOW_MIN * median_step_s) if span > 0 else 1.0
    if window_s <= 0:
        raise ValueError("window_s must be > 0")
    # A step counts in the window where it ends: that is when its work is done.
    edges = start.min() + window_s * np.arange(int(math.ceil(span / window_s)) + 1)
    if len(edges) < 2:
        edges = np.array([start.min(), start.min() + window_s])
    idx = np.clip(np.searchsorted(edges, end, side="right") - 1, 0, len(edges) - 2)
    counts = np.bincount(idx, minlength=len(edges) - 1).astype(float)
    sizes = pd.to_numeric(steps["batch_size"], errors="coerce").to_numpy(float)
    known = np.isfinite(sizes)
    samples = np.bincount(idx[known], weights=sizes[known], minlength=len(edges) - 1)
    return pd.DataFrame({"t_s": edges[:-1], "window_s": window_s, "steps": counts, "steps_per_s": counts / window_s,
                         "samples_per_s": samples / window_s if known.all() and known.any() else np.nan})


def throughput_summary(steps: pd.DataFrame) -> dict:
    """Whole-run rates over the split's steps: steps_per_s = steps / their total time."""
    used, _ = main_steps(steps)
    total = float(used["duration_s"].sum()) if len(used) else 0.0
    sizes = pd.to_numeric(used["batch_size"], errors="coerce") if len(used) else pd.Series(dtype=float)
    samples = float(sizes.sum()) if len(sizes) and sizes.notna().all() else None
    return {"steps_per_s": len(used) / total if total > 0 else None,
            "samples_per_s": samples / total if samples is not None and total > 0 else None}


def slowest_callbacks(callbacks: pd.DataFrame, recorded: pd.DataFrame) -> pd.DataFrame:
    """Per callback (name, kind): calls, total/mean/max seconds, seconds per
    step and share of all step time, over the steps every figure counts
    (`main_steps` of the `recorded` steps): the callbacks of the steps left
    out (warm-up, the epilogue, another loader's) are left out too, so that
    calls and seconds per step are of the same steps; slowest (by total) first."""
    steps = main_steps(recorded)[0]
    callbacks = _of_steps_kept(callbacks, recorded, steps)
    if not len(callbacks):
        return pd.DataFrame(columns=CALLBACK_COLUMNS)
    g = callbacks.groupby(["name", "kind"], sort=False)["time_s"]
    out = pd.DataFrame({"calls": g.size(), "total_s": g.sum(), "mean_s": g.mean(), "max_s": g.max()}).reset_index()
    n = max(len(steps), 1)
    total = float(steps["duration_s"].sum()) if len(steps) else 0.0
    out["per_step_s"] = out["total_s"] / n
    out["share_pct"] = 100.0 * out["total_s"] / total if total > 0 else np.nan
    return out.sort_values("total_s", ascending=False, kind="stable").reset_index(drop=True)[CALLBACK_COLUMNS]


def _of_steps_kept(callbacks: pd.DataFrame, recorded: pd.DataFrame, kept: pd.DataFrame) -> pd.DataFrame:
    """`callbacks` without those of the recorded steps not in `kept` (a subset of its rows), matched by
    the step's recording, loader and number where both tables carry them."""
    left_out = recorded.loc[recorded.index.difference(kept.index)]
    if not len(left_out) or not len(callbacks) or "step" not in callbacks:
        return callbacks
    keys = [c for c in ("recording", "loader", "step")
            if c in callbacks and c in left_out and callbacks[c].notna().all()]
    dropped = pd.MultiIndex.from_frame(left_out[keys].astype(object))
    return callbacks[~pd.MultiIndex.from_frame(callbacks[keys].astype(object)).isin(dropped)]


def host_metrics(host: pd.DataFrame) -> pd.DataFrame:
    """Host samples over time; cumulative byte counters become rates
    (bytes/s since the previous sample; a counter reset gives NaN)."""
    if not len(host):
        return pd.DataFrame(columns=HOST_METRIC_COLUMNS)
    h = host.sort_values("t_s").reset_index(drop=True)
    out = pd.DataFrame({"t_s": h["t_s"]})
    for col in ("cpu_pct", "rss_bytes", "mem_used_bytes", "gpu_util_pct", "gpu_mem_used_bytes", "gil_contention_pct"):
        out[col] = pd.to_numeric(h[col], errors="coerce") if col in h else np.nan
    dt = h["t_s"].diff()
    for col in ("disk_read_bytes", "disk_write_bytes", "net_sent_bytes", "net_recv_bytes"):
        d = pd.to_numeric(h[col], errors="coerce").diff()
        out[col + "_per_s"] = (d / dt.where(dt > 0)).where(d >= 0)
    return out[HOST_METRIC_COLUMNS]


def host_summary(metrics: pd.DataFrame, loop_s: tuple[float, float] | None = None) -> dict:
    """Means (CPU, GPU utilisation, byte rates, GIL contention) and peaks
    (memory, GIL contention) over the run. GIL contention: over the samples
    taken while the loop ran (`loop_s`: first step start, last step end, in
    t_s), when some were: the imports before the loop hold the GIL for
    seconds (torch's), which says nothing about the loading."""
    def stat(col, how, frame=metrics):
        s = pd.to_numeric(frame[col], errors="coerce").dropna() if col in frame else pd.Series(dtype=float)
        return None if not len(s) else float(getattr(s, how)())
    gil = metrics
    if loop_s is not None and "gil_contention_pct" in metrics:
        t = pd.to_numeric(metrics["t_s"], errors="coerce")
        inside = metrics[(t > loop_s[0]) & (t <= loop_s[1])]
        if pd.to_numeric(inside["gil_contention_pct"], errors="coerce").notna().any():
            gil = inside
    return {
        "samples": int(len(metrics)), "cpu_pct_mean": stat("cpu_pct", "mean"), "cpu_pct_max": stat("cpu_pct", "max"),
        "rss_bytes_max": stat("rss_bytes", "max"), "mem_used_bytes_max": stat("mem_used_bytes", "max"),
        "disk_read_bytes_per_s_mean": stat("disk_read_bytes_per_s", "mean"),
        "disk_write_bytes_per_s_mean": stat("disk_write_bytes_per_s", "mean"),
        "net_sent_bytes_per_s_mean": stat("net_sent_bytes_per_s", "mean"),
        "net_recv_bytes_per_s_mean": stat("net_recv_bytes_per_s", "mean"),
        "gpu_util_pct_mean": stat("gpu_util_pct", "mean"), "gpu_mem_used_bytes_max": stat("gpu_mem_used_bytes", "max"),
        "gil_contention_pct_mean": stat("gil_contention_pct", "mean", gil),
        "gil_contention_pct_median": stat("gil_contention_pct", "median", gil),
        "gil_contention_pct_max": stat("gil_contention_pct", "max", gil),
    }


def loop_span(steps: pd.DataFrame) -> tuple[float, float] | None:
    """(first step's start, last step's end) in t_s; None without steps."""
    if not len(steps):
        return None
    start = pd.to_numeric(steps["t_s"], errors="coerce")
    end = start + pd.to_numeric(steps["duration_s"], errors="coerce")
    return (float(start.min()), float(end.max())) if start.notna().any() and end.notna().any() else None


def report(tables) -> dict:
    """Everything the Pipeline view shows for one run, JSON-ready."""
    split = step_split(tables.steps)
    callbacks = slowest_callbacks(tables.callbacks, tables.steps)
    stages = stage_table(tables.stage_tasks, tables.stage_queues)
    metrics = host_metrics(tables.host)
    slowest_cb = str(callbacks["name"].iloc[0]) if len(callbacks) else None
    verdict = input_bound(split, slowest_cb)
    host = host_summary(metrics, loop_span(tables.steps))
    cores = max((m.get("cpu_count") or 1 for m in tables.meta), default=1)
    neck = bottleneck(stages, verdict["verdict"], host, cores)
    stages = flag(stages, neck)  # the host's GIL contention may have changed the stage table's first guess
    cpu = host["cpu_pct_mean"]
    # With CPU time per task recorded, analysis/statistics/gil.py has decided from it;
    # the process-wide hint is for recordings without it.
    measured = bool(pd.to_numeric(stages["task_cpu_mean_s"], errors="coerce").notna().any())
    if neck["slowest_stage"] and not measured and cpu is not None and cores > 1 and ONE_CORE_PCT[0] <= cpu <= ONE_CORE_PCT[1]:
        # Threads that hold the GIL take turns: the process tops out near one
        # core however many there are, and stage task times include GIL waits.
        neck["summary"] += (f" The process uses about one core ({cpu:.0f}% of {cores}): stages holding the GIL "
                            "may be taking turns, which also inflates the busy figures; SPDL's diagnostic mode "
                            "measures each stage alone.")
    return {
        "source": tables.source,
        "split": split,
        "input_bound": verdict,
        "throughput": {**throughput_summary(tables.steps), "series": records(throughput(main_steps(tables.steps)[0]))},
        "stages": records(stages),
        "bottleneck": neck,
        "callbacks": records(callbacks),
        "host": {"summary": host, "series": records(metrics)},
        "meta": tables.meta,
        # What could not be read; the loop's end is no loss: `epilogue` and the split's notes say it.
        "warnings": list(tables.warnings),
        "group": recordings_part(tables),
        "epilogue": epilogue_part(tables),
    }


def _held_epilogue(tables) -> pd.DataFrame:
    """The main loader's steps that held the loop's epilogue (analysis/statistics/settle.py)."""
    steps = tables.steps
    if not len(steps):
        return steps
    loaders = steps["loader"].value_counts()
    return settle(steps[steps["loader"] == loaders.index[0]])[2]


def epilogue_part(tables) -> dict | None:
    """The time the loop's end cost after its last step (seconds per
    recording), which no step, rate or verdict includes; None unknown."""
    held = _held_epilogue(tables)
    seconds = epilogue_s(tables, held)
    if seconds is None:
        return None
    if len(held):
        note = (f"{seconds:.3g} s in the last recorded step, which was still running when the recorder closed (a "
                "file written before loop ends were recorded, or a loop that never ended): the loop's end "
                "(DataLoader workers shutting down, a final checkpoint), left out of every step, rate and verdict.")
    else:
        note = (f"{seconds:.3g} s after the last step (the loop's end: DataLoader workers shutting down, a final "
                "checkpoint): time the run pays that is in no step, rate or verdict.")
    return {"epilogue_s": seconds, "from_last_step": bool(len(held)), "note": note}


def recordings_part(tables) -> dict | None:
    """A pooled group's (analysis/statistics/group.py) recordings, each with its
    own split, rate and verdict (the spread the pooled figures hide), and the
    recording the host samples come from; None for one run."""
    names = getattr(tables, "recording_names", None)
    if not names:
        return None
    rows = []
    for i, name in enumerate(names):
        steps = tables.steps[tables.steps["recording"] == i]
        split = step_split(steps)
        rows.append({"name": name, "steps": split["steps"], "mean_step_s": split["mean_step_s"],
                     "data_wait_pct": split["data_wait_pct"], "steps_per_s": throughput_summary(steps)["steps_per_s"],
                     "input_bound": input_bound(split)["verdict"]})
    rep = names[tables.representative]
    return {"recordings": rows, "representative": rep,
            "note": (f"Pooled across {len(names)} recordings: split, verdict, rates, stages and callbacks over all "
                     f"their steps (counts are totals); host samples from {rep}, the recording with the median "
                     "step time.")}


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts with NaN as None and numpy scalars as Python numbers."""
    out = []
    for row in frame.to_dict("records"):
        out.append({k: _plain(v) for k, v in row.items()})
    return out


def _plain(v):
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if not math.isfinite(float(v)) else float(v)
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    return v
