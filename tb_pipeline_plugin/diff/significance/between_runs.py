"""How far recordings of one configuration land apart on a machine: the
between-run spread that diff/significance/method.py takes as `NoisePolicy.between_run_pct`,
measured on replicas (`tb-pipeline noise A B [C ...]`).

Model (docs/http_api.md, "Significance"): each run's mean of a quantity is
its configuration's mean times (1 + e), e with standard deviation P. Two
replicas with means m_i, m_j give r = (m_j - m_i) / ((m_i + m_j) / 2),
about e_j - e_i, of variance 2 P^2, plus the sampling noise of the two
means (s^2 / n each), which the bootstrap already covers and is taken out
here. So per quantity, over every pair of replicas:

    P^2 = max(0, mean(r^2 - (s_i^2 / n_i + s_j^2 / n_j) / m^2)) / 2

Quantities: the step time and every part of the step (analysis/ledger.py,
by kind and key) holding at least `MIN_PART_SHARE` of the replicas' mean
step: smaller parts are too few microseconds for a percentage to mean much.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from ...analysis.ledger import StepLedger

MIN_PART_SHARE = 0.05
MIN_REPLICAS = 2
STEP = "step time"


def between_run_spread(ledgers: list[StepLedger]) -> pd.DataFrame:
    """One row per quantity: `quantity`, `kind`, `key`, `mean_us` (over the
    replicas), `spread_pct` (P above, in %), `pairs`; the step time first,
    then the parts by spread, largest first."""
    if len(ledgers) < MIN_REPLICAS:
        raise ValueError(f"the between-run spread needs at least {MIN_REPLICAS} recordings of one configuration")
    if any(len(lg.steps) < 2 for lg in ledgers):
        raise ValueError("every recording needs at least 2 steps (ProfilerStep#N) to measure its own spread")
    samples = [_per_step(lg) for lg in ledgers]
    step_mean = float(np.mean([s.loc[STEP].mean() for s in samples]))
    quantities = samples[0].index
    for s in samples[1:]:
        quantities = quantities.union(s.index)
    rows = []
    for q in quantities:
        per_run = [s.loc[q].to_numpy(np.float64) if q in s.index else np.zeros(s.shape[1]) for s in samples]
        mean_us = float(np.mean([v.mean() for v in per_run]))
        if q != STEP and mean_us < MIN_PART_SHARE * step_mean:
            continue
        kind, key = ("step", "step") if q == STEP else q.split(":", 1)
        rows.append({"quantity": q if q == STEP else _label(kind, key), "kind": kind, "key": key,
                     "mean_us": round(mean_us, 3), "spread_pct": round(100.0 * _spread(per_run), 2),
                     "pairs": len(per_run) * (len(per_run) - 1) // 2})
    out = pd.DataFrame(rows, columns=["quantity", "kind", "key", "mean_us", "spread_pct", "pairs"])
    order = np.lexsort((-out["spread_pct"].to_numpy(), (out["kind"] != "step").to_numpy()))
    return out.iloc[order].reset_index(drop=True)


def _per_step(ledger: StepLedger) -> pd.DataFrame:
    """Quantity x step matrix of µs: the step time, then `kind:key` parts
    (both phases of a module together), 0 where a step has none."""
    steps = ledger.steps["step"].to_numpy()
    parts = ledger.parts.assign(q=ledger.parts["kind"] + ":" + ledger.parts["key"])
    m = parts.pivot_table(index="q", columns="step", values="us", aggfunc="sum", fill_value=0.0)
    m = m.reindex(columns=steps, fill_value=0.0)
    step = pd.DataFrame([ledger.steps["step_us"].to_numpy(np.float64)], index=[STEP], columns=steps)
    return pd.concat([step, m])


def _spread(per_run: list[np.ndarray]) -> float:
    terms = []
    for a, b in combinations(per_run, 2):
        ma, mb = a.mean(), b.mean()
        m = (ma + mb) / 2.0
        if m <= 0:
            continue
        sampling = (a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)) / m**2
        terms.append(((mb - ma) / m) ** 2 - sampling)
    if not terms:
        return 0.0
    return float(np.sqrt(max(0.0, float(np.mean(terms))) / 2.0))


def _label(kind: str, key: str) -> str:
    return key if kind in ("module", "annotation") else kind.replace("_", " ")


def recommended_pct(spread: pd.DataFrame) -> float:
    """The setting that covers every quantity measured: the largest spread,
    rounded up to a whole percent (at least 1)."""
    return float(max(1.0, np.ceil(spread["spread_pct"].max()))) if len(spread) else 1.0
