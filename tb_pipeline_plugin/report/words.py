"""The words and number formats the human formats (text, markdown, html,
junit's messages) share, so a number reads the same in each: the
headline, the significance marks, a value in its unit, a signed delta.

Signs: a delta is experimental − baseline; + is shown with "slower" (or
larger), − (a true minus, as the sentence writes it) with "faster".
Durations and sizes are the explanation's own formats (diff/explain/words.py,
byte_units.py); the verdicts' words are VERDICT_WORDS (diff/significance/method.py).
"""
from __future__ import annotations

import math

from ..byte_units import bytes_text as size
from ..diff.explain.words import duration, signed_duration
from ..diff.significance.method import NOT_COMPARABLE, SIGNIFICANT, TOO_FEW_STEPS, VERDICT_WORDS, WITHIN_NOISE
from .gates import confidence_pct
from .model import Report

MINUS = "−"
# One mark per verdict, as the UI shows them; explained once per report (`legend`).
MARKS = {SIGNIFICANT: "●", WITHIN_NOISE: "≈", TOO_FEW_STEPS: "?", NOT_COMPARABLE: "✕"}
NONE = "—"


def legend() -> str:
    return " · ".join(f"{MARKS[v]} {VERDICT_WORDS[v]}" for v in (SIGNIFICANT, WITHIN_NOISE, TOO_FEW_STEPS,
                                                                 NOT_COMPARABLE))


def mark(sig) -> str:
    """The verdict's mark alone (the legend says what it means); "" for a quantity without a verdict."""
    return "" if sig is None else MARKS[sig.verdict]


def headline(r: Report) -> str:
    """The verdict in one line, first in every format: the direction's word
    with the signed delta, then the significance in the policy's words."""
    step, sig = r.step, r.step.significance
    change = f"{signed_duration(step.delta_us)} per {step.unit} ({signed_pct(step.delta_pct)})"
    kind = "recorded " if step.source == "recorded" else ""
    if sig.verdict == NOT_COMPARABLE:
        return f"Not comparable: {change} measured, no verdict ({sig.label.split(': ', 1)[-1].rstrip('.')})"
    if sig.verdict == SIGNIFICANT:
        word = {"slower": "Slower", "faster": "Faster", "unchanged": "Unchanged"}[step.direction]
        return f"{word}: {change}, {sig.label} ({band(sig, 'us', kind)})"
    if sig.verdict == WITHIN_NOISE:
        return f"No significant change: {change} is {sig.label} ({band(sig, 'us', kind)})"
    return f"Inconclusive: {change}, {sig.label} ({steps(sig, kind)}; {sig.min_steps} per run needed)"


def band(sig, unit: str | None, kind: str = "") -> str:
    """"95 % interval +3.1 ms to +9.8 ms, 5 vs 5 steps" (the interval's level as the verdict states it)."""
    if sig.ci_low is None:
        return steps(sig, kind)
    return (f"{confidence_pct(sig.confidence)} interval {signed(sig.ci_low, unit)} to {signed(sig.ci_high, unit)}, "
            f"{steps(sig, kind)}")


def steps(sig, kind: str = "") -> str:
    """"5 vs 5 steps", "40 vs 40 recorded steps in 3 + 3 recordings"."""
    recordings = (f" in {sig.baseline_recordings} + {sig.experimental_recordings} recordings"
                  if max(sig.baseline_recordings, sig.experimental_recordings) > 1 else "")
    return f"{sig.baseline_steps} vs {sig.experimental_steps} {kind}steps{recordings}"


def value(v, unit: str | None) -> str:
    """A value in its unit: 12.3 ms, 24.4 MB, 4.29 %, 1,234, 80.1 items/s."""
    if v is None:
        return NONE
    if isinstance(v, str):
        return v
    if unit == "us":
        return duration(v)
    if unit == "bytes":
        return (MINUS if v < 0 else "") + size(v)
    if unit == "pct":
        return _number(v) + " %"
    if unit == "items_per_s":
        return _number(v) + " items/s"
    if unit == "per_s":
        return _number(v) + "/s"
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}".replace("-", MINUS)
    return _number(v, 4)


def signed(v, unit: str | None) -> str:
    """A delta with its sign always shown: +12.3 ms, −4.1 MB, +0 µs."""
    if v is None:
        return NONE
    if unit == "us":
        return signed_duration(v)
    text = value(abs(v), unit)
    return ("+" if v >= 0 else MINUS) + text


def signed_pct(pct) -> str:
    if pct is None:
        return NONE
    return ("+" if pct >= 0 else MINUS) + f"{abs(pct):.2f} %"


def share(pct) -> str:
    """A part's share of the step's Δ, never signed (a + reads as slower, a −
    as faster, whichever way the step moved): "55.90 %", and for a part that
    went against the step's change, as the sentence says it, "3.40 % the other way"."""
    if pct is None:
        return NONE
    return f"{abs(pct):.2f} %" + (" the other way" if pct < 0 else "")


SHARE_NOTE = ("Δ %: each part's own change (+ slower, − faster); share of Δ: its part of the step's change, "
              "\"the other way\" when it moved against it.")


def verdict_cell(sig) -> str:
    """"● significant": the mark and the policy's words."""
    return NONE if sig is None else f"{MARKS[sig.verdict]} {sig.label}"


def _number(v: float, digits: int = 3) -> str:
    """`digits` significant digits, whole numbers past them (never 1.23e+04)."""
    if not math.isfinite(v):
        return str(v)
    text = f"{v:,.0f}" if abs(v) >= 10 ** digits else f"{v:.{digits}g}"
    return text.replace("-", MINUS)


def difference_lines(r: Report) -> list[str]:
    """"Samples per step: 16 vs 32 (answers per sample) — …", one per difference."""
    effects = {"per_unit": "answers per unit of work", "no_verdict": "no verdict", "caveat": "caveat", "note": "note"}
    return [f"{d.label}: {d.baseline or NONE} vs {d.experimental or NONE} ({effects[d.effect]}) — {d.text}"
            for d in r.comparability]
