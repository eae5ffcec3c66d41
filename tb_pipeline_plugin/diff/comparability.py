"""Can two runs be compared as they stand: every difference between what
they were (analysis/run_facts.py) that is not the change being measured,
listed before any verdict, each with what it does to the numbers.

`effect` says how far a difference reaches:

* `per_unit`: the runs' work per step differs (diff/units.py); the
  step-level answers are per sample or token, and say so;
* `no_verdict`: a number is meaningless as it stands, and gets no verdict
  (its significance reads `not_comparable`: diff/significance/withheld.py): the profiler's options
  (`with_stack`, `record_shapes`, `profile_memory`, `with_modules`) on one
  side only inflate that side's host time in its profiled steps, so the
  host-time deltas of the profiled steps are the profiler's, not the
  change's;
* `caveat`: the numbers stand, but part of a delta may be this difference
  (another device or machine, a busier host, another world size);
* `note`: worth knowing, no number is affected on its own (torch or CUDA
  versions, step counts, a compiled side).

A fact either run did not record is no difference: nothing is listed on a
guess, and pairs that differ only in the change under test list nothing.
"""
from __future__ import annotations

from .units import STEP

PER_UNIT, NO_VERDICT, CAVEAT, NOTE = "per_unit", "no_verdict", "caveat", "note"
# Other processes' load differs by this many cores, and this share of the
# machine, before it is listed: a sampler's own noise is well below.
LOAD_CORES = 0.5
LOAD_SHARE_PCT = 10.0
# Casts a step that tell mixed precision: this many more, and this many times the other run's.
CASTS_MIN = 20.0
CASTS_RATIO = 5.0
# Kernels a step that changed by this share or more changed how the run uses its device.
KERNELS_CHANGE_PCT = 10.0

_OPTION_WORDS = {"with_stack": "stacks", "record_shapes": "input shapes", "profile_memory": "memory events",
                 "with_modules": "module hierarchy"}


def differences(b: dict, e: dict, units: dict) -> list[dict]:
    """Every difference between the runs' facts (`run_facts`), most
    consequential first."""
    out = []
    if units["unit"] != STEP:
        unit = units["unit"]
        out.append(_item("work_per_step", f"{unit.capitalize()}s per step",
                         _fmt(units["baseline"][f"{unit}s_per_step"]), _fmt(units["experimental"][f"{unit}s_per_step"]),
                         PER_UNIT, f"The runs' steps hold different work: the step time, its verdict and its parts "
                                   f"are compared per {unit} ({unit}s/s beside), the per-step figures next to them."))
    else:
        out += _unknown_counts(units)
    options = _options(b["profiler"], e["profiler"])
    if options:
        out.append(options)
    for key, label, effect, text in (
        ("device", "Device", CAVEAT, "Different devices: device time compares the hardware as well as the change."),
        ("device_count", "Devices", CAVEAT, "The work is spread over different numbers of devices."),
        ("world_size", "World size", CAVEAT, "A rank's step includes collectives over different numbers of ranks."),
        ("host", "Host", CAVEAT, "Recorded on different machines: host time compares the machines as well."),
        ("cpu_count", "CPU cores", CAVEAT, "Recorded on machines with different cores: host time compares them too."),
        ("torch", "torch", NOTE, "Different torch versions: operators and kernels may differ by version alone."),
        ("cuda_runtime", "CUDA runtime", NOTE, "Different CUDA runtimes: kernels may differ by version alone."),
        ("python", "Python", NOTE, "Different Python versions: Python's own host time may differ."),
        ("recorded_steps", "Recorded steps", NOTE, "The runs recorded different numbers of steps: the step verdict "
                                                   "weighs each run's steps as they are."),
        ("profiled_steps", "Profiled steps", NOTE, "The traces profiled different numbers of steps: the parts are "
                                                   "judged on unequal samples."),
    ):
        bv, ev = b.get(key), e.get(key)
        if bv is not None and ev is not None and bv != ev:
            out.append(_item(key, label, _fmt(bv), _fmt(ev), effect, text))
    if b["compiled"] != e["compiled"]:
        side = "baseline" if b["compiled"] else "experimental"
        out.append(_item("compiled", "torch.compile", "yes" if b["compiled"] else "no", "yes" if e["compiled"] else "no",
                         NOTE, f"Only the {side} run ran compiled modules: compiled regions compare as one piece "
                               "against the other run's eager modules."))
    out += _gpu_work(b, e)
    load = _load(b, e)
    if load:
        out.append(load)
    order = {PER_UNIT: 0, NO_VERDICT: 1, CAVEAT: 2, NOTE: 3}
    return sorted(out, key=lambda d: order[d["effect"]])


def host_time_void(items: list[dict]) -> str | None:
    """Why host-time deltas of the profiled steps get no verdict, or None."""
    return next((d["text"] for d in items if d["effect"] == NO_VERDICT), None)


def _options(b: dict, e: dict) -> dict | None:
    """One item for every profiler option on in one run only."""
    only_b = [o for o in _OPTION_WORDS if b.get(o) is True and e.get(o) is False]
    only_e = [o for o in _OPTION_WORDS if e.get(o) is True and b.get(o) is False]
    if not only_b and not only_e:
        return None
    said = []
    for side, options in (("baseline", only_b), ("experimental", only_e)):
        if options:
            names = ", ".join(f"{_OPTION_WORDS[o]} (`{o}`)" for o in options)
            said.append(f"{names} recorded in the {side} run only")
    text = ("; ".join(said) + ": the profiler's own cost inflates that run's host time in its profiled steps, so "
            "host-time deltas of the profiled steps get no verdict. Record both runs with the same profiler options.")
    return _item("profiler_options", "Profiler options", _on(b), _on(e), NO_VERDICT, text[0].upper() + text[1:])


def _gpu_work(b: dict, e: dict) -> list[dict]:
    """How the runs use the device differently, from their profiled steps'
    counts (analysis/gpu_work.py) and their GEMMs' input dtypes
    (analysis/precision.py): often the change itself, said with what it does
    to the numbers. A change of precision says the casts with it; casts
    alone (no input types recorded, or the same GEMM dtype) are an item of
    their own."""
    bc, ec = b.get("casts_per_step"), e.get("casts_per_step")
    precision = _precision(b.get("precision"), e.get("precision"), (bc, ec))
    out = [precision] if precision else []
    if (not precision and bc is not None and ec is not None and abs(ec - bc) >= CASTS_MIN
            and max(bc, ec) >= CASTS_RATIO * max(min(bc, ec), 1)):
        side = "experimental" if ec > bc else "baseline"
        out.append(_item("casts_per_step", "Dtype casts a step", _fmt(bc), _fmt(ec), NOTE,
                         f"The {side} run casts tensors {_fmt(max(bc, ec))} times a step (`aten::_to_copy`) against "
                         f"{_fmt(min(bc, ec))}: mixed precision, as `torch.autocast` casts operator inputs to a lower "
                         "precision, so its kernels (GEMMs above all) are other kernels, and the casts cost time of "
                         "their own."))
    bk, ek = b.get("kernels_per_step"), e.get("kernels_per_step")
    if bk and ek and abs(ek - bk) >= KERNELS_CHANGE_PCT / 100.0 * bk:
        fused = ek < bk and e.get("compiled") and not b.get("compiled") or bk < ek and b.get("compiled") and not e.get(
            "compiled")
        more_casts = bc is not None and ec is not None and (ec - bc) * (ek - bk) > 0 and abs(ec - bc) >= CASTS_MIN
        why = ("the compiled run fuses pointwise work into fewer, larger (Triton) kernels" if fused else
               f"the casts launch kernels of their own (dtype casts a step {_fmt(bc)} → {_fmt(ec)})"
               if more_casts else "the runs launch different work")
        out.append(_item("kernels_per_step", "Kernels a step", _fmt(bk), _fmt(ek), NOTE,
                         f"{_fmt(bk)} → {_fmt(ek)} kernels a step: {why}; kernel rows match by name only where "
                         "the same kernel ran."))
    bg, eg = b.get("graph_launches_per_step"), e.get("graph_launches_per_step")
    bl, el = b.get("launch_calls_per_step"), e.get("launch_calls_per_step")
    if bg is not None and eg is not None and (bg > 0) != (eg > 0) and bl is not None and el is not None:
        side, calls, kernels = (("experimental", el, ek) if eg > 0 else ("baseline", bl, bk))
        out.append(_item("launch_calls_per_step", "Launch calls a step", _fmt(bl), _fmt(el), NOTE,
                         f"The {side} run replays CUDA graphs: {_fmt(calls)} launch calls a step for "
                         f"{_fmt(kernels)} kernels, so its host spends far less on launching; which module ran a "
                         "graph's kernel the trace does not say."))
    return out


def _precision(b: dict | None, e: dict | None, casts: tuple) -> dict | None:
    """The GEMMs' dominant input dtype changed (`fp32 → bf16`): the item,
    with autocast's casts where the trace shows them (`casts`: each run's
    casts a step); None when either run's input types are unknown
    (`record_shapes` off) or the dtype is the same. Its text's first
    sentence is the change (`precision_change`)."""
    if not b or not e or b["dtype"] == e["dtype"]:
        return None
    bd, ed = b["dtype"], e["dtype"]
    on_device = b["by"] == e["by"] == "device_time"
    # Without device work the host's GEMM operators run other code: there are no kernel rows to match.
    other = "GEMM kernels are other kernels" if on_device else "GEMMs run other code"
    # The side whose GEMMs cast their inputs is the one autocast ran in.
    side, mine = ("experimental", e) if e["gemm_casts_per_step"] >= b["gemm_casts_per_step"] else ("baseline", b)
    if mine["gemm_casts_per_step"] > 0:
        change = (f"GEMM inputs {bd} → {ed} (`torch.autocast`, dtype casts a step {_fmt(casts[0])} → "
                  f"{_fmt(casts[1])})")
        how = (f"The {side} run's matrix multiplies cast their inputs ({_fmt(mine['gemm_casts_per_step'])} "
               f"`aten::_to_copy` a step inside GEMM-like operators), as autocast does: its {other}, and the casts "
               "cost time of their own")
    else:
        change = f"GEMM inputs {bd} → {ed} (no autocast casts)"
        how = f"No casts inside the GEMMs: the tensors themselves hold the other dtype (`.to(dtype)`, `.half()`), so the {other}"
    matched = "; kernel rows match by name only where the same kernel ran" if on_device else ""
    text = (f"{change}. {how}{matched}. The GEMMs' dtypes by "
            f"{'device time' if on_device else 'calls'}: {_split(b)} (baseline), {_split(e)} (experimental).")
    return _item("precision", "Precision", bd, ed, NOTE, text)


def precision_change(item: dict) -> str:
    """The change a `precision` item names, `GEMM inputs fp32 → bf16 (...)`: its text's first sentence."""
    return item["text"].split(". ", 1)[0]


def _split(precision: dict) -> str:
    """`bf16 100 %`, or `bf16 92 %, fp32 8 %`: the GEMMs' dtypes by the run's weight."""
    weight = "device_us_per_step" if precision["by"] == "device_time" else "calls_per_step"
    total = sum(r[weight] for r in precision["dtypes"]) or 1.0
    return ", ".join(f"{r['dtype']} {100.0 * r[weight] / total:.0f} %" for r in precision["dtypes"][:3])


def _load(b: dict, e: dict) -> dict | None:
    bl, el = b.get("others_cpu_cores"), e.get("others_cpu_cores")
    if bl is None or el is None:
        return None
    cores = max(b.get("cpu_count") or 0, e.get("cpu_count") or 0)
    gap = abs(el - bl)
    if gap < LOAD_CORES or (cores and 100.0 * gap / cores < LOAD_SHARE_PCT):
        return None
    busier = "experimental" if el > bl else "baseline"
    of = f" of {cores}" if cores else ""
    return _item("host_load", "Other processes' CPU", f"{bl:.1f} cores", f"{el:.1f} cores", CAVEAT,
                 f"Other processes kept {max(bl, el):.1f}{of} cores busy while the {busier} run was recorded, against "
                 f"{min(bl, el):.1f}: host-time deltas may be the machine's load, not the change. Record both on a "
                 "quiet machine, or several recordings of each (`--repeat 3`).")


def _unknown_counts(units: dict) -> list[dict]:
    """A run whose samples per step are unknown while the other's are known:
    the comparison stays per step, and says how to make it per sample."""
    b, e = units["baseline"]["samples_per_step"], units["experimental"]["samples_per_step"]
    if (b is None) == (e is None):
        return []
    missing = "baseline" if b is None else "experimental"
    return [_item("work_per_step", "Samples per step", _fmt(b), _fmt(e), NOTE,
                  f"The {missing} run's samples per step are unknown (no pipeline statistics), so the runs are compared "
                  f"per step; if its batch differs, give it (`--{missing}-samples N`) to compare per sample.")]


def _on(options: dict) -> str:
    on = [o for o in _OPTION_WORDS if options.get(o)]
    return ", ".join(on) if on else "none"


def _fmt(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"
    return str(value)


def _item(key: str, label: str, baseline, experimental, effect: str, text: str) -> dict:
    return {"key": key, "label": label, "baseline": baseline, "experimental": experimental, "effect": effect,
            "text": text}
