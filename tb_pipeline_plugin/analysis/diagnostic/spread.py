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

A group of recordings' level carries its spread measured on its own
recordings (analysis/diagnostic/group.py): a standard error and R - 1
degrees of freedom. A ratio then takes Student t's quantile on the
Welch-Satterthwaite degrees of freedom of its terms (a single recording's
modelled spread counts with infinite ones), not the normal quantile.

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

from ..t_quantile import t_quantile

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

# qps_log_sd: the spread the level's interval is drawn with (at Z); qps_log_se, qps_df: the standard error of
# its log QPS and its degrees of freedom, what a comparison joins (ratio_interval): a single recording's modelled
# spread has infinite degrees of freedom, a group's level measured on R recordings R - 1 (analysis/diagnostic/group.py).
SPREAD_COLUMNS = ["stage", "executor", "concurrency", "qps", "qps_log_sd", "qps_log_se", "qps_df", "qps_low",
                  "qps_high", "cpu_pct_low", "cpu_pct_high"]


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


def _finite(value) -> bool:
    return value is not None and bool(np.isfinite(value))


def level_spread(sweep: pd.DataFrame) -> pd.DataFrame:
    """SPREAD_COLUMNS, one row per row of `analysis.diagnostic.sweep_frame`:
    the log-QPS spread and the QPS and CPU % intervals (NaN: no interval)."""
    rows = []
    for p in sweep.to_dict("records"):
        # A group's pooled level carries its spread, measured on its own recordings (analysis/diagnostic/group.py).
        measured = p.get("qps_log_sd")
        if _finite(measured) and _finite(p.get("qps_log_se")) and _finite(p.get("qps_df")):
            sd, se, df = float(measured), float(p["qps_log_se"]), float(p["qps_df"])
        elif _finite(measured):  # a level that carries only its spread: at the normal quantile
            sd = se = float(measured)
            df = math.inf
        else:
            sd = se = qps_log_sd(p["slice_qps"], float(p["qps"]))
            df = math.inf
        cpu_low, cpu_high = _cpu_bounds(p["slice_cpu_pct"], float(p["cpu_pct"]))
        rows.append({"stage": p["stage"], "executor": p["executor"], "concurrency": p["concurrency"],
                     "qps": float(p["qps"]), "qps_log_sd": sd, "qps_log_se": se, "qps_df": df,
                     "qps_low": float(p["qps"]) * math.exp(-Z * sd), "qps_high": float(p["qps"]) * math.exp(Z * sd),
                     "cpu_pct_low": cpu_low, "cpu_pct_high": cpu_high})
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)


def ratio_interval(ratio: float, log_sds, dfs=None) -> tuple[float, float]:
    """The interval of a ratio of QPS figures whose log standard errors are
    `log_sds` (independent: added in quadrature); NaN bounds where any is
    NaN. `dfs`: each one's degrees of freedom (None, or inf: a modelled
    spread, the normal quantile); where some are finite, the quantile is
    Student t's on the Welch-Satterthwaite degrees of freedom of the sum
    (difference_half_width), so that two groups of R recordings compare on
    about 2R - 2 of them."""
    log_sds = list(log_sds)
    half = difference_half_width(log_sds, list(dfs) if dfs is not None else [None] * len(log_sds))
    if math.isnan(half) or not ratio > 0:
        return math.nan, math.nan
    return ratio * math.exp(-half), ratio * math.exp(half)


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


def gil_share_df(record: dict | None) -> float:
    """The degrees of freedom of gil_share_sd: a group's stage sampled by R
    recordings, R - 1; a single recording's modelled spread, infinite."""
    df = (record or {}).get("share_df")
    return float(df) if df is not None else math.inf


def difference_half_width(sds, dfs) -> float:
    """Half the interval of a difference (or a log ratio) whose terms have
    standard errors `sds` with `dfs` degrees of freedom: ratio_interval's
    rule (Student t on Welch-Satterthwaite's degrees of freedom, or the
    normal quantile where every term is modelled)."""
    sds = [float(s) for s in sds]
    sd = math.sqrt(sum(s * s for s in sds))
    if math.isnan(sd):
        return math.nan
    finite = [(s, float(d)) for s, d in zip(sds, dfs) if d is not None and math.isfinite(d) and s > 0]
    if not finite or sd == 0:
        return Z * sd
    df = sd ** 4 / sum(s ** 4 / max(d, 1.0) for s, d in finite)
    return float(t_quantile(0.5 + CONFIDENCE / 2, df)) * sd
