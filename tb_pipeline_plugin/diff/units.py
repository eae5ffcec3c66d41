"""What a step is worth in each run, and the unit two runs are compared in.

"Make the batch bigger" is the second most common change after "make it
faster": a step of 32 samples against a step of 16 is slower per step and
may well be faster per sample. When the two runs' work per step differs,
every step-level verdict is per unit of work:

* samples, when both runs know theirs and they differ (the Overview shows
  time per token and tokens/s beside, where both runs know their tokens);
* else tokens, when both runs know theirs (a 2-D integer batch: token ids)
  and they differ: the same batch of longer sequences is more work;
* else steps, as before: equal batches read as they always did.

A run's count comes from what the user gave (CLI flags, URL parameters,
`compare()` arguments: a trace-only run has no other source), else from its
pipeline statistics (every judged step's `batch_size` / `tokens`:
analysis/statistics/samples.py). Counts within `SAME_PCT` % are the same.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis.ledger import StepLedger
from ..analysis.statistics.samples import SAMPLES, TOKENS, mean_count

STEP, SAMPLE, TOKEN = "step", "sample", "token"
GIVEN, STATISTICS = "given", "statistics"
# A trailing partial batch moves a run's mean count a little; that is no change of batch.
SAME_PCT = 1.0


@dataclass(frozen=True)
class Given:
    """Counts per step the user gave for one run (None: not given)."""

    samples: float | None = None
    tokens: float | None = None


def run_counts(statistics, given: Given = Given()) -> dict:
    """One run's samples and tokens per step and where each came from
    (`GIVEN`, `STATISTICS`; None where unknown)."""
    out = {}
    for name, column, value in (("samples", SAMPLES, given.samples), ("tokens", TOKENS, given.tokens)):
        if value is not None:
            out[f"{name}_per_step"], out[f"{name}_source"] = float(value), GIVEN
            continue
        mean = mean_count(statistics, column) if statistics is not None else None
        out[f"{name}_per_step"], out[f"{name}_source"] = (round(mean, 3), STATISTICS) if mean else (None, None)
    return out


def _differ(b: float | None, e: float | None) -> bool:
    return b is not None and e is not None and abs(e - b) > SAME_PCT / 100.0 * max(b, e)


def pair_units(b_counts: dict, e_counts: dict) -> dict:
    """The unit the pair is compared in, and each run's counts."""
    bt, et = b_counts["tokens_per_step"], e_counts["tokens_per_step"]
    bs, es = b_counts["samples_per_step"], e_counts["samples_per_step"]
    unit = SAMPLE if _differ(bs, es) else TOKEN if _differ(bt, et) else STEP
    return {"unit": unit, "baseline": b_counts, "experimental": e_counts}


def per_step_of(units: dict, side: str) -> float | None:
    """How many of the pair's unit one step of `side` holds (None for steps)."""
    unit = units["unit"]
    return None if unit == STEP else units[side][f"{unit}s_per_step"]


def divisor(units: dict, side: str) -> str | float | None:
    """What `statistics.significance.step_us` divides `side`'s steps by:
    each step's own count where the statistics recorded it, the given one
    else; None for steps."""
    unit = units["unit"]
    if unit == STEP:
        return None
    if units[side][f"{unit}s_source"] == STATISTICS:
        return SAMPLES if unit == SAMPLE else TOKENS
    return units[side][f"{unit}s_per_step"]


def scaled(ledger: StepLedger, per_step: float | None) -> StepLedger:
    """A step ledger in µs per unit: every step and part divided by the
    run's count per step (the profiled steps' own counts are not in the
    trace; the run's mean count stands for each)."""
    if per_step is None:
        return ledger
    steps = ledger.steps.copy()
    for column in ("step_us", "host_us"):
        if column in steps:
            steps[column] = steps[column] / per_step
    parts = ledger.parts.copy()
    parts[["us", "stall_us"]] = parts[["us", "stall_us"]] / per_step
    return StepLedger(steps=steps, parts=parts)


def table_scales(units: dict, steps: tuple[int, int] | None) -> tuple[float, float] | None:
    """What each run's table times are multiplied by to be µs per unit:
    1 / (profiled steps x count per step) for totals over the profiled
    window (`steps` each run's profiled steps), 1 / count per step for one
    step's piece (`steps` None). None when the pair is compared per step:
    the tables stay each run's totals."""
    if units["unit"] == STEP:
        return None
    out = []
    for i, side in enumerate(("baseline", "experimental")):
        per = per_step_of(units, side)
        n = 1 if steps is None else steps[i]
        if not per or n <= 0:
            return None
        out.append(1.0 / (n * per))
    return out[0], out[1]


def table_note(units: dict, piece: bool = False) -> str | None:
    """What a per-unit table's times are, in words (None per step); `piece`:
    the table is one step's piece, not the profiled window."""
    if units["unit"] == STEP:
        return None
    unit = units["unit"]
    by = f"its {unit}s per step" if piece else f"its profiled steps and its {unit}s per step"
    return (f"Times are µs per {unit} ({counts_text(units)}): each run's time divided by {by}, so that the deltas "
            "compare the same work; calls stay counts.")


def pieces_note(units: dict) -> str | None:
    """Why the module pieces are not per unit when the runs' work per step
    differs (None per step): a piece is one step's, whatever the step holds."""
    if units["unit"] == STEP:
        return None
    unit = units["unit"]
    return (f"These pieces are one step's ({counts_text(units)}), so a piece of the bigger step does more work: the "
            f"Overview, the explanation and the Operators and Kernels tables compare per {unit}.")


def rate_per_s(us_per_unit: float) -> float | None:
    """Units per second from µs per unit."""
    return round(1e6 / us_per_unit, 3) if us_per_unit > 0 else None


def counts_text(units: dict) -> str:
    """`16 vs 32 samples a step`."""
    unit = units["unit"]
    b, e = units["baseline"][f"{unit}s_per_step"], units["experimental"][f"{unit}s_per_step"]
    return f"{_count(b)} vs {_count(e)} {unit}s a step"


def _count(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"
