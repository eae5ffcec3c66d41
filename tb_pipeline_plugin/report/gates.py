"""`--fail-if METRIC>PCT`: parsing a gate and judging it on the overview's row.

Every gate ends with one outcome, and every format prints it, passed ones
too (a gate that is silent when it passes cannot be told from one that never
ran):

* `failed`: the delta % is beyond the limit (`>` gates a rise, `<` a fall);
* `not_significant`: it is, but `--require-significance` asked for a delta
  outside the noise and this one is not (per-step metrics only: memory and
  device metrics have no per-step samples, and their gates stand);
* `cannot_evaluate`: the metric is null on a side (the trace does not record
  it): the gate can never pass silently;
* `passed`: otherwise.

Exit status: 2 when a gate cannot be evaluated (the verdict is incomplete),
else 1 when one failed, else 0.
"""
from __future__ import annotations

import argparse
import math
import numbers
import re
from dataclasses import dataclass

from ..diff.overview import OVERVIEW_METRICS
from ..diff.significance.method import SIGNIFICANT, TOO_FEW_STEPS

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE = 0, 1, 2
EXIT_CANNOT_EVALUATE = EXIT_USAGE
PASSED, FAILED, NOT_SIGNIFICANT, CANNOT_EVALUATE = "passed", "failed", "not_significant", "cannot_evaluate"
# How the text and markdown formats name each outcome (the words CI logs grep for).
OUTCOME_WORDS = {PASSED: "PASSED", FAILED: "REGRESSION", NOT_SIGNIFICANT: "NOT SIGNIFICANT",
                 CANNOT_EVALUATE: "CANNOT EVALUATE"}
NUMERIC_METRICS = [m for m, _, unit in OVERVIEW_METRICS if unit is not None]
_GATE = re.compile(r"^\s*([\w.]+)\s*([<>])\s*([-+]?\d+(?:\.\d+)?)\s*%?\s*$")


@dataclass(frozen=True)
class Gate:
    metric: str
    op: str  # ">" fails on a rise above pct, "<" on a fall below pct
    pct: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.limit}"

    @property
    def limit(self) -> str:
        """The limit as written: 5, -10, 2.5, 1000000 (never 1e+06)."""
        return f"{self.pct:f}".rstrip("0").rstrip(".")

    def unavailable(self, row: dict) -> str | None:
        """Why the gate cannot be evaluated (its metric is null on a side), else None."""
        missing = [side for side in ("baseline", "experimental") if not _is_value(row.get(side))]
        if not missing and row.get("delta") is not None:
            return None
        sides = " and ".join(missing) or "either side"
        return f"--fail-if {self}: {self.metric} is null for the {sides} (the trace does not record it)"

    def check(self, row: dict) -> str | None:
        """A message when the gate trips, else None (also when it cannot be
        evaluated: ask `unavailable` first). With a baseline of 0 the change
        is unbounded: any rise trips `>`, any fall trips `<`."""
        tripped, shown = self._change(row)
        return f"{self.metric} changed {shown}, limit {self.op}{self.limit}%" if tripped else None

    def _change(self, row: dict) -> tuple[bool, str]:
        """(whether the change is beyond the limit, the change in words)."""
        delta, pct = row["delta"], row["delta_pct"]
        if delta is None:
            return False, "nothing"
        change = pct if pct is not None else math.copysign(math.inf, delta) if delta else 0.0
        tripped = change > self.pct if self.op == ">" else change < self.pct
        shown = f"{change:+.2f}%" if math.isfinite(change) else f"{delta:+g} from a baseline of 0"
        return tripped, shown


def parse_gate(text: str) -> Gate:
    m = _GATE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected METRIC>PCT or METRIC<PCT (e.g. avg_step_time_us>5), got {text!r}")
    metric, op, pct = m.group(1), m.group(2), float(m.group(3))
    if metric not in NUMERIC_METRICS:
        raise argparse.ArgumentTypeError(f"unknown metric {metric!r}; one of: {', '.join(NUMERIC_METRICS)}")
    return Gate(metric, op, pct)


def judge(gates: list[Gate], rows: dict[str, dict], require_significance: bool) -> list[dict]:
    """Each gate's outcome on the overview's rows (`diff/overview` rows by
    metric), in the order given: the fields of report/model.py:GateResult."""
    out = []
    for gate in gates:
        row = rows[gate.metric]
        sig = row.get("significance")
        why_not = gate.unavailable(row)
        if why_not is not None:
            outcome, message = CANNOT_EVALUATE, why_not
        else:
            tripped, shown = gate._change(row)
            message = f"{gate.metric} changed {shown}, limit {gate.op}{gate.limit}%"
            if not tripped:
                outcome = PASSED
            # Metrics without per-step samples (memory, device) have no noise model: their gates stand.
            elif require_significance and isinstance(sig, dict) and sig["verdict"] != SIGNIFICANT:
                outcome, message = NOT_SIGNIFICANT, f"{message}, but {not_significant(sig)}"
            else:
                outcome = FAILED
        out.append({"name": gate.metric, "label": row["label"], "unit": row.get("unit"), "baseline": row.get("baseline"),
                    "experimental": row.get("experimental"), "delta": row.get("delta"),
                    "delta_pct": row.get("delta_pct"), "significance": sig, "gate": str(gate), "op": gate.op,
                    "limit_pct": gate.pct, "outcome": outcome, "message": message})
    return out


def exit_status(results: list[dict]) -> int:
    outcomes = {r["outcome"] for r in results}
    if CANNOT_EVALUATE in outcomes:
        return EXIT_CANNOT_EVALUATE
    return EXIT_REGRESSION if FAILED in outcomes else EXIT_OK


def not_significant(sig: dict) -> str:
    """Why a tripped gate's delta is not acted on, from its Significance."""
    if sig["verdict"] == TOO_FEW_STEPS:
        return (f"{sig['label']} ({sig['baseline_steps']} vs {sig['experimental_steps']} steps; "
                f"{sig['min_steps']} per run needed)")
    return (f"{sig['label']}: the delta is inside the runs' noise "
            f"({confidence_pct(sig['confidence'])} interval {sig['ci_low']:g} to {sig['ci_high']:g})")


def confidence_pct(confidence: float) -> str:
    """The level as a percentage, to two decimals at most (0.99375 -> "99.38 %")."""
    return f"{round(100 * confidence, 2):g} %"


def _is_value(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)
