"""Is a delta more than noise? One method and one policy for every per-step
quantity: the overview's per-step rows, the explanation's contributors and
launch health, the module pieces and table rows (diff/significance/marks.py),
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
  land within `NoisePolicy.between_run_pct` % of its configuration's, one
  standard deviation. The default, `BETWEEN_RUN_PCT`, is a dedicated
  machine's; on a shared or throttling machine set
  `TB_PIPELINE_BETWEEN_RUN_PCT` (read once where a comparison is made:
  `NoisePolicy.from_environment`) or `tb-pipeline diff --between-run-pct`
  to what two recordings of one configuration there differ by. The policy
  is a value every judging function takes (`noise=`), never read from the
  environment below the comparison's edge.

Groups of recordings (`tb-pipeline record --repeat N`): the spread between
recordings is measured, not assumed. With two or more recordings on each
side the interval is a Student t interval of the difference of the
recordings' means, their variance pooled over both sides (each recording
one sample, as benchstat and pyperf compare benchmark processes): it holds every source of noise at once (the
steps' spread, level drift, the machine between recordings) without a
model of any. With several recordings on one side only, that side's
measured spread of recording means replaces the assumed between-run
spread of the step bootstrap above.

No verdict rests on one step: before judging, the step furthest from its
recording's median is pulled in to the next furthest on its side (in
recordings of at least `MIN_ROBUST_STEPS` steps), so one preempted or
stalled step cannot make a delta significant, while an effect that recurs
across steps (a thread holding the GIL every few steps) still counts. The
reported delta stays the plain difference of means, and the interval always
holds it: a delta that one step turned the other way is within noise, never
significant in the opposite direction of the number shown beside it.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ...analysis.t_quantile import t_quantile

SIGNIFICANT, WITHIN_NOISE, TOO_FEW_STEPS = "significant", "within_noise", "too_few_steps"
# Given by diff/significance/withheld.py (why: diff/comparability.py), never by a test here: the runs differ in a
# way that makes the delta meaningless as it stands.
NOT_COMPARABLE = "not_comparable"
VERDICTS = (SIGNIFICANT, WITHIN_NOISE, TOO_FEW_STEPS, NOT_COMPARABLE)
# The verdicts in words, everywhere they are shown (each Significance's
# `label`; the CLI and the UI read that, never their own words).
VERDICT_WORDS = {SIGNIFICANT: "significant", WITHIN_NOISE: "within noise", TOO_FEW_STEPS: "too few steps to judge",
                 NOT_COMPARABLE: "not comparable"}
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
RESAMPLE_CHUNK_DRAWS = 2_000_000
# Past this many steps a side, the bootstrap's distribution of a mean is the
# normal one the central limit theorem gives (skew shrinks as 1/sqrt(n)), and
# resampling costs resamples x steps: a run's pipeline statistics may hold
# 100,000 steps. The interval is then taken from the normal directly.
BOOTSTRAP_MAX_STEPS = 1000
BETWEEN_RUN_PCT = 2.0
BETWEEN_RUN_ENV = "TB_PIPELINE_BETWEEN_RUN_PCT"
MIN_ROBUST_STEPS = 5
MIN_RECORDINGS = 2
# Where a band's between-recording noise came from.
MEASURED, ASSUMED = "measured", "assumed"

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NoisePolicy:
    """The noise a comparison assumes where it cannot measure it: the
    between-run spread in % (module docstring). A value: the server and the
    notebook API read it from the environment once per comparison
    (`from_environment`), the CLI from its flag."""

    between_run_pct: float = BETWEEN_RUN_PCT

    @classmethod
    def from_environment(cls, environ=None) -> "NoisePolicy":
        """`BETWEEN_RUN_ENV` when it holds a number from 0 to 100, else the
        default (a bad value is logged once and ignored, never an error page)."""
        raw = (os.environ if environ is None else environ).get(BETWEEN_RUN_ENV)
        if raw is None or raw.strip() == "":
            return cls()
        pct = percentage(raw)
        if pct is None:
            if raw not in _warned:
                _warned.add(raw)
                _log.warning("%s=%r is not a percentage from 0 to 100; using %s", BETWEEN_RUN_ENV, raw,
                             BETWEEN_RUN_PCT)
            return cls()
        return cls(pct)


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
    (k quantities x n steps): shape (k, resamples); past
    `BOOTSTRAP_MAX_STEPS` steps, draws from the normal they tend to."""
    samples = np.atleast_2d(np.asarray(samples, dtype=np.float64))
    n = samples.shape[1]
    rng = np.random.default_rng(seed)
    if n > BOOTSTRAP_MAX_STEPS:
        # The normal limit of the same resampled means: each mean's variance is
        # the steps' own (ddof 0) over n; one draw per resample and quantity
        # (intervals are read per quantity, so their correlation is not needed).
        sd = samples.std(axis=1) / np.sqrt(n)
        return samples.mean(axis=1)[:, None] + sd[:, None] * rng.standard_normal((samples.shape[0], resamples))
    out = np.empty((samples.shape[0], resamples))
    # Resamples in chunks of about RESAMPLE_CHUNK_DRAWS draws: a run's recorded
    # pipeline statistics may hold 100,000 steps, and resamples x steps at once
    # would not fit. The generator draws the same stream in chunks as at once.
    rows = max(1, RESAMPLE_CHUNK_DRAWS // max(n, 1))
    for lo in range(0, resamples, rows):
        hi = min(resamples, lo + rows)
        # The same step indices for every quantity of a run: the quantities of
        # one step are resampled together, as the step they came from.
        idx = rng.integers(0, n, size=(hi - lo, n))
        # Times each step is drawn per resample: means are one matrix product.
        flat = (idx + (np.arange(hi - lo) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=(hi - lo) * n).reshape(hi - lo, n).astype(np.float64)
        out[:, lo:hi] = samples @ counts.T / n
    return out


def compare(baseline: np.ndarray, experimental: np.ndarray, reference: np.ndarray | None = None,
            family: int | None = None, min_effect_pct: float = MIN_EFFECT_PCT,
            recordings: tuple[np.ndarray | None, np.ndarray | None] = (None, None), *,
            noise: NoisePolicy) -> list[dict]:
    """Significance of each row's delta. `baseline` (k x nb) and
    `experimental` (k x ne) are per-step samples of k quantities;
    `reference` (k), the magnitude a delta is judged against (default: each
    quantity's baseline mean); `family`, how many quantities are judged
    together (at least k: more when these are one page of a larger family,
    or rows with different step counts compared one call each);
    `min_effect_pct`, the least |delta| that is a finding, in % of the
    reference; `recordings`, each side's recording of every step (column),
    None for one recording; `noise`, the policy for what one pair cannot measure."""
    b = np.atleast_2d(np.asarray(baseline, dtype=np.float64))
    e = np.atleast_2d(np.asarray(experimental, dtype=np.float64))
    k, nb, ne = b.shape[0], b.shape[1], e.shape[1]
    b_rec, e_rec = (_labels(r, n) for r, n in zip(recordings, (nb, ne)))
    counts = (len(np.unique(b_rec)), len(np.unique(e_rec)))
    delta = (e.mean(axis=1) if ne else np.zeros(k)) - (b.mean(axis=1) if nb else np.zeros(k))
    if reference is None:
        reference = np.abs(b.mean(axis=1)) if nb else np.zeros(k)
    reference = np.asarray(reference, dtype=np.float64)
    source = MEASURED if max(counts) >= MIN_RECORDINGS else ASSUMED
    alpha = (1.0 - CONFIDENCE) / max(family or 0, k) / 2.0
    confidence = 1.0 - 2.0 * alpha
    if nb < MIN_STEPS or ne < MIN_STEPS:
        return [_result(TOO_FEW_STEPS, d, None, None, nb, ne, counts, source, confidence) for d in delta]
    bt, et = _without_one_step(b, b_rec), _without_one_step(e, e_rec)
    center = et.mean(axis=1) - bt.mean(axis=1)
    if min(counts) >= MIN_RECORDINGS:
        low, high = _recordings_interval(bt, b_rec, et, e_rec, alpha)
    else:
        diffs = resample_means(et, seed=SEED + 1) - resample_means(bt, seed=SEED)
        low = np.quantile(diffs, alpha, axis=1)
        high = np.quantile(diffs, 1.0 - alpha, axis=1)
        if max(counts) >= MIN_RECORDINGS:  # one side's recordings measure the spread for both
            rec, labels = (bt, b_rec) if counts[0] >= MIN_RECORDINGS else (et, e_rec)
            run_sd = _recording_spread(rec, labels)
        else:
            run_sd = noise.between_run_pct / 100.0
        run_var = (run_sd * bt.mean(axis=1)) ** 2 + (run_sd * et.mean(axis=1)) ** 2
        drift = NormalDist().inv_cdf(1.0 - alpha) * np.sqrt(level_variance(bt) + level_variance(et) + run_var)
        low = center - np.hypot(center - low, drift)
        high = center + np.hypot(high - center, drift)
    # The interval is of the delta every surface shows (the plain means'):
    # pulling one step in may narrow it towards the other steps, never leave
    # that delta outside it. A row whose difference is one step's would
    # otherwise be judged significant the other way round.
    low, high = np.minimum(low, delta), np.maximum(high, delta)
    material = np.abs(center) >= min_effect_pct / 100.0 * reference
    out = []
    for i in range(k):
        excludes_zero = low[i] > 0 or high[i] < 0
        verdict = SIGNIFICANT if excludes_zero and material[i] else WITHIN_NOISE
        out.append(_result(verdict, delta[i], low[i], high[i], nb, ne, counts, source, confidence))
    return out


def _labels(recording: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int64) if recording is None else np.asarray(recording)


def _segments(labels: np.ndarray) -> list[np.ndarray]:
    """Column indices of each recording, in first-seen order."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return [np.flatnonzero(inverse == i) for i in np.argsort(first)]


def _without_one_step(samples: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """`samples` with, in each row and recording of at least
    `MIN_ROBUST_STEPS` steps, the step furthest from the median pulled in to
    the next furthest on its side (module docstring)."""
    out = samples.copy()
    for cols in _segments(labels):
        if len(cols) < MIN_ROBUST_STEPS:
            continue
        x = out[:, cols]
        ordered = np.sort(x, axis=1)
        far = np.argmax(np.abs(x - np.median(x, axis=1, keepdims=True)), axis=1)
        rows = np.arange(len(x))
        high = x[rows, far] >= np.median(x, axis=1)
        x[rows, far] = np.where(high, ordered[:, -2], ordered[:, 1])
        out[:, cols] = x
    return out


def _recording_means(samples: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """k x recordings: each row's mean over each recording's steps."""
    return np.stack([samples[:, cols].mean(axis=1) for cols in _segments(labels)], axis=1)


def _recordings_interval(b: np.ndarray, b_rec: np.ndarray, e: np.ndarray, e_rec: np.ndarray,
                         alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Student t interval of mean(experimental recordings) - mean(baseline
    recordings), at 1 - 2 alpha, the recordings' spread pooled over both
    sides: the machine that scatters one side's recordings scatters the
    other's, and pooling doubles the degrees of freedom a handful of
    recordings give."""
    mb, me = _recording_means(b, b_rec), _recording_means(e, e_rec)
    rb, re_ = mb.shape[1], me.shape[1]
    df = rb + re_ - 2
    pooled = ((rb - 1) * mb.var(axis=1, ddof=1) + (re_ - 1) * me.var(axis=1, ddof=1)) / df
    se = np.sqrt(pooled * (1.0 / rb + 1.0 / re_))
    center = me.mean(axis=1) - mb.mean(axis=1)
    half = t_quantile(1.0 - alpha, df) * se
    return center - half, center + half


def _recording_spread(samples: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each row's spread of recording means, relative to their mean (one
    standard deviation): the between-run spread, measured."""
    m = _recording_means(samples, labels)
    mean = np.abs(m.mean(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mean > 0, m.std(axis=1, ddof=1) / np.where(mean > 0, mean, 1.0), 0.0)


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


def compare_one(baseline, experimental, reference: float | None = None,
                recordings: tuple[np.ndarray | None, np.ndarray | None] = (None, None), *,
                noise: NoisePolicy) -> dict:
    ref = None if reference is None else np.array([reference])
    return compare(np.asarray(baseline, np.float64)[None, :], np.asarray(experimental, np.float64)[None, :], ref,
                   recordings=recordings, noise=noise)[0]


def step_time(baseline_us, experimental_us, recordings: tuple = (None, None), *, noise: NoisePolicy) -> dict:
    """The verdict on the step-time delta: one quantity, against the
    baseline's mean step. The one definition the explanation's headline, the
    overview's step-time row and the CLI's gate all show."""
    b = np.asarray(baseline_us, np.float64)
    return compare_one(b, experimental_us, reference=float(b.mean()) if len(b) else 0.0, recordings=recordings,
                       noise=noise)


def ledger_recordings(ledger) -> np.ndarray | None:
    """The recording of each step of a step ledger (a group's pooled ledger
    has a `recording` column), None for one recording."""
    return ledger.steps["recording"].to_numpy() if "recording" in ledger.steps else None


def _result(verdict: str, delta: float, low, high, nb: int, ne: int, recordings: tuple[int, int],
            noise: str, confidence: float) -> dict:
    return {
        "verdict": verdict,
        "label": VERDICT_WORDS[verdict],
        "delta": round(float(delta), 3),
        "ci_low": None if low is None else round(float(low), 3),
        "ci_high": None if high is None else round(float(high), 3),
        "baseline_steps": int(nb),
        "experimental_steps": int(ne),
        "baseline_recordings": int(recordings[0]),
        "experimental_recordings": int(recordings[1]),
        "noise": noise,
        # The interval's level after the family's correction (95 % for one
        # quantity, more for each of a table's rows), and the policy's minimum.
        "confidence": round(confidence, 6),
        "min_steps": MIN_STEPS,
    }


def noise_note(b_recordings: int, e_recordings: int, noise: NoisePolicy) -> str:
    """Where the noise bands of a comparison came from, in words."""
    if max(b_recordings, e_recordings) >= MIN_RECORDINGS:
        return (f"Noise measured across {b_recordings} + {e_recordings} recordings"
                + (" (a test on the recordings' means)" if min(b_recordings, e_recordings) >= MIN_RECORDINGS
                   else " (one side's spread between recordings taken for both)"))
    return (f"Noise assumed: recordings of one configuration land within ±{noise.between_run_pct:g} % of each "
            "other (record groups with `tb-pipeline record --repeat 3` to measure it)")


def half_width(sig: dict) -> float | None:
    """The ± of a delta: half the interval's width (None without one)."""
    if sig["ci_low"] is None:
        return None
    return (sig["ci_high"] - sig["ci_low"]) / 2.0
