"""What a run asked of its GPU each profiled step, in counts: kernels,
launch calls, CUDA graph launches and dtype casts (issue 45). Two runs whose
counts differ changed how they use the device, which is often the change
itself: `torch.compile` fuses pointwise work (fewer kernels), CUDA graphs
launch many kernels at once (far fewer launch calls than kernels),
`torch.autocast` casts tensors each step (`aten::_to_copy` calls).

Counted in the steps' host windows (analysis/step_windows.py): device work
by its launch (work launched before the profiled window is no step's),
host calls by their start. Per step: the total over the profiled steps
divided by their number.
"""
from __future__ import annotations

import numpy as np

from ..trace.link import LinkedTrace
from ..trace.names import name_mask
from ..trace.table import Kind, Phase
from .device_time import GRAPH_LAUNCHES
from .step_windows import step_of, step_windows

CASTS = frozenset({"aten::_to_copy"})


def work_per_step(linked: LinkedTrace) -> dict | None:
    """{"kernels", "launch_calls", "graph_launches", "casts"} per profiled
    step (1 decimal); None without device work or step annotations."""
    if not linked.has_device or np.asarray(linked.steps.row)[0] < 0:
        return None
    t = linked.table
    n = len(linked.steps.name)
    start, end = step_windows(linked)
    complete = t.phase == Phase.COMPLETE
    kernels = np.flatnonzero(complete & (t.kind == Kind.KERNEL) & (linked.launch_of >= 0))
    in_step = step_of(start, end, t.ts_us[linked.launch_of[kernels]]) >= 0
    runtime = np.flatnonzero(complete & np.isin(t.kind, (Kind.RUNTIME, Kind.DRIVER)))
    runtime = runtime[step_of(start, end, t.ts_us[runtime]) >= 0]
    launches = runtime[name_mask(t, runtime, lambda s: "Launch" in s)]
    graphs = runtime[name_mask(t, runtime, lambda s: s in GRAPH_LAUNCHES)]
    ops = np.flatnonzero(complete & (t.kind == Kind.CPU_OP))
    ops = ops[step_of(start, end, t.ts_us[ops]) >= 0]
    casts = ops[name_mask(t, ops, lambda s: s in CASTS)]
    return {"kernels": round(int(in_step.sum()) / n, 1), "launch_calls": round(len(launches) / n, 1),
            "graph_launches": round(len(graphs) / n, 1), "casts": round(len(casts) / n, 1)}
