"""The precision a run's matrix multiplies ran in, from its operators' input
dtypes (`Input type`, recorded with `record_shapes=True`; the trace's
`input_type_id` column), and whether `torch.autocast` put them there
(issue 45).

The GEMM-like operators (`aten::mm`, `addmm`, `bmm`, `baddbmm`, `matmul`,
`linear`, the convolutions, `_scaled_dot_product_*`, `_scaled_mm`) are
taken innermost: a GEMM-like operator that calls another (`aten::linear` →
`aten::addmm`, `aten::matmul` → `aten::mm`) is left to the one it calls,
because autocast's casts happen between the two: the outer `aten::linear`
still receives fp32 tensors, the `aten::addmm` it calls receives bf16
ones. Each one's dtype is that of its first floating-point input
(`float` → fp32, `c10::BFloat16` → bf16, `c10::Half` → fp16, `double` →
fp64, `c10::Float8_*` → fp8), weighed by the device time it launched
(its own and its callees' kernels), or by its calls on a run without
device work. The dominant dtype is the run's GEMM precision.

Autocast leaves no annotation in the trace (the `autocast_mode.py` Python
frames appear whether it is enabled or not): what it leaves is casts.
`aten::_to_copy` calls made inside a GEMM-like operator are autocast's
casts of its inputs (a GEMM does not cast its inputs on its own); all the
casts a step are `analysis/gpu_work.py`'s count.

Counted in the steps' host windows (analysis/step_windows.py) by each
operator's start; per step: the total over the profiled steps divided by
their number (a trace without step annotations is one step).
"""
from __future__ import annotations

import json

import numpy as np

from ..trace.link import LinkedTrace
from ..trace.names import ids_mask, name_mask
from ..trace.table import Kind, Phase
from .gpu_work import CASTS
from .step_windows import step_of, step_windows

GEMM_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::addmv",
    "aten::mv", "aten::convolution", "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::cudnn_convolution",
    "aten::convolution_backward", "aten::_scaled_mm", "aten::_grouped_mm", "aten::_scaled_grouped_mm",
    "aten::scaled_dot_product_attention",
})
GEMM_PREFIXES = ("aten::_scaled_dot_product_",)
# Operators a cast is seen through on its way up to the operator that asked for it.
_CAST_WRAPPERS = frozenset({"aten::to", "aten::_to_copy", "aten::type_as"})

# torch's names of the floating dtypes (`Input type`) -> their short names.
DTYPES = {
    "float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8", "c10::Float8_e8m0fnu": "fp8", "c10::Float4_e2m1fn_x2": "fp4",
}


def is_gemm(name: str) -> bool:
    return name in GEMM_OPS or name.startswith(GEMM_PREFIXES)


def short_dtype(torch_name: str) -> str | None:
    """fp32, bf16, ... for a floating dtype's name in `Input type`; None for
    any other (integers, `Scalar`, lists, an absent tensor's "")."""
    if torch_name in DTYPES:
        return DTYPES[torch_name]
    return "fp8" if torch_name.startswith("c10::Float8_") else None


def first_floating(input_types: str) -> str | None:
    """The short dtype of the first floating input in an `Input type` JSON
    text, None when there is none or the text is no list."""
    try:
        types = json.loads(input_types)
    except ValueError:
        return None
    if not isinstance(types, list):
        return None
    return next((d for d in map(short_dtype, (t for t in types if isinstance(t, str))) if d), None)


def gemm_precision(linked: LinkedTrace) -> dict | None:
    """The run's GEMM precision (module docstring), or None when no
    GEMM-like operator of its steps carries a floating input type
    (`record_shapes` off, or no matrix multiply):

    {"dtype": the dominant short dtype, "by": "device_time" or "calls",
     "share_pct": its share of the GEMMs' device time (or calls),
     "dtypes": [{"dtype", "calls_per_step", "device_us_per_step"}, ...] largest first,
     "gemm_casts_per_step": `aten::_to_copy` calls a step made inside a GEMM-like operator (autocast's)}."""
    t = linked.table
    n = len(linked.steps.name)
    if n == 0:
        return None
    start, end = step_windows(linked)
    ops = np.flatnonzero((t.phase == Phase.COMPLETE) & (t.kind == Kind.CPU_OP))
    gemm_mask = np.zeros(len(t), dtype=bool)
    gemm_mask[ops[name_mask(t, ops, is_gemm)]] = True
    gemms = np.flatnonzero(gemm_mask)
    gemms = gemms[step_of(start, end, t.ts_us[gemms]) >= 0]
    if not len(gemms):
        return None
    # Innermost: drop every GEMM-like operator that encloses another.
    encloses = np.zeros(len(t), dtype=bool)
    up = linked.parent[gemms]
    while len(up):
        up = up[up >= 0]
        encloses[up[gemm_mask[up]]] = True
        up = linked.parent[up]
    gemms = gemms[~encloses[gemms]]
    dtypes = _dtypes_of(t, gemms)
    typed = dtypes != None  # noqa: E711 (an object array)
    if not typed.any():
        return None
    gemms, dtypes = gemms[typed], dtypes[typed]
    device = np.asarray(linked.device_total_us, dtype=np.float64)[gemms]
    by_device = bool(device.sum() > 0)
    rows = []
    for dtype in sorted(set(dtypes.tolist())):
        mine = dtypes == dtype
        rows.append({"dtype": dtype, "calls_per_step": round(int(mine.sum()) / n, 1),
                     "device_us_per_step": round(float(device[mine].sum()) / n, 3)})
    weight = "device_us_per_step" if by_device else "calls_per_step"
    rows.sort(key=lambda r: (-r[weight], -r["calls_per_step"], r["dtype"]))
    total = sum(r[weight] for r in rows)
    gemm_casts = _gemm_casts(linked, ops, gemm_mask, start, end)
    return {"dtype": rows[0]["dtype"], "by": "device_time" if by_device else "calls",
            "share_pct": round(100.0 * rows[0][weight] / total, 1) if total else 100.0,
            "dtypes": rows, "gemm_casts_per_step": round(gemm_casts / n, 1)}


def _dtypes_of(t, rows: np.ndarray) -> np.ndarray:
    """The first floating input's short dtype of each row (None: none), parsed once per distinct text."""
    ids = t.input_type_id[rows]
    out = np.full(len(rows), None, dtype=object)
    for i in np.unique(ids[ids >= 0]).tolist():
        out[ids == i] = first_floating(t.strings[i])
    return out


def _gemm_casts(linked: LinkedTrace, ops: np.ndarray, gemm_mask: np.ndarray, start, end) -> int:
    """The casts in the steps whose nearest operator other than a cast or
    `aten::to` is GEMM-like."""
    t = linked.table
    casts = ops[name_mask(t, ops, lambda s: s in CASTS)]
    casts = casts[step_of(start, end, t.ts_us[casts]) >= 0]
    if not len(casts):
        return 0
    is_op = np.zeros(len(t), dtype=bool)
    is_op[ops] = True
    wrapper = np.zeros(len(t), dtype=bool)
    wrapper[ops[ids_mask(t.strings, t.name_id[ops], lambda s: s in _CAST_WRAPPERS)]] = True
    # Up from each cast to its nearest operator that is no cast wrapper (Python frames passed through).
    up = linked.parent[casts]
    found = np.full(len(casts), -1, dtype=np.int64)
    live = np.arange(len(casts))
    while len(live):
        at = up[live]
        gone = at < 0
        stop = ~gone & is_op[np.maximum(at, 0)] & ~wrapper[np.maximum(at, 0)]
        found[live[stop]] = at[stop]
        live = live[~gone & ~stop]
        up[live] = linked.parent[up[live]]
    inside = found >= 0
    return int(gemm_mask[found[inside]].sum())
