"""What a run was, beyond how fast it ran: the facts two runs must share for
their deltas to mean what they say (diff/comparability.py compares them).

From the trace's metadata: the device and how many, the world size, the
CUDA runtime, the profiler's options; from its events, the kernels, launch
calls, CUDA graph launches and dtype casts a profiled step, and the precision its matrix multiplies
ran in (analysis/precision.py). From the pipeline statistics, when
the run has them: torch and Python, the machine (host name, cores), the
recorded steps, and the load other processes put on the host while it ran
(the machine's CPU use minus the training processes', from the recorder's
host samples). A fact nobody recorded is None, never a guess.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .device import device_info, distributed_info
from .gpu_work import work_per_step
from .precision import gemm_precision

# The profiler options that change what host time measures (torch.profiler's names).
PROFILER_OPTIONS = ("with_stack", "record_shapes", "profile_memory", "with_modules")


def run_facts(run, statistics=None) -> dict:
    """One run's facts (module docstring); `run` a `Run`, `statistics` its PipelineTables or None."""
    metadata = run.linked.table.metadata
    device = device_info(run.linked)
    distributed = distributed_info(run.linked.table) or {}
    meta = statistics.meta[0] if statistics is not None and statistics.meta else {}
    work = work_per_step(run.linked) or {}
    return {
        "device": device["name"] or device["type"],
        "device_count": device["count"],
        "world_size": distributed.get("world_size"),
        "cuda_runtime": _cuda_version(metadata.get("cuda_runtime_version")),
        "profiler": profiler_options(metadata),
        "profiled_steps": int(run.step_count) if run.has_steps else None,
        "compiled": bool(run.compiled_modules()),
        # What the run asked of its GPU each profiled step (analysis/gpu_work.py); None without device work.
        "kernels_per_step": work.get("kernels"),
        "launch_calls_per_step": work.get("launch_calls"),
        "graph_launches_per_step": work.get("graph_launches"),
        "casts_per_step": work.get("casts"),
        # The GEMMs' dominant input dtype, its split and autocast's casts (analysis/precision.py); None
        # without input types (`record_shapes` off) or matrix multiplies.
        "precision": gemm_precision(run.linked),
        "torch": meta.get("torch"),
        "python": meta.get("python"),
        "host": meta.get("hostname") or _str(metadata.get("host_name")),
        "cpu_count": meta.get("cpu_count"),
        "recorded_steps": recorded_steps(statistics.steps) if statistics is not None else None,
        "others_cpu_cores": others_cpu_cores(statistics.host) if statistics is not None else None,
    }


def recorded_steps(steps: pd.DataFrame) -> int | None:
    """Steps the main loader fed (the one that fed most): the run's length,
    warm-up included (leaving it out is the verdict's business, and one
    compiled run's longer warm-up is no difference in what was recorded)."""
    if not len(steps):
        return None
    return int(steps["loader"].value_counts().iloc[0])


def profiler_options(metadata: dict) -> dict:
    """option -> True / False, or None when the trace cannot say: torch 2.x
    (a `trace_id` in the metadata) writes an option's key only when it is
    on; older traces write none of them."""
    modern = "trace_id" in metadata
    out = {}
    for option in PROFILER_OPTIONS:
        value = metadata.get(option)
        if value is not None:
            out[option] = bool(value) if isinstance(value, (bool, int, float)) else None
        else:
            out[option] = False if modern else None
    return out


def others_cpu_cores(host: pd.DataFrame) -> float | None:
    """Mean cores other processes kept busy while the run was recorded: the
    machine's CPU use minus the training tree's, per host sample (the first
    sample primes the counters and reads 0); None when not sampled."""
    if "system_cpu_pct" not in host or len(host) < 2:
        return None
    system = pd.to_numeric(host["system_cpu_pct"], errors="coerce").to_numpy(np.float64)[1:]
    tree = pd.to_numeric(host["cpu_pct"], errors="coerce").to_numpy(np.float64)[1:]
    keep = np.isfinite(system) & np.isfinite(tree)
    if not keep.any():
        return None
    return round(float(np.maximum(system[keep] - tree[keep], 0.0).mean()) / 100.0, 2)


def _cuda_version(value) -> str | None:
    """CUDA's integer version (13000, 12040) as `13.0`, `12.4`."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def _str(value) -> str | None:
    return value if isinstance(value, str) and value else None
