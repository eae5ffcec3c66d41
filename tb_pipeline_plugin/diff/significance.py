"""Is a delta more than noise? One method and one policy for every per-step
quantity: the overview's per-step rows, the explanation's contributors and
launch health, the module pieces and table rows (diff/significance_marks.py),
the pipeline's data wait.

Method (docs/http_api.md, "Significance"): a percentile bootstrap of the
difference of means. Each run's per-step samples are resampled with
replacement, independently (steps of two runs are not paired), B = 4000
times with a fixed seed, so an answer never changes between requests; the
interval of mean(experimental) - mean(baseline) over the resamples is the
noise band.

Policy, declared here and nowhere else:

* family: 95 % for one quantity, and 1 - 0.05 / k for each of a family of k
  quantities judged together (Bonferroni), so that a family of unchanged
  quantities shows no `significant` mark 95 % of the time, however many rows
  it has. A family is never smaller than the quantities of one `compare`
  call; a page of a larger table or level passes the whole one's size, so a
  row's mark does not depend on the page it is on;
* least effect: a delta is `significant` when the interval excludes 0 and
  the delta is at least `MIN_EFFECT_PCT` % of its reference (the baseline's
  mean of the quantity, or of the step time for a part of a step), and
  `CONTRIBUTOR_MIN_EFFECT_PCT` % of the step for the explanation's
  contributors (the reasons are beside the two constants);
* fewer than `MIN_STEPS` steps on either side is `too_few_steps`: the spread
  of one or two samples says nothing.

Between-run noise: steps are not independent draws, and two recordings of
one configuration do not land on one level. The machine's speed wanders
(clocks, co-tenants, the allocator's state, memory layout), so a run's
steps sit on levels that shift over seconds, and the next recording sits
elsewhere again, further apart than the spread of steps inside each run
(benchmarks/README.md, "Significance: noise between recordings"). The
bootstrap of steps sees only that inner spread, so two more terms join its
interval, in quadrature and at its confidence:

* each run's own level drift, measured: its steps are cut into
  `DRIFT_BLOCKS` contiguous blocks, and the variance of the block means
  beyond what the steps' spread inside the blocks explains is the variance
  of the level, counted when a permutation test says the blocks differ
  (none for runs shorter than `MIN_DRIFT_STEPS`). The next run may sit anywhere the level wandered, so
  this variance is not divided by the number of steps;
* a between-run spread that one pair of runs cannot measure (two steady
  runs on two levels look like a change): each run's mean is taken to
  land within `between_run_pct()` % of its configuration's, one standard
  deviation. The default, `BETWEEN_RUN_PCT`, is a dedicated machine's; on
  a shared or throttling machine set `TB_PIPELINE_BETWEEN_RUN_PCT` (or
  `tb-pipeline diff --between-run-pct`) to what two recordings of one
  configuration there differ by.
"""
from __future__ import annotations

import logging
import os
from statistics import NormalDist

import numpy as np

SIGNIFICANT, WITHIN_NOISE, TOO_FEW_STEPS = "significant", "within_noise", "too_few_steps"
VERDICTS = (SIGNIFICANT, WITHIN_NOISE, TOO_FEW_STEPS)
MIN_STEPS = 3
RESAMPLES = 4000
CONFIDENCE = 0.95
# The least |delta| that is a finding, in % of its reference: a profile is one
# machine at one time, and a shift the bootstrap resolves but smaller than
# this changes nothing a reader would act on.
MIN_EFFECT_PCT = 1.0
# The explanation's contributors, in % of the step: small parts of a step
# swing by more than `MIN_EFFECT_PCT` of it between two recordings of one
# configuration, on steady levels that no noise band of one pair can see
# (benchmarks/README.md, "Significance: noise between recordings"), so a
# contributor is named only from twice that.
CONTRIBUTOR_MIN_EFFECT_PCT = 2.0
SEED = 12345
DRIFT_BLOCKS = 3
MIN_DRIFT_STEPS = 6
DRIFT_PERMUTATIONS = 199
DRIFT_TEST_P = 0.05
DRIFT_CHUNK_FLOATS = 4_000_000
BETWEEN_RUN_PCT = 2.0
BETWEEN_RUN_ENV = "TB_PIPELINE_BETWEEN_RUN_PCT"

_log = logging.getLogger(__name__)


def between_run_pct() -> float:
    """The between-run spread in % (module docstring): `BETWEEN_RUN_ENV` when
    it holds a number from 0 to 100, else the default (a bad value is
    logged once and ignored, never an error page)."""
    raw = os.environ.get(BETWEEN_RUN_ENV)
    if raw is None or raw.strip() == "":
        return BETWEEN_RUN_PCT
    pct = percentage(raw)
    if pct is None:
        if raw not in _warned:
            _warned.add(raw)
            _log.warning("%s=%r is not a percentage from 0 to 100; using %s", BETWEEN_RUN_ENV, raw, BETWEEN_RUN_PCT)
        return BETWEEN_RUN_PCT
    return pct


_warned: set[str] = set()


def percentage(text: str) -> float | None:
    """`text` as a number from 0 to 100, else None."""
    try:
        pct = float(text)
    except ValueError:
        return None
    return pct if 0.0 <= pct <= 100.0 else None


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
            family: int | None = None, min_effect_pct: float = MIN_EFFECT_PCT) -> list[dict]:
    """Significance of each row's delta. `baseline` (k x nb) and
    `experimental` (k x ne) are per-step samples of k quantities;
    `reference` (k), the magnitude a delta is judged against (default: each
    quantity's baseline mean); `family`, how many quantities are judged
    together (at least k: more when these are one page of a larger family,
    or rows with different step counts compared one call each);
    `min_effect_pct`, the least |delta| that is a finding, in % of the
    reference."""
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
    alpha = (1.0 - CONFIDENCE) / max(family or 0, k) / 2.0
    low = np.quantile(diffs, alpha, axis=1)
    high = np.quantile(diffs, 1.0 - alpha, axis=1)
    run_sd = between_run_pct() / 100.0
    run_var = (run_sd * b.mean(axis=1)) ** 2 + (run_sd * e.mean(axis=1)) ** 2
    drift = NormalDist().inv_cdf(1.0 - alpha) * np.sqrt(level_variance(b) + level_variance(e) + run_var)
    low = delta - np.hypot(delta - low, drift)
    high = delta + np.hypot(high - delta, drift)
    material = np.abs(delta) >= min_effect_pct / 100.0 * reference
    out = []
    for i in range(k):
        excludes_zero = low[i] > 0 or high[i] < 0
        verdict = SIGNIFICANT if excludes_zero and material[i] else WITHIN_NOISE
        out.append(_result(verdict, delta[i], low[i], high[i], nb, ne))
    return out


def level_variance(samples: np.ndarray) -> np.ndarray:
    """Variance of each row's level drift over the run (module docstring):
    the variance of `DRIFT_BLOCKS` contiguous block means less the part the
    steps' spread inside the blocks explains. Counted only where the block
    means differ more than the same steps in a random order would (a
    permutation test at `DRIFT_TEST_P`): with three blocks of a few steps
    the estimate alone is mostly noise, and spiky but steady steps (a
    thread holding the GIL in 10 ms stretches) would pass for drift. 0 for
    runs shorter than `MIN_DRIFT_STEPS`."""
    samples = np.atleast_2d(np.asarray(samples, dtype=np.float64))
    k, n = samples.shape
    if n < MIN_DRIFT_STEPS or k == 0:
        return np.zeros(k)
    blocks = np.array_split(np.arange(n), DRIFT_BLOCKS)
    observed = _block_means_var(samples, blocks)
    within = sum(((samples[:, ix] - samples[:, ix].mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
                 for ix in blocks) / (n - DRIFT_BLOCKS)
    estimate = np.maximum(observed - within / (n / DRIFT_BLOCKS), 0.0)
    # Only rows with an estimate to keep are tested: most rows of a big
    # operator table have none, and the test is the costly part.
    tested = np.flatnonzero(estimate > 0)
    rng = np.random.default_rng(SEED + 2)
    orders = np.argsort(rng.random((DRIFT_PERMUTATIONS, n)), axis=1)
    exceed = np.zeros(len(tested))
    # Rows in chunks: k x permutations x n floats at once would not fit for
    # a table of thousands of operators over hundreds of steps.
    rows = max(1, DRIFT_CHUNK_FLOATS // (DRIFT_PERMUTATIONS * n))
    for lo in range(0, len(tested), rows):
        chunk = tested[lo:lo + rows]
        shuffled = samples[chunk][:, orders]  # rows x permutations x n
        exceed[lo:lo + rows] = (_block_means_var(shuffled, blocks) >= observed[chunk, None] - 1e-12).sum(axis=-1)
    out = np.zeros(k)
    p = (1.0 + exceed) / (1.0 + DRIFT_PERMUTATIONS)
    out[tested] = np.where(p <= DRIFT_TEST_P, estimate[tested], 0.0)
    return out


def _block_means_var(samples: np.ndarray, blocks: list[np.ndarray]) -> np.ndarray:
    """Variance (ddof 1) of the block means along the last axis."""
    means = np.stack([samples[..., ix].mean(axis=-1) for ix in blocks], axis=-1)
    return means.var(axis=-1, ddof=1)


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
