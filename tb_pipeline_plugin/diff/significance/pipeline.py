"""Which of two runs' pipeline figures moved beyond noise, judged as the trace
side judges its per-step deltas (diff/significance/method.py):

* the step time and each part of the split per step (compute, callbacks,
  other): the recorded steps are the samples (the main loader's, as the
  split counts them), judged as one family against the baseline's mean
  step. With two or more recordings on a side (a pooled group,
  analysis/statistics/group.py) the spread between recordings is measured
  from them; with one it is assumed, as everywhere;
* the data wait per step: judged on its own, the one verdict the
  explanation's pipeline part shows too (diff/explain/pipeline.py);
* each stage's mean task time, where both sides are groups of at least
  `MIN_STAGE_RECORDINGS` recordings: every recording's own stage table is
  one sample (a recording-level test, as benchstat compares benchmark
  processes); a single recording has no spread of its own to judge a stage
  by, so its stage rows carry none.

Figures in seconds are judged in µs, and their `significance` objects are
in µs, as every other one in the API.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...analysis.statistics import report as ap
from ...analysis.statistics.group import RECORDING
from . import method as S

# Summary metric -> the step column whose per-step values it is the mean of (judged as one family).
STEP_PARTS = {"split.mean_step_s": "duration_s", "split.compute_s": "compute_s", "split.callbacks_s": "callbacks_s",
              "split.other_s": "other_s"}
DATA_WAIT = "split.data_wait_s"  # judged on its own: one verdict with the explanation's
# A recording-level test with fewer samples than the per-step minimum is not made.
MIN_STAGE_RECORDINGS = S.MIN_STEPS
_US = 1e6


def recordings(tables) -> int:
    """How many recordings `tables` pool (1 for one run)."""
    return max(1, len(getattr(tables, "recording_names", None) or []))


def step_labels(steps: pd.DataFrame) -> np.ndarray | None:
    """Each step's recording, None for one run."""
    return steps[RECORDING].to_numpy() if RECORDING in steps else None


def data_wait_us(tables) -> tuple[np.ndarray, np.ndarray | None]:
    """Each main-loader step's data wait (µs) and, for a pooled group, its recording."""
    used, _ = ap.main_steps(tables.steps)
    wait = pd.to_numeric(used["data_wait_s"], errors="coerce")
    return wait.dropna().to_numpy(np.float64) * _US, step_labels(used[wait.notna()])


def step_mean_us(tables) -> float | None:
    """The mean main-loader step (µs), the reference of every part of a step."""
    used, _ = ap.main_steps(tables.steps)
    s = pd.to_numeric(used["duration_s"], errors="coerce").dropna()
    return float(s.mean()) * _US if len(s) else None


def on_device_clock(tables) -> bool:
    """Every main-loader step kept has its device time recorded (CUDA events
    at step boundaries: formats/pipeline.py:DeviceStep)."""
    used, _ = ap.main_steps(tables.steps)
    if not len(used) or "device_s" not in used:
        return False
    return bool(np.isfinite(pd.to_numeric(used["device_s"], errors="coerce").to_numpy(np.float64)).all())


def step_us(tables, per: str | float | None = None, column: str = "duration_s") -> tuple[np.ndarray, np.ndarray | None]:
    """Each main-loader step's duration (µs; warm-up and epilogue left out:
    analysis/statistics/settle.py) and, for a pooled group, its recording.
    `per`: a step column to divide each step by (its samples or tokens:
    analysis/statistics/samples.py), or one count for every step (given by
    the user): then µs per sample or token. `column`: the host's duration,
    or `device_s`, the device's (`on_device_clock`)."""
    used, _ = ap.main_steps(tables.steps)
    d = pd.to_numeric(used[column], errors="coerce")
    keep = d.notna()
    us = d[keep].to_numpy(np.float64) * _US
    if isinstance(per, str):
        us = us / pd.to_numeric(used.loc[keep, per], errors="coerce").to_numpy(np.float64)
    elif per is not None:
        us = us / float(per)
    return us, step_labels(used[keep])


def recorded_step(b_tables, e_tables, per: tuple = (None, None), *, noise: S.NoisePolicy,
                  column: str = "duration_s") -> dict:
    """The step-time verdict from every recorded step (the one verdict of a
    pair whose runs both have statistics: `significance.step_time` on them):
    the means (µs), the delta and its significance. `per`: each run's
    divisor (`step_us`), for a verdict per sample or token."""
    (b, b_rec), (e, e_rec) = step_us(b_tables, per[0], column), step_us(e_tables, per[1], column)
    bm = float(b.mean()) if len(b) else 0.0
    em = float(e.mean()) if len(e) else 0.0
    return {"baseline_us": round(bm, 3), "experimental_us": round(em, 3), "delta_us": round(em - bm, 3),
            "significance": S.step_time(b, e, (b_rec, e_rec), noise=noise)}


def data_wait_significance(b_tables, e_tables, *, noise: S.NoisePolicy) -> dict:
    """The one verdict on the data wait per step (diff/pipeline's row and the
    explanation's pipeline part)."""
    (bw, b_rec), (ew, e_rec) = data_wait_us(b_tables), data_wait_us(e_tables)
    return S.compare_one(bw, ew, reference=step_mean_us(b_tables), recordings=(b_rec, e_rec), noise=noise)


def summary_significance(b_tables, e_tables, *, noise: S.NoisePolicy) -> dict[str, dict]:
    """metric -> significance of the step-time and split rows of diff/pipeline's summary."""
    bu, eu = ap.main_steps(b_tables.steps)[0], ap.main_steps(e_tables.steps)[0]

    def samples(used: pd.DataFrame) -> np.ndarray:
        # A part a step did not record counts 0, as the split's sums count it.
        return np.stack([pd.to_numeric(used[c], errors="coerce").fillna(0.0).to_numpy(np.float64) * _US
                         for c in STEP_PARTS.values()]) if len(used) else np.zeros((len(STEP_PARTS), 0))

    b, e = samples(bu), samples(eu)
    judged = S.compare(b, e, reference=np.full(len(STEP_PARTS), step_mean_us(b_tables) or 0.0),
                       recordings=(step_labels(bu), step_labels(eu)), noise=noise)
    return {**dict(zip(STEP_PARTS, judged)), DATA_WAIT: data_wait_significance(b_tables, e_tables, noise=noise)}


def _stage_samples(tables) -> dict[tuple, np.ndarray]:
    """(pipeline_index, stage_name) -> each recording's mean task time (µs)."""
    per: dict[tuple, list[float]] = {}
    for i in range(recordings(tables)):
        tasks = tables.stage_tasks[tables.stage_tasks[RECORDING] == i]
        queues = tables.stage_queues[tables.stage_queues[RECORDING] == i]
        for r in ap.stage_table(tasks, queues).to_dict("records"):
            value = pd.to_numeric(pd.Series([r["task_mean_s"]]), errors="coerce")[0]
            if np.isfinite(value):
                per.setdefault((int(r["pipeline_index"]), r["stage_name"]), []).append(float(value) * _US)
    return {key: np.asarray(values) for key, values in per.items()}


def stage_significance(b_tables, e_tables, *, noise: S.NoisePolicy) -> dict[tuple, dict]:
    """(pipeline_index, stage_name) -> significance of the stage's mean task
    time delta, for stages every recording of both groups timed; empty
    unless both sides pool `MIN_STAGE_RECORDINGS` recordings or more."""
    if min(recordings(b_tables), recordings(e_tables)) < MIN_STAGE_RECORDINGS:
        return {}
    b, e = _stage_samples(b_tables), _stage_samples(e_tables)
    keys = [k for k in b if k in e and len(b[k]) == recordings(b_tables) and len(e[k]) == recordings(e_tables)]
    out = {}
    for key in keys:
        out[key] = S.compare(b[key][None, :], e[key][None, :], family=len(keys),
                             recordings=(np.arange(len(b[key])), np.arange(len(e[key]))), noise=noise)[0]
    return out


def noise_source(b_tables, e_tables, policy: S.NoisePolicy) -> dict:
    """Where the bands came from, as the explanation says it."""
    nb, ne = recordings(b_tables), recordings(e_tables)
    return {"source": S.MEASURED if max(nb, ne) >= S.MIN_RECORDINGS else S.ASSUMED, "baseline_recordings": nb,
            "experimental_recordings": ne, "note": S.noise_note(nb, ne, policy)}


def with_significance(payload: dict, b_tables, e_tables, *, noise: S.NoisePolicy) -> dict:
    """diff/pipeline's payload with `significance` on its summary rows (None
    where a figure is not a mean of steps) and stage rows (None without
    groups on both sides), and `noise`."""
    summary = summary_significance(b_tables, e_tables, noise=noise)
    for row in payload["summary"]:
        row["significance"] = summary.get(row["metric"])
    stages = stage_significance(b_tables, e_tables, noise=noise)
    for row in payload["stages"]:
        row["significance"] = stages.get((row["pipeline_index"], row["stage_name"]))
    payload["noise"] = noise_source(b_tables, e_tables, noise)
    return payload
