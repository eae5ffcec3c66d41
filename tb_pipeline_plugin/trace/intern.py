"""String and key interning shared by all chunks of one decode."""
from __future__ import annotations

import numpy as np
import pandas as pd


class Interner:
    """Maps values to dense int32 ids, chunk after chunk.

    `pd.factorize` hashes a chunk's values in C; only the (few) distinct
    values of a chunk go through the Python dict.
    """

    def __init__(self) -> None:
        self.values: list = []
        self._ids: dict = {}

    def id_of(self, value) -> int:
        key = (type(value), value)
        got = self._ids.get(key)
        if got is None:
            got = self._ids[key] = len(self.values)
            self.values.append(value)
        return got

    def codes(self, values) -> np.ndarray:
        if len(values) == 0:
            return np.empty(0, dtype=np.int32)
        local, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
        lut = np.fromiter((self.id_of(v) for v in uniques), dtype=np.int32, count=len(uniques))
        return lut[local]
