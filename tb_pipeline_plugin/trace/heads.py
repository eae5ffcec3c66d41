"""An event's head (phase, category, name, pid, tid) -> one id per distinct head.

These five fields repeat together: a trace of millions of events has a few
thousand distinct heads. Looking the tuple up once per event (one dict hit,
in C) and taking every field's code from the head's row replaces a list and
a lookup per field and event, which was most of the column building's time
(benchmarks/README.md, "TensorBoard's start to every view").
"""
from __future__ import annotations

import numpy as np

from .memo import Memo
from .table import CATEGORY_KINDS, FLOW_KINDS, FlowKind, Kind, Phase

HEAD_FIELDS = ("ph", "cat", "name", "pid", "tid")

# Phase codes while decoding; B/E are paired into COMPLETE rows in build_table.
PH_BEGIN, PH_END, PH_META, PH_FLOW, PH_DROP, PH_FLOW_START = 10, 11, 12, 13, 14, 15
_PHASES = {
    "X": Phase.COMPLETE, "B": PH_BEGIN, "E": PH_END, "i": Phase.INSTANT, "I": Phase.INSTANT,
    "n": Phase.INSTANT, "C": Phase.COUNTER, "M": PH_META, "s": PH_FLOW_START, "t": PH_FLOW, "f": PH_FLOW,
}
_NO_CATEGORY = 255  # while decoding: a Kind code apart for "no category at all"


def phase_code(ph) -> int:
    return int(_PHASES.get(ph, PH_DROP))


def flow_kind(cat) -> int:
    return int(FLOW_KINDS.get(cat.lower(), FlowKind.OTHER)) if isinstance(cat, str) else int(FlowKind.OTHER)


def category_code(cat) -> int:
    if not cat:
        return _NO_CATEGORY
    return int(CATEGORY_KINDS.get(cat.lower(), Kind.OTHER)) if isinstance(cat, str) else int(Kind.OTHER)


class EventHeads:
    """Distinct heads of one decode and each one's codes, by head id:
    `phase`, `kind` (Kind), `no_cat` (no category at all), `flow_kind`
    (FlowKind: what a flow event of this category links), `name_id`
    (in `strings`), `pid_key`, `thread_key` (pid key << 32 | tid key, in
    `keys`). Names, then pids, then tids are interned by first occurrence
    in each chunk, as a pass per field interns them."""

    def __init__(self) -> None:
        self.ids = Memo(self._new)
        self._new_heads: list[tuple] = []
        self.phase = np.empty(0, np.uint8)
        self.kind = np.empty(0, np.uint8)
        self.no_cat = np.empty(0, bool)
        self.flow_kind = np.empty(0, np.uint8)
        self.name_id = np.empty(0, np.int32)
        self.pid_key = np.empty(0, np.int32)
        self.thread_key = np.empty(0, np.int64)

    def _new(self, head: tuple) -> int:
        self._new_heads.append(head)
        return len(self.ids)  # called before the Memo stores it

    def add_new(self, strings, keys) -> None:
        """Codes of the heads met since the last call (before indexing with their ids)."""
        new, self._new_heads = self._new_heads, []
        if not new:
            return
        ph, cat, name, pid, tid = zip(*new)
        kind = np.fromiter(map(category_code, cat), dtype=np.uint8, count=len(new))
        no_cat = kind == _NO_CATEGORY
        kind[no_cat] = Kind.OTHER
        name_id = strings.codes(name)
        pid_key = keys.codes(pid)
        tid_key = keys.codes(tid)
        self.phase = np.concatenate([self.phase, np.fromiter(map(phase_code, ph), dtype=np.uint8, count=len(new))])
        self.kind = np.concatenate([self.kind, kind])
        self.no_cat = np.concatenate([self.no_cat, no_cat])
        self.flow_kind = np.concatenate([self.flow_kind, np.fromiter(map(flow_kind, cat), dtype=np.uint8, count=len(new))])
        self.name_id = np.concatenate([self.name_id, name_id])
        self.pid_key = np.concatenate([self.pid_key, pid_key])
        self.thread_key = np.concatenate([self.thread_key, pid_key.astype(np.int64) << 32 | tid_key.astype(np.int64)])
