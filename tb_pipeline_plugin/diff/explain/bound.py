"""What bounds each run's profiled steps, and its change, in a clause of the
explanation's sentence (analysis/device_idle.py decides each run's bound
from its device's idle time by cause).

A change of bound is what a GPU engineer says first after the step time:
the experimental run now waits for its host's launches, where the baseline
kept its device busy; the lever differs (CUDA graphs or `torch.compile` for
launches, removing `.item()` / `.cpu()` for a sync, more workers for data).
"""
from __future__ import annotations

from ..comparability import precision_change
from .words import duration

LEVERS = {
    "launch": "fewer, larger launches would help: CUDA graphs (`torch.compile(mode=\"reduce-overhead\")`) or "
              "fused kernels",
    "sync": "a synchronization each step (`.item()`, `.cpu()`, `print` of a tensor) drains the queue: drop or "
            "defer it",
    "input": "the device waits for batches: more DataLoader workers or a faster pipeline",
    "other": "queued work is held back (stream waits, events, dependencies)",
}
CAUSE_WORDS = {"data": "waiting for data", "sync": "after a synchronization", "launch": "waiting for launches",
               "other": "for other reasons"}


def bound_clause(b_overview: dict, e_overview: dict) -> str | None:
    """The clause when either run is not device-bound and the bounds differ;
    None otherwise (both device-bound, or no device work)."""
    b, e = b_overview.get("bound"), e_overview.get("bound")
    if not b or not e or b["bound"] == e["bound"]:
        return None
    side, other, ov = ("experimental", b, e_overview) if e["bound"] != "device" else ("baseline", e, b_overview)
    bound = ov["bound"]
    idle = ov.get("device_idle_us") or {}
    total = sum(idle.values())
    cause = max(idle, key=idle.get) if idle else None
    split = (f"its device idle {duration(total)} a step, {bound['cause_pct'][cause]:.0f} % {CAUSE_WORDS[cause]}"
             if cause else "")
    lever = LEVERS.get(bound["bound"])
    return (f"the {side} run's profiled steps are {bound['words']} ({split}), where the "
            f"{'baseline' if side == 'experimental' else 'experimental'} run's are {other['words']}"
            + (f": {lever}" if lever else ""))


def work_clause(comparability: list[dict], device: bool = True) -> str | None:
    """What changed in the GPU work itself (diff/comparability.py's counts
    a step and its GEMMs' dtype: mixed precision, fused kernels, CUDA
    graphs), as a clause; None when nothing did. `device`: either run has
    device work (a CPU pair's precision is its operators', not the GPU's)."""
    said = []
    for d in comparability:
        if d["key"] == "precision":
            change = precision_change(d)
            said.append(("mixed precision, " if "torch.autocast" in change else "precision, ") + change)
        elif d["key"] == "casts_per_step":
            said.append(f"mixed precision (dtype casts a step {d['baseline']} → {d['experimental']}, as "
                        "`torch.autocast` adds)")
        elif d["key"] == "kernels_per_step" and "fuses" in d["text"]:
            said.append(f"fused kernels ({d['baseline']} → {d['experimental']} kernels a step)")
        elif d["key"] == "launch_calls_per_step":
            said.append(f"CUDA graphs ({d['baseline']} → {d['experimental']} launch calls a step)")
    if not said:
        return None
    return ("what changed on the GPU: " if device else "what changed in the computation: ") + ", ".join(said)
