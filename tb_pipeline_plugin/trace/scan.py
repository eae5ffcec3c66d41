"""Chunk bytes -> ChunkColumns through the compiled scanner (`_scan.c`).

The scanner writes the columns of a chunk's plain events straight from the
bytes (no Python object per event) and hands back the byte spans of the
complex ones (kernels, memory events, flows, metadata), which msgspec
decodes and `columns.chunk_columns` reads as before; the two are merged in
file order. Any chunk the scanner refuses, or whose heads or complex events
do not decode, is the caller's to decode with msgspec alone, so the table is
always the msgspec path's (tests/test_decode_scan.py).

Without a C compiler at install time there is no `_scan` module and
`AVAILABLE` is False: the decode is msgspec's alone, slower. Setting
`TB_PIPELINE_DECODE=msgspec` does the same on purpose (a second opinion).
"""
from __future__ import annotations

import os

import msgspec
import numpy as np

from .columns import ChunkColumns, chunk_columns, MAIN_PHASE
from .heads import category_code, phase_code
from .intern import Interners
from .schema import Event
from .table import NO_ID, Kind, Phase

try:
    from ._scan import Scanner
except ImportError:  # built without a C compiler (setup.py: optional)
    Scanner = None

AVAILABLE = Scanner is not None and os.environ.get("TB_PIPELINE_DECODE", "") != "msgspec"

_HEAD = msgspec.json.Decoder(tuple[str, str, str, int | str, int | str])
_EVENTS = msgspec.json.Decoder(list[Event])
_MAX_ABS_US = 1e18
_NOT_DECODED = -2  # a head whose fields do not fit the schema: its chunks go to msgspec
_NOT_INTERNED = -2  # a raw text not yet given a string id


class ChunkScanner:
    """The scanner of one decode, its local ids mapped onto `interners`'."""

    def __init__(self, interners: Interners) -> None:
        self._scanner = Scanner()
        self._interners = interners
        self._heads: list[tuple | None] = []  # local head id -> decoded head (None: does not fit)
        self._head_ids = np.empty(0, np.int32)  # local -> id in interners.heads, once interned
        self._head_complex = np.empty(0, bool)  # local -> its events need msgspec whatever their args
        self._raws: list[bytes] = []
        self._raw_ids = np.empty(0, np.int32)  # local -> id in interners.strings

    def columns(self, data, a: int, b: int) -> ChunkColumns | None:
        """The columns of the events in data[a:b], or None: decode with msgspec."""
        got = self._scanner.scan(data, a, b)
        if got is None:
            return None
        n, heads, ts, dur, links, dims, stacks, flags, starts, ends, new_heads, new_raws = got
        self._learn_heads(new_heads)
        self._raws.extend(new_raws)
        self._raw_ids = np.concatenate([self._raw_ids, np.full(len(new_raws), _NOT_INTERNED, np.int32)])
        if n == 0:
            return ChunkColumns({}, {}, {}, {})
        local = np.frombuffer(heads, np.int32)
        if any(self._heads[h] is None for h in np.unique(local).tolist()):
            return None
        complex_rows = np.flatnonzero(np.frombuffer(flags, np.uint8).astype(bool) | self._head_complex[local])
        complex_events = _decode_spans(data, np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64),
                                       complex_rows)
        if complex_events is None:
            return None
        head = self._intern_heads(local)
        self._interners.strings.id_of("[memory]")  # where chunk_columns interns it: string ids as the msgspec path's
        heads = self._interners.heads
        phase, kind = heads.phase[head], heads.kind[head]
        ts, dur = np.frombuffer(ts, np.float64), np.frombuffer(dur, np.float64)
        no_ts = ~(np.abs(ts) <= _MAX_ABS_US)
        bad_dur = (phase == Phase.COMPLETE) & ~no_ts & ~((dur >= 0) & (dur <= _MAX_ABS_US))
        usable = ~no_ts & ~bad_dur
        # Shapes, then stacks, of every operator row (complex ones too) in
        # file order: the order chunk_columns interns them in.
        ops = np.flatnonzero(MAIN_PHASE[phase] & (kind == Kind.CPU_OP) & usable)
        shape_id = np.full(n, NO_ID, np.int32)
        stack_id = np.full(n, NO_ID, np.int32)
        shape_id[ops] = self._raw_text_ids(np.frombuffer(dims, np.int32)[ops])
        stack_id[ops] = self._raw_text_ids(np.frombuffer(stacks, np.int32)[ops])
        plain = np.ones(n, bool)
        plain[complex_rows] = False
        rows = np.flatnonzero(plain & usable)
        columns = _main_columns(heads, head[rows], phase[rows], ts[rows], dur[rows],
                                np.frombuffer(links, np.int64).reshape(6, n)[:, rows], shape_id[rows], stack_id[rows])
        part = chunk_columns(complex_events, self._interners, keep_rows=True) if len(complex_rows) else ChunkColumns({}, {}, {}, {})
        _merge_main(part, columns, rows, complex_rows)
        part.issues.update(no_ts=int((no_ts & plain).sum()), bad_dur=int((bad_dur & plain).sum()))
        return part

    def _learn_heads(self, new_heads: list[tuple]) -> None:
        complex_ = []
        for fields in new_heads:
            try:
                head = _HEAD.decode(b"[" + b",".join(fields) + b"]")
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
                head = None
            self._heads.append(head)
            complex_.append(head is None or _needs_msgspec(head))
        self._head_complex = np.concatenate([self._head_complex, np.array(complex_, bool)])
        self._head_ids = np.concatenate([self._head_ids, np.full(len(new_heads), _NOT_DECODED, np.int32)])

    def _intern_heads(self, local: np.ndarray) -> np.ndarray:
        """Ids in interners.heads of these local heads; new ones interned in
        order of first appearance, as the msgspec path interns them."""
        new = np.flatnonzero(self._head_ids[local] == _NOT_DECODED)
        if len(new):
            firsts, at = np.unique(local[new], return_index=True)
            firsts = firsts[np.argsort(at)]
            heads = self._interners.heads
            self._head_ids[firsts] = heads.ids.codes_of((self._heads[h] for h in firsts.tolist()), len(firsts), np.int32)
            heads.add_new(self._interners.strings, self._interners.keys)
        return self._head_ids[local]

    def _raw_text_ids(self, local: np.ndarray) -> np.ndarray:
        """String ids of raw texts (NO_ID where absent), new ones interned in order of first appearance."""
        out = np.full(len(local), NO_ID, np.int32)
        present = local >= 0
        ids = local[present]
        new = np.flatnonzero(self._raw_ids[ids] == _NOT_INTERNED)
        if len(new):
            firsts, at = np.unique(ids[new], return_index=True)
            firsts = firsts[np.argsort(at)]
            raw_text = self._interners.raw_text
            self._raw_ids[firsts] = [raw_text[self._raws[r]] for r in firsts.tolist()]
        out[present] = self._raw_ids[ids]
        return out


def _needs_msgspec(head: tuple) -> bool:
    """Events of this head go to chunk_columns whatever their args: not a
    main-table phase, or kernels and memory events (side tables)."""
    ph, cat, name, _, _ = head
    return (not MAIN_PHASE[phase_code(ph)] or category_code(cat) in (Kind.KERNEL, Kind.MEMORY)
            or name == "[memory]")


def _decode_spans(data, starts: np.ndarray, ends: np.ndarray, rows: np.ndarray) -> list | None:
    if not len(rows):
        return []
    view = memoryview(data)
    text = b"".join((b"[", b",".join([view[s:e] for s, e in zip(starts[rows].tolist(), ends[rows].tolist())]), b"]"))
    try:
        return _EVENTS.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError, OverflowError):
        return None


def _main_columns(heads, head, phase, ts, dur, links, shape_id, stack_id) -> dict[str, np.ndarray]:
    """chunk_columns' main columns of kept plain events (each of a main-table
    phase, none a kernel or memory event)."""
    external = links[0]
    return {
        "phase": phase,
        "kind": heads.kind[head],
        "name_id": heads.name_id[head],
        "pid_key": heads.pid_key[head],
        "thread_key": heads.thread_key[head],
        "ts_us": ts,
        "dur_us": np.where(phase == Phase.COMPLETE, dur, 0.0),
        "external_id": np.where(external == NO_ID, links[1], external),
        "correlation": links[2],
        "python_id": links[3],
        "python_parent_id": links[4],
        "device": links[5],
        "shape_id": shape_id,
        "stack_id": stack_id,
    }


def _merge_main(part: ChunkColumns, plain: dict[str, np.ndarray], plain_rows: np.ndarray,
                complex_rows: np.ndarray) -> None:
    """`part` (the complex events' columns) with the plain events' main rows
    put in, every main row in file order; kernel rows renumbered."""
    if not part.main:
        part.main = plain
        return
    at = np.concatenate([plain_rows, complex_rows[part.event_rows]])
    order = np.argsort(at, kind="stable")
    part.main = {k: np.concatenate([plain[k], v])[order] for k, v in part.main.items()}
    part.event_rows = None
    if "row" in part.kernel:
        new_row = np.empty(len(order), np.int64)
        new_row[order] = np.arange(len(order))
        part.kernel["row"] = new_row[len(plain_rows) + part.kernel["row"]]
