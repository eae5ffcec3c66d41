"""`np.unique(values, return_inverse=True)` for columns with few distinct values."""
from __future__ import annotations

import numpy as np
import pandas as pd

# Distinct values below this bound are found with a table of that many entries (a 1 GB trace's thread keys: 30 ms
# against pandas' 0.25 s); above it, by hashing.
_TABLE_MAX = 1 << 22


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, index of each value in them), as np.unique
    gives: by hashing, then sorting only the distinct values. np.unique sorts
    all of them (a tenth of a second over a big trace's thread keys)."""
    codes, uniq = pd.factorize(values, sort=True)
    return np.asarray(uniq, dtype=values.dtype), codes.astype(np.intp, copy=False)


def small_unique_inverse(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """`unique_inverse` of integers in [0, bound): one pass marking the
    values seen in a table, one reading their ranks back."""
    if bound > _TABLE_MAX or (len(values) and not 0 <= values.min() <= values.max() < bound):
        return unique_inverse(values)
    seen = np.zeros(bound, dtype=bool)
    seen[values] = True
    uniq = np.flatnonzero(seen)
    rank = np.zeros(bound, dtype=np.intp)
    rank[uniq] = np.arange(len(uniq))
    return uniq.astype(values.dtype), rank[values]


def pair_unique_inverse(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """`unique_inverse` of `hi << 32 | lo` keys whose halves are ints in
    [0, bound) (a pid's and a tid's interned ids): ordered as the keys."""
    hi, lo = values >> 32, values & 0xFFFFFFFF
    if bound * bound > _TABLE_MAX or (len(values) and not (0 <= hi.min() and hi.max() < bound and lo.max() < bound)):
        return unique_inverse(values)
    combined = hi * bound + lo
    uniq, inverse = small_unique_inverse(combined, bound * bound)
    return ((uniq // bound) << 32 | uniq % bound).astype(values.dtype), inverse
