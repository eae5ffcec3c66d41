"""The explanation in one sentence: the step-time verdict in words, then
the contributors that hold the change (diff/explain/contributors.py ranks
them), with the units clause when the pair is compared per sample or token.
"""
from __future__ import annotations

from ..significance import method as S
from ..units import counts_text
from .words import duration, signed_duration

SENTENCE_CONTRIBUTORS = 3
# A part within noise is still named when it holds this much of a
# significant step delta.
MOST_PCT = 50.0


def sentence(step: dict, contributors: list[dict], clock: str = "host") -> str:
    sig = step["significance"]
    delta, pct = step["delta_us"], step["delta_pct"]
    nb, ne = sig["baseline_steps"], sig["experimental_steps"]
    profiled = step.get("profiled")
    per = f"per {step.get('unit') or 'step'}"
    units = _units_clause(step)
    if sig["verdict"] == S.TOO_FEW_STEPS:
        return (f"Experimental is {_direction(delta, pct)} {per} ({signed_duration(delta)}{units}), but with {nb} baseline and "
                f"{ne} experimental step{'s' if ne != 1 else ''} the noise cannot be measured "
                f"(at least {sig['min_steps']} per run are needed); profile more steps to tell change from noise.")
    if sig["verdict"] == S.NOT_COMPARABLE:
        largest = ", ".join(f"{c['name']} {signed_duration(c['delta_us'])}" for c in contributors[:SENTENCE_CONTRIBUTORS])
        return (f"No verdict: {sig['label'].split(': ', 1)[-1]} Measured, experimental is {_direction(delta, pct)} "
                f"{per} ({signed_duration(delta)}, {nb} vs {ne} steps{units})"
                + (f"; largest parts: {largest}." if largest else "."))
    pm = S.half_width(sig)
    rb, re_ = sig["baseline_recordings"], sig["experimental_recordings"]
    recordings = f" in {rb} + {re_} recordings" if max(rb, re_) > 1 else ""
    parts_from = (f"; parts from {profiled['baseline_steps']} vs {profiled['experimental_steps']} profiled steps"
                  if profiled else "")
    kind = "recorded " if profiled else ""
    band = f"{signed_duration(delta)} ± {duration(pm)}, {nb} vs {ne} {kind}steps{recordings}{parts_from}{units}"
    significant = [c for c in contributors if c["significance"]["verdict"] == S.SIGNIFICANT]
    parts_void = next((c["significance"]["label"].split(": ", 1)[-1] for c in contributors
                       if c["significance"]["verdict"] == S.NOT_COMPARABLE), None)
    if parts_void is not None:
        head = (f"Experimental is {_direction(delta, pct)} {per} ({band})" if sig["verdict"] == S.SIGNIFICANT else
                f"Experimental and baseline take the same time {per} within noise ({band})")
        return f"{head}; its parts get no verdict: {parts_void}"
    if sig["verdict"] != S.SIGNIFICANT:
        head = f"Experimental and baseline take the same time {per} within noise ({band})"
        if not significant:
            return head + "; no contributor changed significantly."
        moved = "; ".join(f"{_subject(c)} {'slower' if c['delta_us'] > 0 else 'faster'} by {duration(abs(c['delta_us']))}"
                          for c in significant[:SENTENCE_CONTRIBUTORS])
        return f"{head}, although {moved}."
    same_way = [c for c in significant if c["delta_us"] * delta > 0]
    parts = [f"Experimental is {_direction(delta, pct)} {per} ({band})"]
    if not same_way and profiled and profiled["significance"]["verdict"] != S.SIGNIFICANT:
        # The whole moved beyond noise on the recorded steps, the parts cannot
        # say so on the few profiled ones: say why, and what settles it.
        parts.append(f"the {profiled['baseline_steps']} vs {profiled['experimental_steps']} profiled steps are too "
                     "few or too noisy to split it into parts: profile more steps (`tb-pipeline record --profile "
                     "wait=5,warmup=2,active=10`) or record groups (`--repeat 3`)")
        return "; ".join(parts) + "."
    if not same_way:
        largest = max((c for c in contributors if c["delta_us"] * delta > 0), key=lambda c: abs(c["delta_us"]),
                      default=None)
        if largest is not None and largest["share_pct"] is not None and abs(largest["share_pct"]) >= MOST_PCT:
            # One part holds most of the delta, but its own noise (a part
            # swings more between recordings than the whole step) is wider:
            # name it, and say it is not established on its own.
            lead = "by device time, " if clock == "device" else ""
            parts.append(f"{lead}{_share(largest['share_pct'])} of it is {_phrase(largest)}, though no part is "
                         f"significantly {'slower' if delta > 0 else 'faster'} on its own")
        else:
            # Every part moved a little, none beyond its own noise: as when
            # the whole machine is slower or busier, not one part of the step.
            parts.append(f"no single part is significantly {'slower' if delta > 0 else 'faster'}: the change is "
                         "spread over the whole step, as when the machine itself is slower or busier")
    shown = same_way[:SENTENCE_CONTRIBUTORS]
    for i, c in enumerate(shown):
        share = _share(c["share_pct"])
        lead = "by device time, " if i == 0 and clock == "device" else ""
        parts.append(f"{lead}{share}{' of it' if i == 0 else ''} is {_phrase(c)}")
    against = [c for c in significant if c["delta_us"] * delta < 0][:1]
    for c in against:
        parts.append(f"{_subject(c)} went the other way ({signed_duration(c['delta_us'])})")
    if not same_way:
        return "; ".join(parts) + "."
    parts.append("the rest is within noise" if len(shown) == len(same_way) else
                 f"{_count(len(same_way) - len(shown), 'smaller significant contributor')} and noise make up the rest")
    return "; ".join(parts) + "."


def _units_clause(step: dict) -> str:
    """`; 16 vs 32 samples a step: 236 → 256 samples/s, +57.3 ms per step`
    when the pair is compared per sample or token, else nothing."""
    units = step.get("units")
    if not units or step.get("unit") in (None, "step"):
        return ""
    unit = step["unit"]
    text = f"; {counts_text(units)}"
    b, e = step.get("baseline_per_s"), step.get("experimental_per_s")
    if b is not None and e is not None:
        text += f": {_rate(b)} → {_rate(e)} {unit}s/s"
    per_step = step.get("per_step")
    if per_step is not None:
        text += f", {signed_duration(per_step['delta_us'])} per step"
    return text


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _share(pct: float | None) -> str:
    if pct is None:
        return "part"
    # A significant contributor moves the step by at least
    # S.CONTRIBUTOR_MIN_EFFECT_PCT %, but may be a sliver of a large delta:
    # never "0 %".
    return "under 1 %" if abs(pct) < 0.5 else f"{abs(pct):.0f} %"


def _direction(delta: float, pct: float | None) -> str:
    word = "slower" if delta > 0 else "faster"
    return f"{abs(pct):.0f} % {word}" if pct is not None else word


def _phrase(c: dict) -> str:
    name = c["name"]
    if c["kind"] == "module":
        if c["backward_delta_us"] and c["forward_delta_us"] and abs(c["backward_delta_us"]) > 0.1 * abs(c["delta_us"]):
            name += " (forward and backward)"
        if c.get("compiled"):
            name += (", compiled in both runs" if c["compiled"] == "both" else
                     f", compiled in the {c['compiled']} run against the other's eager modules")
        elif c["status"] == "experimental_only":
            name += ", which only the experimental run has"
        elif c["status"] == "baseline_only":
            name += ", which only the baseline run has"
        op = c.get("top_operator")
        if op:
            name += f": mostly {op['name']}{_kernel_change(op)}"
    return name


def _kernel_change(op: dict) -> str:
    """` (kernel before → kernel after)`, or ` (kernel)` when both runs ran
    the same one: their display names (analysis/kernel_names.py), as the
    Kernels tab shows them."""
    b, e = op.get("baseline_kernels") or [], op.get("experimental_kernels") or []
    if not b and not e:
        return ""
    bs = op.get("baseline_kernel_short_names") or [short_kernel(k) for k in b]
    es = op.get("experimental_kernel_short_names") or [short_kernel(k) for k in e]
    if b[:1] == e[:1]:
        return f" ({bs[0]})"
    return f" ({bs[0] if b else 'none'} → {es[0] if e else 'none'})"


def short_kernel(name: str, max_chars: int = 32) -> str:
    """A kernel's name as a sentence can hold it: no `void `, no arguments,
    no template parameters, cut with `…`."""
    text = name.removeprefix("void ").split("(", 1)[0]
    if "<" in text and not text.startswith("<"):
        inner = text[text.index("<") + 1:].rstrip(">")
        text = inner if inner.startswith(("cutlass", "sm", "ampere", "nvjet")) else text.split("<", 1)[0]
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _subject(c: dict) -> str:
    """`_phrase` as the subject of a verb: a relative clause ("which only the
    baseline run has") is closed with a comma before the verb."""
    phrase = _phrase(c)
    clause = c["status"] != "matched" or c.get("compiled") or c.get("top_operator")
    return phrase + "," if c["kind"] == "module" and clause else phrase


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"
