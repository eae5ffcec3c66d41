"""Same-length repairs of trace text that the JSON decoder cannot take whole.

Both keep every byte offset unchanged, so warnings can say where the damage
was and the chunking stays valid. They run only after a decode failed (they
copy the buffer), a block at a time so memory stays bounded.
"""
from __future__ import annotations

import codecs

import numpy as np

# Real traces nest 5 or 6 levels (event, args, lists of shapes); msgspec
# gives up near Python's recursion limit, which a deep caller stack lowers.
MAX_DEPTH = 64
_BLOCK = 4 << 20
_SPOTS = 3  # offsets named in a warning


def _where(spots: list[int], count: int, what: str) -> str:
    at = ", ".join(f"{s:,}" for s in spots[:_SPOTS])  # callers may collect more
    more = f" and {count - _SPOTS:,} more" if count > _SPOTS else ""
    return f"{what} at byte {at}{more}"


def replace_invalid_utf8(buf: bytes, base: int = 0) -> tuple[bytes, str | None]:
    """Invalid UTF-8 bytes replaced by `?`; a warning naming where (offsets
    shifted by `base`), or None when there were none."""
    view = memoryview(buf)
    n = len(buf)
    out: bytearray | None = None
    spots: list[int] = []
    count = 0
    pos = 0
    while pos < n:
        end = min(n, pos + _BLOCK)
        try:
            _, used = codecs.utf_8_decode(view[pos:end], "strict", end == n)
        except UnicodeDecodeError as exc:
            bad_from, bad_to = pos + exc.start, pos + exc.end
            if out is None:
                out = bytearray(buf)
            out[bad_from:bad_to] = b"?" * (bad_to - bad_from)
            if len(spots) < _SPOTS:
                spots.append(base + bad_from)
            count += bad_to - bad_from
            pos = bad_to
            continue
        if used == 0:  # an incomplete sequence at the very end
            break
        pos += used
    if out is None:
        return buf, None
    return bytes(out), _where(spots, count, f"{count:,} bytes of invalid UTF-8 were replaced by '?'")


def blank_deep(buf: bytes, max_depth: int = MAX_DEPTH, base: int = 0) -> tuple[bytes, str | None]:
    """Every array or object nested deeper than `max_depth` replaced by
    `null` (padded with spaces), so the events around it still decode.

    Brackets inside strings do not count; a quote preceded by an odd run of
    backslashes is escaped. State carries from block to block."""
    n = len(buf)
    out: bytearray | None = None
    depth = 0
    in_string = 0
    backslashes = 0  # length of the backslash run ending the previous block
    open_at = -1
    spots: list[int] = []
    count = 0
    for lo in range(0, n, _BLOCK):
        a = np.frombuffer(buf, dtype=np.uint8, count=min(_BLOCK, n - lo), offset=lo)
        idx = np.arange(len(a), dtype=np.int64)
        is_bs = a == 0x5C
        last_plain = np.maximum.accumulate(np.where(is_bs, -1, idx))
        quotes = np.flatnonzero(a == 0x22)
        prev = quotes - 1
        before = np.where(prev >= 0, last_plain[np.maximum(prev, 0)], -1)
        run = prev - before + np.where(before < 0, backslashes, 0)
        toggles = np.zeros(len(a), dtype=np.int64)
        toggles[quotes[run % 2 == 0]] = 1
        inside = ((np.cumsum(toggles) + in_string) & 1).astype(bool)
        opener = ((a == 0x7B) | (a == 0x5B)) & ~inside
        closer = ((a == 0x7D) | (a == 0x5D)) & ~inside
        level = depth + np.cumsum(opener.astype(np.int64) - closer.astype(np.int64))
        events = np.flatnonzero((opener & (level == max_depth + 1)) | (closer & (level == max_depth)))
        for pos in (events + lo).tolist():
            if open_at < 0 and buf[pos] in b"{[":
                open_at = pos
            elif open_at >= 0 and buf[pos] in b"}]":
                out = _blank(buf, out, open_at, pos + 1)
                spots.append(base + open_at)
                count += 1
                open_at = -1
        depth = int(level[-1])
        in_string = int(inside[-1])
        tail = len(a) - 1 - int(last_plain[-1])
        backslashes = tail + (backslashes if tail == len(a) else 0)
    if open_at >= 0:  # still open at the end of the text
        out = _blank(buf, out, open_at, n)
        spots.append(base + open_at)
        count += 1
    if out is None:
        return buf, None
    return bytes(out), _where(spots, count, f"{count:,} values nested deeper than {max_depth} levels were read as null")


def _blank(buf: bytes, out: bytearray | None, a: int, b: int) -> bytearray:
    if out is None:
        out = bytearray(buf)
    if b - a >= 4:  # shorter ones are `{}` or `[]`: no deeper than they are
        out[a:b] = b"null" + b" " * (b - a - 4)
    return out


def repair(buf: bytes, base: int = 0) -> tuple[bytes, list[str]]:
    """Both repairs; the warnings of those that changed something."""
    buf, w1 = replace_invalid_utf8(buf, base)
    buf, w2 = blank_deep(buf, MAX_DEPTH, base)
    return buf, [w for w in (w1, w2) if w]
