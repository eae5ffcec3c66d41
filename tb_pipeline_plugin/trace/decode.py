"""Trace bytes -> EventTable, chunk by chunk, tolerant of damaged input."""
from __future__ import annotations

import gc
import re
from collections import Counter

import msgspec

from .columns import ChunkColumns, build_table, chunk_columns, issue_warnings
from .intern import Interners
from .locate import BOUNDARY, chunk_bounds, chunk_text, last_boundaries, locate_events
from .reader import read_trace_bytes
from .repair import repair
from .schema import Event, LenientEvent
from .coerce import coerce_events
from .table import EventTable

CHUNK_BYTES = 8 << 20
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")
_NON_FINITE_WARNING = "non-standard NaN / Infinity values were read as missing"
_NON_FINITE = re.compile(rb"([:\[,]\s*)-?(?:NaN|Infinity)(?=\s*[,\]}])")
_EVENTS = msgspec.json.Decoder(list[Event])
_LENIENT = msgspec.json.Decoder(list[LenientEvent])


def load_trace(path: str, opener=None) -> EventTable:
    """`opener(path)` -> binary file object; local files when None."""
    data, warnings = read_trace_bytes(path, opener)
    table = decode_trace(data)
    table.warnings[:0] = warnings
    return table


def decode_trace(data: bytes, chunk_bytes: int = CHUNK_BYTES) -> EventTable:
    # Decoding creates millions of short-lived containers; each cyclic-GC
    # pass would walk them all again (about a third of the decode time).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _decode(data, chunk_bytes)
    finally:
        if was_enabled:
            gc.enable()


def _decode(data: bytes, chunk_bytes: int) -> EventTable:
    repairs: list[str] = []
    try:
        region = locate_events(data)
    except (UnicodeDecodeError, RecursionError):
        # Invalid UTF-8 in the top-level keys, or nesting beyond the decoder's
        # recursion limit anywhere (skipping a value recurses too).
        data, repairs = repair(data)
        region = locate_events(data)
    warnings = repairs + list(region.warnings)
    if not region.closed and _NON_FINITE.search(data):
        # Python's json.dump writes NaN / Infinity, which JSON does not allow
        # and which make the whole document look broken.
        fixed = _NON_FINITE.sub(rb"\1null", data)
        fixed_region = locate_events(fixed)
        if fixed_region.closed:
            data, region = fixed, fixed_region
            warnings = repairs + [_NON_FINITE_WARNING]
    interners = Interners()
    parts: list[ChunkColumns] = []
    bounds = chunk_bounds(data, region.start, region.end, chunk_bytes)
    i = 0
    while i < len(bounds) - 1:
        a, b = bounds[i], bounds[i + 1]
        events, consumed_to, warning = _decode_range(data, a, b, is_last=(i == len(bounds) - 2), closed=region.closed)
        if warning:
            warnings.append(warning)
        if events is None:
            # A chunk boundary fell inside a nested object: merge with the next.
            del bounds[i + 1]
            continue
        parts.append(chunk_columns(events, interners))
        del events
        if consumed_to < b:
            # Corrupt bytes were skipped: resume at the next event start.
            bounds[i + 1] = consumed_to
        i += 1
    decoded = sum(len(p.main.get("ts_us", ())) + len(p.flow.get("ts_us", ())) + len(p.memory.get("ts_us", ())) for p in parts)
    if not decoded and data[region.start : region.end].strip():
        issues = Counter()
        for p in parts:
            issues.update(p.issues)
        reasons = issue_warnings(issues) + warnings[-1:]
        raise ValueError("no trace event could be decoded" + (": " + "; ".join(reasons) if reasons else ""))
    table = build_table(parts, interners.strings, interners.keys, region.metadata)
    table.warnings.extend(warnings)
    return table


def _error_byte(exc: Exception) -> int | None:
    m = _ERROR_BYTE.search(str(exc))
    return int(m.group(1)) if m else None


# What a chunk can fail with besides malformed JSON: invalid UTF-8 in a
# string, nesting beyond the recursion limit, a number beyond float range.
_VALUE_ERRORS = (UnicodeDecodeError, RecursionError, OverflowError, msgspec.ValidationError)
_MAX_PIECES_PER_EVENT = 256  # boundary guesses merged before a piece counts as broken


def _decode_text(text: bytes):
    try:
        return _EVENTS.decode(text), None
    except msgspec.ValidationError:
        # Valid JSON with unexpected value types: decode loosely, keep what fits.
        events, dropped = coerce_events(_LENIENT.decode(text))
        warning = f"{dropped} events with values of unexpected types were ignored" if dropped else None
        return events, warning
    except msgspec.DecodeError:
        if not _NON_FINITE.search(text):
            raise
        # Python's json.dump writes NaN / Infinity, which JSON does not allow.
        events, warning = _decode_text(_NON_FINITE.sub(rb"\1null", text))
        return events, warning or _NON_FINITE_WARNING


def _decode_repaired(text: bytes, base: int):
    """`_decode_text`, repairing invalid UTF-8 and deep nesting if it fails
    on them; (events, warnings). `base`: offset of text[0] in the file."""
    try:
        events, warning = _decode_text(text)
        return events, [warning] if warning else []
    except (UnicodeDecodeError, RecursionError):
        fixed, notes = repair(text, base)
        events, warning = _decode_text(fixed)
        return events, notes + ([warning] if warning else [])


def _decode_range(data: bytes, a: int, b: int, is_last: bool, closed: bool):
    """(events or None to merge, offset decoded up to, warning)."""
    text = chunk_text(data, a, b)
    try:
        events, warnings = _decode_repaired(text, a - 1)
        return events, b, "; ".join(warnings) or None
    except _VALUE_ERRORS:
        # Something in one event the repairs do not cover: decode event by
        # event and drop only the ones that fail.
        events, warning = _decode_one_by_one(data, a, b)
        return events, b, warning
    except msgspec.DecodeError as exc:  # malformed JSON, not a type mismatch
        pos = _error_byte(exc)
        at_end = pos is None or pos >= len(text) - 2
        if at_end and not is_last:
            return None, b, None
        # Truncated tail or corrupt bytes: keep the complete events before the damage.
        limit = b if pos is None else a + max(pos - 1, 0)
        for cut in last_boundaries(data, a, limit):
            try:
                events, warnings = _decode_repaired(chunk_text(data, a, cut), a - 1)
            except _VALUE_ERRORS:  # before DecodeError: ValidationError is one
                events, _ = _decode_one_by_one(data, a, cut)
            except msgspec.DecodeError:
                continue
            return events, _resume_after(data, a, pos, b, is_last), _damage_warning(data, a, cut, b, pos, is_last, closed)
        return [], _resume_after(data, a, pos, b, is_last), _damage_warning(data, a, a, b, pos, is_last, closed)


def _decode_one_by_one(data: bytes, a: int, b: int) -> tuple[list, str | None]:
    """The events of [a, b) decoded one at a time; a warning naming the
    bytes where the ones that could not be decoded start."""
    starts = [a] + [m.end() - 1 for m in BOUNDARY.finditer(data, a, b)] + [b]
    events: list = []
    notes: list[str] = []
    lost: list[tuple[int, str]] = []
    i = 0
    while i < len(starts) - 1:
        j = i + 1
        while True:
            text = chunk_text(data, starts[i], starts[j])
            try:
                got, warnings = _decode_repaired(text, starts[i] - 1)
                events.extend(got)
                notes.extend(w for w in warnings if w not in notes)
                break
            except _VALUE_ERRORS as exc:
                if _cut_short(text) and j < len(starts) - 1 and j - i < _MAX_PIECES_PER_EVENT:
                    j += 1  # the bad value came before the end of a piece cut too early
                    continue
                lost.append((starts[i], _reason(exc)))
                break
            except msgspec.DecodeError as exc:
                pos = _error_byte(exc)
                cut_short = pos is None or pos >= len(text) - 2
                # A guessed boundary inside an event: take the next piece too.
                if cut_short and j < len(starts) - 1 and j - i < _MAX_PIECES_PER_EVENT:
                    j += 1
                    continue
                lost.append((starts[i], _reason(exc)))
                j = i + 1  # only this piece is lost
                break
        i = j
    if lost:
        where = ", ".join(f"byte {at:,} ({why})" for at, why in lost[:3])
        more = f" and {len(lost) - 3:,} more" if len(lost) > 3 else ""
        notes.append(f"{len(lost):,} damaged events (or pieces of one) could not be decoded and were skipped: at {where}{more}")
    return events, "; ".join(notes) or None


def _cut_short(text: bytes) -> bool:
    """Whether `text` is JSON that ends too early (checked without building
    values, so a bad value inside does not matter)."""
    try:
        msgspec.json.decode(text, type=msgspec.Raw)
        return False
    except msgspec.DecodeError as exc:
        pos = _error_byte(exc)
        return pos is None or pos >= len(text) - 2
    except RecursionError:
        return False


def _reason(exc: Exception) -> str:
    text = str(exc).split("\n", 1)[0]
    return f"{type(exc).__name__}: {text[:120]}"


def _resume_after(data: bytes, a: int, pos: int | None, b: int, is_last: bool) -> int:
    if is_last or pos is None:
        return b
    m = BOUNDARY.search(data, a + pos, b)
    return m.end() - 1 if m else b


def _damage_warning(data: bytes, a: int, cut: int, b: int, pos: int | None, is_last: bool, closed: bool) -> str:
    if is_last and (pos is None or not closed):
        return f"the trace ends in the middle of an event: the last {b - cut:,} bytes were ignored"
    where = a + (pos or 0)
    return f"corrupt JSON near byte {where:,}: events between bytes {cut:,} and the next event were skipped"
