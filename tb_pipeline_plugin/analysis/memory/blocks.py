"""Memory blocks of one device: each allocation paired with its free by address.

A `[memory]` event with `Bytes` > 0 allocates a block at `Addr`; the next
event at the same address on the same device, when it frees (`Bytes` < 0),
ends it. Replayed with sorts, not a Python dict: a large trace holds
millions of these events. A free whose address holds no block allocated
in the trace frees memory allocated before the profiled window; a block
never freed lives to the end of the trace.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...trace.link import LinkedTrace
from .series import DeviceSeries

NEVER_FREED = -1

BLOCK_COLUMNS = ("event", "start_pos", "end_pos", "start_us", "end_us", "bytes")


def has_addresses(linked: LinkedTrace, series: DeviceSeries) -> bool:
    """Kineto wrote `Addr` from 2022; without it no free can be paired."""
    return bool(len(series.events)) and bool((linked.table.memory.addr[series.events] >= 0).all())


def device_blocks(linked: LinkedTrace, series: DeviceSeries) -> tuple[pd.DataFrame, int, int]:
    """(blocks, frees of memory from before the window, their bytes).

    blocks: one row per allocation, `BLOCK_COLUMNS`: `event` (index into
    `table.memory`), `start_pos` / `end_pos` (positions in `series`;
    `end_pos` = NEVER_FREED when the trace has no free), `start_us` /
    `end_us` (NaN when never freed), `bytes`. A block is alive at position
    p when start_pos <= p < end_pos (or never freed)."""
    m = linked.table.memory
    ev = series.events
    addr = m.addr[ev]
    delta = m.bytes_delta[ev]
    usable = (addr >= 0) & (delta != 0)
    pos = np.flatnonzero(usable)
    # Per address, in series order (the series is already in time order).
    pos = pos[np.argsort(addr[pos], kind="stable")]
    a, d = addr[pos], delta[pos]
    same_next = np.zeros(len(pos), dtype=bool)
    same_next[:-1] = a[1:] == a[:-1]
    is_alloc = d > 0
    freed_by_next = np.zeros(len(pos), dtype=bool)
    freed_by_next[:-1] = same_next[:-1] & (d[1:] < 0)
    alloc = np.flatnonzero(is_alloc)
    end_pos = np.full(len(alloc), NEVER_FREED, dtype=np.int64)
    has_free = freed_by_next[alloc]
    end_pos[has_free] = pos[alloc[has_free] + 1]
    # A free not preceded at its address by an allocation: the block came from before the window.
    preceded = np.zeros(len(pos), dtype=bool)
    preceded[1:] = same_next[:-1] & is_alloc[:-1]
    orphan = (d < 0) & ~preceded
    start_pos = pos[alloc]
    end_us = np.full(len(alloc), np.nan)
    end_us[has_free] = series.ts_us[end_pos[has_free]]
    order = np.argsort(start_pos, kind="stable")
    blocks = pd.DataFrame({
        "event": ev[start_pos][order],
        "start_pos": start_pos[order],
        "end_pos": end_pos[order],
        "start_us": series.ts_us[start_pos][order],
        "end_us": end_us[order],
        "bytes": d[alloc][order].astype(np.int64),
    })
    return blocks, int(orphan.sum()), int(-d[orphan].sum())


def alive_at(blocks: pd.DataFrame, position: int) -> np.ndarray:
    """Mask of the blocks alive just after the event at `position`."""
    start, end = blocks["start_pos"].to_numpy(), blocks["end_pos"].to_numpy()
    return (start <= position) & ((end > position) | (end == NEVER_FREED))
