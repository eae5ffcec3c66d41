"""Intervals on a diagnostic sweep's figures, from the slices each level's
measured window was cut into (docs/diagnostic_format.md, "Spread and
comparisons").

A level's QPS is the mean of its slices' QPS, so its relative standard
error is their standard deviation over (mean x sqrt(slices)). Two
recordings of one stage land further apart than that: the machine's state
(clock speed, neighbours, caches) moves between levels and between
recordings, seconds apart, which the slices of one window cannot see. So a
between-recordings term, `BETWEEN_RECORDINGS_PCT` of the QPS (one standard
deviation, measured: benchmarks/README.md, "Diagnostic: noise between
recordings"), joins in quadrature. All spreads are of log QPS: ratios of
QPS (speed-ups, experimental / baseline) then add spreads in quadrature.

A level written without slices (results older than slicing) has no
interval: NaN spread, null bounds, and every comparison resting on it says
"no interval".

Two things no interval covers, said apart:

* other processes: on a machine they keep busy, a CPU-bound stage gets
  what they leave, and that share moves from one level to the next and
  from one recording to the next by far more than any slice shows (half
  the QPS, twice the QPS). `others_cpu_pct` says, per stage, how much CPU
  other processes took while the machine was full; the QPS figures of a
  stage they `crowded` are not comparable with another recording's. That
  holds for a stage that sleeps too: one that neighbours starve of CPU
  uses as little of it as one that waits, so the two cannot be told apart;
* the GIL: the share of samples in which some thread held it is a
  proportion of `n` samples (binomial spread), plus a between-recordings
  term, `GIL_BETWEEN_RECORDINGS`; other processes do not move it (a
  thread holds the GIL whether or not it is on a core).
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd

# Every interval of the Diagnostic view and its comparisons: 99 % two-sided. A stage's change verdict
# rests on up to six comparisons (two best-QPS ratios, speed-ups at one to three levels, the GIL share),
# so the chance that noise alone moves any of them past its interval stays under 6 % (Bonferroni), and
# the two verdicts must differ as well.
CONFIDENCE = 0.99
Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
BETWEEN_RECORDINGS_PCT = 6.0
MIN_SLICES = 3  # fewer slices than this give no standard deviation worth the name
GIL_BETWEEN_RECORDINGS = 0.08  # one standard deviation of the GIL-held share between recordings
# Other processes crowd a stage when, at one of its levels, the machine was full (the verdicts' "saturated":
# >= 75 % of all cores busy) and they had half a core or more of it.
CROWDED_OTHERS_PCT = 50.0
FULL_MACHINE = 0.75

SPREAD_COLUMNS = ["stage", "executor", "concurrency", "qps", "qps_log_sd", "qps_low", "qps_high",
                  "cpu_pct_low", "cpu_pct_high"]


def qps_log_sd(slice_qps, qps: float) -> float:
    """Standard deviation of a level's log QPS: its slices' standard error and
    the between-recordings term; NaN without slices (or without calls)."""
    values = np.asarray(slice_qps, dtype=float)
    if len(values) < MIN_SLICES or not qps > 0:
        return math.nan
    rel_se = float(values.std(ddof=1)) / (qps * math.sqrt(len(values)))
    return math.hypot(rel_se, BETWEEN_RECORDINGS_PCT / 100.0)


def _cpu_bounds(slice_cpu_pct, cpu_pct: float) -> tuple[float, float]:
    """The level's CPU % plus or minus Z standard errors of its slices (no
    between-recordings term: no verdict comparison rests on it)."""
    values = np.asarray(slice_cpu_pct, dtype=float)
    if len(values) < MIN_SLICES:
        return math.nan, math.nan
    half = Z * float(values.std(ddof=1)) / math.sqrt(len(values))
    return max(0.0, cpu_pct - half), cpu_pct + half


def level_spread(sweep: pd.DataFrame) -> pd.DataFrame:
    """SPREAD_COLUMNS, one row per row of `analysis.diagnostic.sweep_frame`:
    the log-QPS spread and the QPS and CPU % intervals (NaN: no interval)."""
    rows = []
    for p in sweep.to_dict("records"):
        # A group's pooled level carries its measured spread (analysis/diagnostic/group.py).
        measured = p.get("qps_log_sd")
        sd = float(measured) if measured is not None and np.isfinite(measured) else qps_log_sd(p["slice_qps"],
                                                                                                 float(p["qps"]))
        cpu_low, cpu_high = _cpu_bounds(p["slice_cpu_pct"], float(p["cpu_pct"]))
        rows.append({"stage": p["stage"], "executor": p["executor"], "concurrency": p["concurrency"],
                     "qps": float(p["qps"]), "qps_log_sd": sd,
                     "qps_low": float(p["qps"]) * math.exp(-Z * sd), "qps_high": float(p["qps"]) * math.exp(Z * sd),
                     "cpu_pct_low": cpu_low, "cpu_pct_high": cpu_high})
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)


def ratio_interval(ratio: float, log_sds) -> tuple[float, float]:
    """The interval of a ratio of QPS figures whose log spreads are
    `log_sds` (independent: added in quadrature); NaN bounds where any is NaN."""
    sd = math.sqrt(sum(s * s for s in log_sds))
    if math.isnan(sd) or not ratio > 0:
        return math.nan, math.nan
    return ratio * math.exp(-Z * sd), ratio * math.exp(Z * sd)


def others_cpu_pct(sweep: pd.DataFrame, cores: int) -> dict[str, float]:
    """Per stage: the most CPU % other processes used (the machine's busy
    CPU less this stage's process tree) at any of its levels where the
    machine was full; 0 where it never was (`crowded` reads it)."""
    full = sweep["machine_cpu_pct"].astype(float) >= FULL_MACHINE * 100.0 * cores
    others = (sweep["machine_cpu_pct"].astype(float) - sweep["cpu_pct"].astype(float)).clip(lower=0.0).where(full, 0.0)
    return {str(k): float(v) for k, v in others.groupby(sweep["stage"]).max().items()}


def crowded(sweep: pd.DataFrame, cores: int) -> set[str]:
    """Stages other processes crowded: they took CROWDED_OTHERS_PCT of a full
    machine at one of the stage's levels."""
    return {stage for stage, pct in others_cpu_pct(sweep, cores).items() if pct >= CROWDED_OTHERS_PCT}


def gil_share_sd(record: dict | None) -> tuple[float, float] | None:
    """(held share, its standard deviation) of a `gil` record; None where
    there is none or sampling was skipped. The samples taken are
    total_samples / held_share, or rate x duration when nothing was held."""
    if not record or record.get("skipped"):
        return None
    share = float(record.get("held_share", 0.0))
    if record.get("share_sd") is not None:  # a group's pooled share, its spread measured (analysis/diagnostic/group.py)
        return share, float(record["share_sd"])
    held = int(record.get("total_samples", 0))
    taken = held / share if share > 0 and held else float(record.get("rate_hz", 0)) * float(record.get("duration_s", 0))
    binomial = share * (1.0 - share) / taken if taken >= 1 else 0.25
    return share, math.sqrt(binomial + GIL_BETWEEN_RECORDINGS ** 2)
