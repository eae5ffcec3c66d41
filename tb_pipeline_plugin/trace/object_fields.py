"""msgspec's decoded `Event` objects as `columns.EventFields`: the chunks
the compiled scanner refuses, or every chunk without it.

Attribute extraction goes through `map(operator.attrgetter(...))` and
mapping through `map(Memo.__getitem__)` into `np.fromiter`, so the
per-event work stays in C; only the distinct values (names, categories,
shapes) go through Python code.
"""
from __future__ import annotations

from collections import Counter
from operator import attrgetter, itemgetter

import numpy as np

from .columns import KERNEL_FIELDS, LINK_FIELDS, MEMORY_FIELDS, ChunkColumns, EventFields, columns_of
from .columns import empty_chunk, int64s, kernel_columns
from .heads import HEAD_FIELDS
from .intern import Interners
from .schema import EMPTY_ARGS
from .table import NO_ID

_GET_HEAD = attrgetter(*HEAD_FIELDS)
_GET_ARGS = attrgetter("args")
_GET_TS, _GET_DUR = attrgetter("ts"), attrgetter("dur")
_GET_KERNEL = attrgetter(*KERNEL_FIELDS)
_GET_MEMORY = attrgetter(*MEMORY_FIELDS)


def _int_column(objs: list, field: str, issues: Counter) -> np.ndarray:
    """`field` of each of `objs` as int64, as `int64s` converts it."""
    try:
        # The common case (ints only, absent ones already NO_ID) without a
        # list in between; an explicit null or a huge id takes `int64s`.
        return np.fromiter(map(attrgetter(field), objs), dtype=np.int64, count=len(objs))
    except (TypeError, OverflowError):
        return int64s(list(map(attrgetter(field), objs)), issues)


def _take(seq, rows: np.ndarray) -> list:
    """seq[i] for i in rows, in C."""
    if len(rows) == len(seq):
        return list(seq)
    if len(rows) == 0:
        return []
    if len(rows) == 1:
        return [seq[int(rows[0])]]
    return list(itemgetter(*rows.tolist())(seq))


class ObjectFields(EventFields):
    """The fields of msgspec's decoded `Event`s."""

    def __init__(self, events: list, interners: Interners) -> None:
        self._events = events
        self._args = list(map(_GET_ARGS, events))
        self._interners = interners

    def links(self, rows, issues):
        kept = _take(self._args, rows)
        return [_int_column(kept, f, issues) for f in LINK_FIELDS]

    def raw_ids(self, rows, field):
        return _raw_ids(self._interners, _take(self._args, rows), field)

    def kernel(self, rows):
        kargs = _take(self._args, rows)
        cols = list(zip(*map(_GET_KERNEL, kargs))) if kargs else [()] * 7
        return kernel_columns(self._interners.raw_text_ids(cols[0]), self._interners.raw_text_ids(cols[1]), cols[2:])

    def memory(self, rows):
        return list(map(_GET_MEMORY, _take(self._args, rows)))

    def flows(self, rows):
        events = _take(self._events, rows)
        bp = map(attrgetter("bp"), events)
        return list(map(attrgetter("id"), events)), np.fromiter(map("e".__eq__, bp), dtype=bool, count=len(events))

    def meta_name(self, row):
        return self._events[row].args.name


def chunk_columns(events: list, interners: Interners) -> ChunkColumns:
    """The columns of msgspec's decoded events."""
    if not events:
        return empty_chunk()
    n = len(events)
    # The fields that repeat together, as one id per event (one dict hit
    # each), then each column by indexing that id's values (`EventHeads`).
    heads = interners.heads
    head = heads.ids.codes_of(map(_GET_HEAD, events), n, np.int32)
    heads.add_new(interners.strings, interners.keys)
    # Always floats (the schema's type; absent is NaN): straight into arrays.
    ts_all = np.fromiter(map(_GET_TS, events), dtype=np.float64, count=n)
    dur_all = np.fromiter(map(_GET_DUR, events), dtype=np.float64, count=n)
    return columns_of(head, ts_all, dur_all, ObjectFields(events, interners), interners)


def _raw_ids(interners: Interners, op_args: list, field: str) -> np.ndarray:
    """Interned text ids of a `Raw` argument, -1 where absent. A chunk where
    every operator lacks it (`Call stack` outside 2021 traces, shapes
    without `record_shapes`) holds the schema's one default object in each
    place: counted by identity in C, and nothing decoded or looked up."""
    raws = list(map(attrgetter(field), op_args))
    if raws.count(getattr(EMPTY_ARGS, field)) == len(raws):
        return np.full(len(raws), NO_ID, dtype=np.int32)
    return interners.raw_text_ids(raws)
