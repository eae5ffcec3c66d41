"""Is a delta more than noise? One method for every per-step quantity.

Method (docs/http_api.md, "Significance"): a percentile bootstrap of the
difference of means. Each run's per-step samples are resampled with
replacement, independently (steps of two runs are not paired), B = 4000
times with a fixed seed, so an answer never changes between requests; the
interval of mean(experimental) - mean(baseline) over the resamples is the
noise band: 95 % for one quantity, and 1 - 0.05 / k for each of a family
of k quantities judged together (the contributors of one explanation, the
rows of one table: Bonferroni), so that a family of unchanged quantities
shows no `significant` mark 95 % of the time, however many rows it has. A delta is `significant` when that interval excludes 0 and
the delta is at least `MIN_EFFECT_PCT` % of the reference (the baseline's
mean of the quantity, or of the step time for a part of a step): a
profile is one machine at one time, and a 0.1 % shift that the bootstrap
can resolve is not a finding. Fewer than `MIN_STEPS` steps on either side
is `too_few_steps`: the spread of one or two samples says nothing.
"""
from __future__ import annotations

import numpy as np

SIGNIFICANT, WITHIN_NOISE, TOO_FEW_STEPS = "significant", "within_noise", "too_few_steps"
VERDICTS = (SIGNIFICANT, WITHIN_NOISE, TOO_FEW_STEPS)
MIN_STEPS = 3
RESAMPLES = 4000
CONFIDENCE = 0.95
MIN_EFFECT_PCT = 1.0
SEED = 12345


def resample_means(samples: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of each row of `samples`
    (k quantities x n steps): shape (k, resamples)."""
    samples = np.atleast_2d(np.asarray(samples, dtype=np.float64))
    n = samples.shape[1]
    rng = np.random.default_rng(seed)
    # The same step indices for every quantity of a run: the quantities of
    # one step are resampled together, as the step they came from.
    idx = rng.integers(0, n, size=(resamples, n))
    # Times each step is drawn per resample: means are one matrix product,
    # k x resamples in memory however many steps and quantities.
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.repeat(np.arange(resamples), n), idx.ravel()), 1.0)
    return samples @ counts.T / n


def compare(baseline: np.ndarray, experimental: np.ndarray, reference: np.ndarray | None = None,
            family: int | None = None) -> list[dict]:
    """Significance of each row's delta. `baseline` (k x nb) and
    `experimental` (k x ne) are per-step samples of k quantities;
    `reference` (k), the magnitude a delta is judged against (default: each
    quantity's baseline mean); `family`, how many quantities are judged
    together (default k; more when rows with different step counts are
    compared one call each)."""
    b = np.atleast_2d(np.asarray(baseline, dtype=np.float64))
    e = np.atleast_2d(np.asarray(experimental, dtype=np.float64))
    k, nb, ne = b.shape[0], b.shape[1], e.shape[1]
    delta = (e.mean(axis=1) if ne else np.zeros(k)) - (b.mean(axis=1) if nb else np.zeros(k))
    if reference is None:
        reference = np.abs(b.mean(axis=1)) if nb else np.zeros(k)
    reference = np.asarray(reference, dtype=np.float64)
    if nb < MIN_STEPS or ne < MIN_STEPS:
        return [_result(TOO_FEW_STEPS, d, None, None, nb, ne) for d in delta]
    # Different seeds per side: the two runs' resamples are independent.
    diffs = resample_means(e, seed=SEED + 1) - resample_means(b, seed=SEED)
    alpha = (1.0 - CONFIDENCE) / (family or k) / 2.0
    low = np.quantile(diffs, alpha, axis=1)
    high = np.quantile(diffs, 1.0 - alpha, axis=1)
    material = np.abs(delta) >= MIN_EFFECT_PCT / 100.0 * reference
    out = []
    for i in range(k):
        excludes_zero = low[i] > 0 or high[i] < 0
        verdict = SIGNIFICANT if excludes_zero and material[i] else WITHIN_NOISE
        out.append(_result(verdict, delta[i], low[i], high[i], nb, ne))
    return out


def compare_one(baseline, experimental, reference: float | None = None) -> dict:
    ref = None if reference is None else np.array([reference])
    return compare(np.asarray(baseline, np.float64)[None, :], np.asarray(experimental, np.float64)[None, :], ref)[0]


def _result(verdict: str, delta: float, low, high, nb: int, ne: int) -> dict:
    return {
        "verdict": verdict,
        "delta": round(float(delta), 3),
        "ci_low": None if low is None else round(float(low), 3),
        "ci_high": None if high is None else round(float(high), 3),
        "baseline_steps": int(nb),
        "experimental_steps": int(ne),
    }


def half_width(sig: dict) -> float | None:
    """The ± of a delta: half the interval's width (None without one)."""
    if sig["ci_low"] is None:
        return None
    return (sig["ci_high"] - sig["ci_low"]) / 2.0
