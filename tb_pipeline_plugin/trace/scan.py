"""Chunk bytes -> ChunkColumns through the compiled scanner (`_scan.c`).

The scanner reads every field the schema declares straight from the bytes
(no Python object per event): the dense ones as arrays, the sparse ones
(memory, kernel launch properties, flows, metadata names) as tuples for
the events that carry them. `columns.columns_of` then applies the same
rules as to msgspec's objects. A chunk the scanner refuses, or whose heads
do not fit the schema, is the caller's to decode with msgspec, so the
table is always the msgspec path's (tests/trace/test_decode_scan.py).

Without a C compiler at install time there is no `_scan` module and
`AVAILABLE` is False: the decode is msgspec's alone, slower. Setting
`TB_PIPELINE_DECODE=msgspec` does the same on purpose (a second opinion).
"""
from __future__ import annotations

import os

import msgspec
import numpy as np

from .columns import ChunkColumns, EventFields, columns_of, kernel_columns
from .intern import Interners
from .table import NO_ID

try:
    from ._scan import Scanner
except ImportError:  # built without a C compiler (setup.py: optional)
    Scanner = None

AVAILABLE = Scanner is not None and os.environ.get("TB_PIPELINE_DECODE", "") != "msgspec"

_HEAD = msgspec.json.Decoder(tuple[str, str, str, int | str, int | str])
_NAME = msgspec.json.Decoder(str | None)
_NOT_INTERNED = -2  # a local head or raw text not yet given an id in the decode's interners
# The schema's defaults of the sparse fields (trace/schema.py).
_NO_MEMORY = (None, None, None, None, None, NO_ID)
_NO_KERNEL = (NO_ID, NO_ID) + (float("nan"),) * 5
_NO_FLOW = (None, False)


class ChunkScanner:
    """The scanner of one decode, its local ids mapped onto `interners`'."""

    def __init__(self, interners: Interners) -> None:
        self._scanner = Scanner()
        self._interners = interners
        self._heads: list[tuple | None] = []  # local head id -> decoded head (None: does not fit the schema)
        self._head_fits = np.empty(0, bool)  # local head id -> it decoded
        self._head_ids = np.empty(0, np.int32)  # local -> id in interners.heads
        self._raws: list[bytes] = []
        self._raw_ids = np.empty(0, np.int32)  # local -> id in interners.strings

    def columns(self, data, a: int, b: int) -> ChunkColumns | None:
        """The columns of the events in data[a:b], or None: decode with msgspec."""
        got = self._scanner.scan(data, a, b)
        if got is None:
            return None
        n, heads, ts, dur, links, dims, types, stacks, memory, kernels, flows, meta, new_heads, new_raws = got
        self._learn(new_heads, new_raws)
        if n == 0:
            return ChunkColumns({}, {}, {}, {})
        local = np.frombuffer(heads, np.int32)
        if not self._head_fits[local].all():
            return None
        fields = ScannedFields(self, np.frombuffer(links, np.int64).reshape(6, n), np.frombuffer(dims, np.int32),
                               np.frombuffer(types, np.int32), np.frombuffer(stacks, np.int32), memory, kernels, flows, meta)
        return columns_of(self._intern_heads(local), np.frombuffer(ts, np.float64), np.frombuffer(dur, np.float64),
                          fields, self._interners)

    def _learn(self, new_heads: list[tuple], new_raws: list[bytes]) -> None:
        decoded = []
        for fields in new_heads:
            try:
                decoded.append(_HEAD.decode(b"[" + b",".join(fields) + b"]"))
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
                decoded.append(None)  # msgspec's lenient path coerces or drops it
        self._heads.extend(decoded)
        self._head_fits = np.concatenate([self._head_fits, np.array([h is not None for h in decoded], bool)])
        self._head_ids = np.concatenate([self._head_ids, np.full(len(new_heads), _NOT_INTERNED, np.int32)])
        self._raws.extend(new_raws)
        self._raw_ids = np.concatenate([self._raw_ids, np.full(len(new_raws), _NOT_INTERNED, np.int32)])

    def _intern_heads(self, local: np.ndarray) -> np.ndarray:
        """Ids in interners.heads of these local heads; new ones interned in
        order of first appearance, as chunk_columns interns them."""
        firsts = _first_appearances(local, self._head_ids)
        if len(firsts):
            heads = self._interners.heads
            self._head_ids[firsts] = heads.ids.codes_of((self._heads[h] for h in firsts.tolist()), len(firsts), np.int32)
            heads.add_new(self._interners.strings, self._interners.keys)
        return self._head_ids[local]

    def raw_text_ids(self, local: np.ndarray) -> np.ndarray:
        """String ids of raw texts (NO_ID where absent), new ones interned in order of first appearance."""
        out = np.full(len(local), NO_ID, np.int32)
        present = local >= 0
        ids = local[present]
        firsts = _first_appearances(ids, self._raw_ids)
        if len(firsts):
            raw_text = self._interners.raw_text
            self._raw_ids[firsts] = [raw_text[self._raws[r]] for r in firsts.tolist()]
        out[present] = self._raw_ids[ids]
        return out


def _first_appearances(local: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The local ids in `local` not yet interned, in order of first appearance."""
    new = local[ids[local] == _NOT_INTERNED]
    if not len(new):
        return new
    firsts, at = np.unique(new, return_index=True)
    return firsts[np.argsort(at)]


class ScannedFields(EventFields):
    """The scanner's fields of one chunk, for `columns_of`."""

    def __init__(self, scanner: ChunkScanner, links: np.ndarray, dims: np.ndarray, types: np.ndarray,
                 stacks: np.ndarray, memory: list, kernels: list, flows: list, meta: list) -> None:
        self._scanner = scanner
        self._links = links
        self._raws = {"input_dims": dims, "input_types": types, "call_stack": stacks}
        # Sparse fields by the event's place in the chunk.
        self._memory = {t[0]: t[1:] for t in memory}
        self._kernels = {t[0]: t[1:] for t in kernels}
        self._flows = {t[0]: t[1:] for t in flows}
        self._meta = {t[0]: t[1] for t in meta}

    def links(self, rows, issues):
        return list(self._links[:, rows])

    def raw_ids(self, rows, field):
        return self._scanner.raw_text_ids(self._raws[field][rows])

    def kernel(self, rows):
        values = [self._kernels.get(i, _NO_KERNEL) for i in rows.tolist()]
        cols = list(zip(*values)) if values else [()] * 7
        grid, block = (np.array(c, dtype=np.int32) for c in cols[:2])
        return kernel_columns(self._scanner.raw_text_ids(grid), self._scanner.raw_text_ids(block), cols[2:])

    def memory(self, rows):
        return [self._memory.get(i, _NO_MEMORY) for i in rows.tolist()]

    def flows(self, rows):
        values = [self._flows.get(i, _NO_FLOW) for i in rows.tolist()]
        return [v[0] for v in values], np.array([v[1] for v in values], dtype=bool)

    def meta_name(self, row):
        raw = self._meta.get(row)
        return None if raw is None else _NAME.decode(raw)
