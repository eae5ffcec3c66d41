"""Student's t quantile, with scipy imported at the first call.

scipy.stats is most of a second of TensorBoard's start (0.94 s of the
plugin's 1.42 s import), and only groups of recordings and the "what would
decide it" advice need a t quantile; this is the one place that imports it.
"""
from __future__ import annotations


def t_quantile(q, df):
    from scipy import stats

    return stats.t.ppf(q, df)
