"""Data-wait split of a trace-only run (no statistics recorded): every run
gets one, from the profiler's `enumerate(DataLoader)#...__next__` annotations."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...readers.tables import STEP_COLUMNS
from ...trace.link import LinkedTrace
from ..overview import step_breakdown, unix_offset_s



def steps_from_trace(linked: LinkedTrace) -> pd.DataFrame:
    """One row per profiled step, in the columns of readers/tables.py:STEP_COLUMNS:
    data wait is the step's DataLoader time, other its idle time, compute the
    rest (operators, kernels, runtime); no callbacks or batch sizes."""
    frame = step_breakdown(linked)
    duration = frame["duration_us"].to_numpy(float) / 1e6
    wait = frame["data_loading"].to_numpy(float) / 1e6
    other = frame["other"].to_numpy(float) / 1e6
    offset = unix_offset_s(linked)
    start = frame["start_us"].to_numpy(float) / 1e6
    return pd.DataFrame({
        "step": frame["step"].to_numpy(), "loader": 0, "t_s": start,
        "wall_start_s": start + (linked.steps.start_us[0] / 1e6 + offset if offset is not None else np.nan),
        "duration_s": duration, "data_wait_s": wait, "compute_s": np.maximum(duration - wait - other, 0.0),
        "callbacks_s": 0.0, "other_s": other, "batch_size": np.nan, "tokens": np.nan, "cached": False,
        # The profiler's steps: no recorder to say where its start-up or the loop's end fell.
        "after_profiler_start": False, "open_at_end": False,
        # Its steps are the profiler's host windows: whether the host ran ahead is the trace's to say
        # (diff/step_basis.py), not these steps'.
        "drives_cuda": False, "device_s": np.nan,
    })[STEP_COLUMNS]
