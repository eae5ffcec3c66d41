"""Find the event array inside a trace document and cut it into chunks.

The array is decoded chunk by chunk so that only one chunk's Python objects
exist at a time. Chunk boundaries are guessed with a cheap pattern (`}` `,`
`{`); a guess that falls inside a nested object makes that chunk fail to
decode, and the caller then merges it with the next one, so a wrong guess
costs time, never correctness.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec
import numpy as np

from .schema import EventsOnly, Header

BOUNDARY = re.compile(rb"\}\s*,\s*\{")
TRACE_EVENTS_KEY = b'"traceEvents"'
_WS = b" \t\r\n"
# Built at import: a type first decoded by two load threads at once crashes msgspec (struct_types.py).
_HEADER = msgspec.json.Decoder(Header)
_EVENTS_ONLY = msgspec.json.Decoder(EventsOnly)
_COMMA = ord(",")


@dataclass
class EventRegion:
    start: int  # offset of the first byte after `[`
    end: int  # offset of the closing `]`, or of the end of data when missing
    closed: bool  # the array's `]` was found
    metadata: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _addr(buf) -> int:
    return np.frombuffer(buf, dtype=np.uint8).ctypes.data if len(buf) else 0


def _header_metadata(header: Header) -> dict:
    return {
        k: getattr(header, k)
        for k in header.__struct_fields__
        if k != "traceEvents" and getattr(header, k) is not None
    }


_BOM = b"\xef\xbb\xbf"


def locate_events(data: bytes) -> EventRegion:
    """Where the event array lies in `data`, plus the top-level metadata."""
    if data.startswith(_BOM):
        # Offsets stay valid: the BOM becomes whitespace-equivalent padding.
        data = b"   " + data[3:]
    stripped = data.lstrip(_WS)
    first = stripped[:1]
    if first == b"[":
        start = data.index(b"[") + 1
        body = data.rstrip(_WS)
        closed = body.endswith(b"]")
        # Chrome accepts an array without its closing bracket.
        return EventRegion(start, len(body) - 1 if closed else len(body), closed)
    if first != b"{":
        raise ValueError("not a trace: the file is neither a JSON object nor a JSON array")
    warnings: list[str] = []
    try:
        header = _HEADER.decode(data)
    except msgspec.ValidationError as exc:
        # A metadata value out of range (1e400, say): keep the events.
        try:
            header = _EVENTS_ONLY.decode(data)
        except msgspec.ValidationError:
            raise ValueError(f"not a trace: {exc}") from None
        except msgspec.DecodeError:
            return _locate_in_broken_object(data)
        warnings.append(f"the top-level metadata could not be read ({exc}); it was ignored")
    except msgspec.DecodeError:
        return _locate_in_broken_object(data)
    if not len(header.traceEvents):
        raise ValueError('not a trace: the object has no "traceEvents" array')
    raw = memoryview(header.traceEvents)
    length = len(raw)
    # Raw is a zero-copy view into `data`; its address gives the offset
    # without copying hundreds of MB.
    offset = _addr(raw) - _addr(data)
    if not length or raw[0] != ord("["):
        raise ValueError('not a trace: "traceEvents" is not an array')
    del raw
    metadata = _header_metadata(header)
    return EventRegion(offset + 1, offset + length - 1, True, metadata, warnings)


_ARRAY_OPENS = re.compile(rb"\s*:\s*\[")
_TAIL_BYTES = 1 << 20  # metadata after the events (trace name, time unit, logs)
_TAIL_CANDIDATES = 64
_KEY_CANDIDATES = 8


def guess_events(data: bytes) -> EventRegion | None:
    """Where the event array lies, read from the document's two ends only;
    None when that does not settle it (then `locate_events`, which reads it
    all: a fifth of a big trace's decode time).

    The head up to the first `"traceEvents": [` must be a valid object
    without the array, the tail after the last `]` that follows an event's
    `}` a valid rest of one. A wrong guess is still possible (a list of
    objects among the trailing keys): the events then fail to decode at the
    end, and the caller, seeing any decode warning, locates again with
    `locate_events`."""
    first, body_end = _skip_ws(data, 0), _skip_ws_back(data, len(data))
    if first >= body_end or data[first] != ord("{") or data[body_end - 1] != ord("}"):
        return None
    key, head_meta = -1, None
    for _ in range(_KEY_CANDIDATES):  # the name may also occur in a value before the key
        key = data.find(TRACE_EVENTS_KEY, key + 1)
        opens = _ARRAY_OPENS.match(data, key + len(TRACE_EVENTS_KEY)) if key > 0 else None
        if key < 0 or opens is not None:
            break
    if key < 0 or opens is None:
        return None
    head = data[:key].rstrip(_WS)
    head_meta = _object_metadata(head[:-1] if head.endswith(b",") else head, b"}")
    if head_meta is None:
        return None
    start = opens.end()
    low = max(start, body_end - _TAIL_BYTES)
    close = body_end - 1
    for _ in range(_TAIL_CANDIDATES):
        close = data.rfind(b"]", low, close)
        if close < 0:
            return None
        if data[_skip_ws_back(data, close) - 1] == ord("}"):  # an event's end, not a string's or number's
            tail = data[_skip_ws(data, close + 1) : body_end]
            tail_meta = _object_metadata(b"{", tail[1:]) if tail.startswith(b",") else ({} if tail == b"}" else None)
            if tail_meta is not None:
                return EventRegion(start, close, True, {**head_meta, **tail_meta})
    return None


def _skip_ws(data: bytes, i: int) -> int:
    while i < len(data) and data[i] in _WS:
        i += 1
    return i


def _skip_ws_back(data: bytes, end: int) -> int:
    """The offset after the last non-whitespace byte before `end`."""
    while end > 0 and data[end - 1] in _WS:
        end -= 1
    return end


def _object_metadata(open_part: bytes, close_part: bytes) -> dict | None:
    """The metadata of the object `open_part + close_part`; None when it is
    not one, or holds an event array of its own."""
    try:
        header = _HEADER.decode(open_part + close_part)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return None
    return None if len(header.traceEvents) else _header_metadata(header)


def _locate_in_broken_object(data: bytes) -> EventRegion:
    """A document that does not parse: most often cut while being written."""
    key = data.find(TRACE_EVENTS_KEY)
    if key < 0:
        raise ValueError('not a trace: the JSON is malformed and has no "traceEvents" array')
    open_bracket = data.find(b"[", key)
    if open_bracket < 0:
        raise ValueError('not a trace: "traceEvents" has no array')
    metadata: dict = {}
    warnings = ["the trace file is not valid JSON (cut short or still being written)"]
    # Keys written before the events still give device and rank metadata.
    try:
        head = data[:key].rstrip(_WS)
        head = head[:-1] if head.endswith(b",") else head
        header = _HEADER.decode(head + b"}")
        metadata = _header_metadata(header)
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    return EventRegion(open_bracket + 1, len(data.rstrip(_WS)), False, metadata, warnings)


def chunk_bounds(data: bytes, start: int, end: int, chunk_bytes: int, next_start=None) -> list[int]:
    """Offsets where a chunk starts (at an event's `{`), then `end`.
    `next_start(pos, end)`: the first event start after `pos`, None when
    there is none before `end` (default: a search of `data`; `range_read`
    passes one that reads a window first)."""
    next_start = next_start or (lambda pos, stop: _next_start(data, pos, stop))
    first = start
    while first < end and data[first] in _WS:
        first += 1
    bounds = [first]
    pos = first + chunk_bytes
    while pos < end:
        at = next_start(pos, end)
        if at is None:
            break
        bounds.append(at)
        pos = at + chunk_bytes
    bounds.append(end)
    return bounds


def _next_start(data: bytes, pos: int, end: int) -> int | None:
    m = BOUNDARY.search(data, pos, end)
    return None if m is None else m.end() - 1


def chunk_text(data: bytes, a: int, b: int) -> bytes:
    """The events in [a, b) as a JSON array."""
    end = b
    while end > a and data[end - 1] in _WS:
        end -= 1
    if end > a and data[end - 1] == _COMMA:
        end -= 1
    # One copy of the chunk (a slice, strip and concatenation made three).
    return b"".join((b"[", memoryview(data)[a:end], b"]"))


def last_boundaries(data: bytes, a: int, b: int, limit: int = 64) -> list[int]:
    """Event starts inside [a, b), the last ones first (salvage candidates)."""
    starts = [m.end() - 1 for m in BOUNDARY.finditer(data, a, b)]
    return starts[::-1][:limit]
