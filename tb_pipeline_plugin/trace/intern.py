"""String and key interning shared by all chunks of one decode."""
from __future__ import annotations

import numpy as np

from .heads import EventHeads
from .memo import Memo


class Interner:
    """Maps values to dense int32 ids, chunk after chunk.

    Values are strings, or ints and strings (pids, tids): as dict keys 1 and
    "1" stay distinct, and no float or bool reaches here (the schema and
    `coerce._key` admit only int and str).
    """

    def __init__(self) -> None:
        self.values: list = []
        self._ids = Memo(self._append)

    def _append(self, value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def id_of(self, value) -> int:
        return self._ids[value]

    def codes(self, values) -> np.ndarray:
        return self._ids.codes(values, np.int32)


class Interners:
    """The interners of one decode."""

    def __init__(self) -> None:
        self.strings = Interner()  # names, categories, shapes, grids
        self.keys = Interner()  # pids, tids
        self.heads = EventHeads()  # (ph, cat, name, pid, tid) -> codes, ids in the two above
        # Bytes of a Raw JSON snippet (`Input Dims`, `grid`, `block`) -> id of
        # its text in `strings`, -1 when absent: decoded once per distinct text.
        self.raw_text = Memo(lambda raw: self.strings.id_of(raw.decode("utf-8", "replace")) if raw else -1)

    @classmethod
    def adopt(cls, strings: list, keys: list) -> "Interners":
        """Interners whose ids are the positions in these lists (distinct
        values, interned by a decode in another process)."""
        out = cls()
        out.strings.codes(strings)
        out.keys.codes(keys)
        return out

    def raw_text_ids(self, raws) -> np.ndarray:
        return self.raw_text.codes_of(map(bytes, raws), len(raws), np.int32)
