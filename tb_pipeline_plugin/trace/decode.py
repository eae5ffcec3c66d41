"""Trace bytes -> EventTable, chunk by chunk, tolerant of damaged input."""
from __future__ import annotations

import contextlib
import gc
import mmap
import re

import msgspec

from .assemble import JoinedColumns, issue_warnings, join_parts, remap_ids, table_of
from .columns import ChunkColumns
from .fork_map import fork_available, fork_map
from .intern import Interners
from .locate import BOUNDARY, EventRegion, chunk_bounds, chunk_text, guess_events, last_boundaries, locate_events
from .range_read import RangeFile
from .reader import TraceTooLarge, check_limits, read_trace_bytes
from .repair import repair
from . import scan, shared_join
from .scan import ChunkScanner
from .schema import Event, LenientEvent
from .coerce import coerce_events
from .object_fields import chunk_columns
from .table import EventTable

# Small enough that one chunk's event objects stay in the CPU's cache while
# their columns are read out (benchmarks/README.md, "Figures behind constants").
CHUNK_BYTES = 2 << 20
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")
_NON_FINITE_WARNING = "non-standard NaN / Infinity values were read as missing"
_NON_FINITE = re.compile(rb"([:\[,]\s*)-?(?:NaN|Infinity)(?=\s*[,\]}])")
_EVENTS = msgspec.json.Decoder(list[Event])
_LENIENT = msgspec.json.Decoder(list[LenientEvent])


def load_trace(path: str, opener=None, processes: int = 1, into: shared_join.JoinFile | None = None) -> EventTable:
    """`opener(path)` -> binary file object; local files when None.
    `processes` > 1: see `decode_trace`; a big local file is then read by
    the processes that decode it, each its own range (`range_read.py`),
    and `into` (a cache entry's columns file) gets their joined columns.
    With `into` (a single-threaded caller: a parse worker), a big local file
    is decoded so even by one process, a forked child: its text is read from
    the page cache instead of copied into memory, and the table written once."""
    if opener is None and (processes > 1 or into is not None):
        table = _load_by_ranges(path, processes, into=into)
        if table is not None:
            return table
    data, warnings = read_trace_bytes(path, opener)
    table = decode_trace(data, processes=processes)
    table.warnings[:0] = warnings
    return table


def _load_by_ranges(path: str, processes: int, chunk_bytes: int = CHUNK_BYTES,
                    into: shared_join.JoinFile | None = None) -> EventTable | None:
    """The table of a big, intact, local plain-JSON trace, decoded in
    `processes` forked processes that each read their own byte range; None
    for anything else (the caller reads the whole file): the same table
    either way (tests/trace/test_decode_parallel.py)."""
    if not fork_available():
        return None
    try:
        f = RangeFile(path)
    except (OSError, MemoryError):
        return None  # the whole-file read says what is wrong
    try:
        try:
            check_limits(f.size)
        except TraceTooLarge:
            return None  # refused by the whole-file read, with its message
        if f.size < 2 * SPLIT_MIN_BYTES or f.is_gzip():
            return None
        region = f.region()
        bounds = None if region is None else f.chunk_bounds(region.start, region.end, chunk_bytes)
        if bounds is None:
            return None
        ranges = _split_points(bounds, processes)
        if len(ranges) < 2 and into is None:
            return None
        with _gc_paused():
            # Each range decoded from the file's own pages (`RangeFile.mapped`),
            # in a child: a file cut meanwhile kills only that child.
            decoded = _decode_split(f.data, ranges, read=lambda k: f.mapped(ranges[k][0], ranges[k][-1]),
                                    in_caller=False, into=into)
            if decoded is None:
                return None
            joined, interners = decoded
            if not _events_decoded(joined):
                return None  # the whole-file read says why
            return table_of(joined, interners.strings, interners.keys, region.metadata)
    finally:
        f.close()


@contextlib.contextmanager
def _gc_paused():
    # Decoding creates millions of short-lived containers; each cyclic-GC
    # pass would walk them all again (about a third of the decode time).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def decode_trace(data: bytes, chunk_bytes: int = CHUNK_BYTES, processes: int = 1, guess: bool = True) -> EventTable:
    """`processes` > 1 decodes a big trace's byte ranges in that many forked
    processes at once (`fork_map`: a single-threaded caller only); the
    table is the one a single process decodes. `guess=False` always reads
    the whole document's structure first (the reference the fast path must
    equal: tests and the fuzz compare them)."""
    with _gc_paused():
        return _decode(data, chunk_bytes, processes, guess)


def _decode(data: bytes, chunk_bytes: int, processes: int, guess: bool) -> EventTable:
    region = guess_events(data) if guess else None
    if region is not None:
        table = _decode_events(data, region, [], chunk_bytes, processes, guessed=True)
        if table is not None:
            return table
    # Not the usual layout, or damaged: read the whole document's structure.
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
    return _decode_events(data, region, warnings, chunk_bytes, processes, guessed=False)


def _decode_events(data: bytes, region: EventRegion, warnings: list[str], chunk_bytes: int, processes: int,
                   guessed: bool) -> EventTable | None:
    """The table of the events in `region`. `guessed` (`guess_events`):
    None at the first sign that the guess may be wrong (any decode warning),
    for the caller to locate the events properly."""
    bounds = chunk_bounds(data, region.start, region.end, chunk_bytes)
    ranges = _split_points(bounds, processes) if processes > 1 and region.closed and fork_available() else [bounds]
    decoded_in_parallel = _decode_split(data, ranges) if len(ranges) > 1 else None
    if decoded_in_parallel is None:
        if guessed and len(ranges) > 1:
            return None  # the split decode met something irregular: no second try on a guess
        interners = Interners()
        parts, chunk_warnings, _ = _decode_chunks(data, bounds, region.closed, interners, ends_file=True)
        if guessed and chunk_warnings:
            return None
        warnings.extend(chunk_warnings)
        joined = join_parts(parts)
    else:
        joined, interners = decoded_in_parallel
    if not _events_decoded(joined) and data[region.start : region.end].strip():
        if guessed:
            return None
        reasons = issue_warnings(joined.issues) + warnings[-1:]
        raise ValueError("no trace event could be decoded" + (": " + "; ".join(reasons) if reasons else ""))
    table = table_of(joined, interners.strings, interners.keys, region.metadata)
    table.warnings.extend(warnings)
    return table


def _events_decoded(joined: JoinedColumns) -> int:
    return len(joined.main["ts_us"]) + len(joined.flow["ts_us"]) + len(joined.memory["ts_us"])


def _decode_chunks(data: bytes, bounds: list[int], closed: bool, interners: Interners,
                   ends_file: bool, done=None) -> tuple[list[ChunkColumns], list[str], bool]:
    """The chunks between `bounds` -> (columns, warnings, complete). Not
    complete: the range's last chunk ends inside an event (`ends_file`
    False: the rest of it lies in the next range). Each chunk is read by the
    compiled scanner when there is one, and by msgspec when it refuses
    (`scan.py`): the same columns either way. `done(b)`: called once the
    bytes before b are decoded."""
    bounds = list(bounds)
    parts: list[ChunkColumns] = []
    warnings: list[str] = []
    scanner = ChunkScanner(interners) if scan.AVAILABLE else None
    i = 0
    while i < len(bounds) - 1:
        a, b = bounds[i], bounds[i + 1]
        is_last = i == len(bounds) - 2
        part = scanner.columns(data, a, b) if scanner is not None else None
        if part is not None:
            parts.append(part)
            i += 1
            if done is not None:
                done(b)
            continue
        events, consumed_to, warning = _decode_range(data, a, b, is_last=is_last and ends_file, closed=closed)
        if warning:
            warnings.append(warning)
        if events is None:
            if is_last:
                return parts, warnings, False
            # A chunk boundary fell inside a nested object: merge with the next.
            del bounds[i + 1]
            continue
        parts.append(chunk_columns(events, interners))
        del events
        if consumed_to < b:
            # Corrupt bytes were skipped: resume at the next event start.
            bounds[i + 1] = consumed_to
        i += 1
    return parts, warnings, True


# A forked process pays for itself above this many bytes of events.
SPLIT_MIN_BYTES = 16 << 20


def _split_points(bounds: list[int], processes: int) -> list[list[int]]:
    """`bounds` cut into up to `processes` ranges of about equal bytes, at chunk bounds."""
    total = bounds[-1] - bounds[0]
    k = min(processes, len(bounds) - 1, max(1, total // SPLIT_MIN_BYTES))
    cuts = [0]
    for j in range(1, k):
        target = bounds[0] + total * j // k
        at = min(range(cuts[-1] + 1, len(bounds) - 1), key=lambda i: abs(bounds[i] - target), default=None)
        if at is not None and at > cuts[-1]:
            cuts.append(at)
    cuts.append(len(bounds) - 1)
    return [bounds[a : b + 1] for a, b in zip(cuts, cuts[1:])]


def _decode_split(data: bytes, ranges: list[list[int]], read=None, in_caller: bool = True,
                  into: shared_join.JoinFile | None = None):
    """(joined columns, interners) of `ranges` decoded at once, one process
    each, or None when anything was irregular (damage, a range ending inside
    an event, a failed child): the caller then decodes it in one process,
    where the repairs and warnings are exact. `read(k)`: the bytes to decode
    range k from (at the same offsets as `data`), in the process that
    decodes it, None when it could not. `in_caller`: as `fork_map`'s, where
    the children's columns come back pickled (no `memfd`); else every range
    is decoded in a child that writes its rows into the joined columns
    (`shared_join.py`), into `into` when given."""

    def decode_range(k: int):
        source = data if read is None else read(k)
        if source is None:
            return None
        interners = Interners()
        done = _page_dropper(source, ranges[k][0]) if source is not data and isinstance(source, mmap.mmap) else None
        parts, warnings, complete = _decode_chunks(source, ranges[k], True, interners, ends_file=k == len(ranges) - 1,
                                                   done=done)
        if warnings or not complete:
            return None
        return parts, interners.strings.values, interners.keys.values

    if shared_join.available():
        return shared_join.decode_and_join(decode_range, len(ranges), into)
    first, *others = fork_map(decode_range, range(len(ranges)), in_caller=in_caller)
    if first is None or any(o is None for o in others):
        return None
    parts, strings, keys = first
    interners = Interners.adopt(strings, keys)
    for more_parts, more_strings, more_keys in others:
        string_ids = interners.strings.codes(more_strings)
        key_ids = interners.keys.codes(more_keys)
        for part in more_parts:
            remap_ids(part, string_ids, key_ids)
        parts.extend(more_parts)
    return join_parts(parts), interners


def _page_dropper(mapped: mmap.mmap, start: int):
    """`done` for a range decoded from a mapped file: the pages already
    decoded leave this process (MADV_DONTNEED; the page cache keeps them),
    so the file's text never adds up in its memory: a 1 GB trace's decoders
    hold a chunk of it each, not the whole range."""
    page = mmap.PAGESIZE
    released = [start // page * page]

    def done(upto: int) -> None:
        end = upto // page * page
        if end > released[0]:
            try:
                mapped.madvise(mmap.MADV_DONTNEED, released[0], end - released[0])
            except (OSError, ValueError):
                return  # only memory: the pages stay mapped
            released[0] = end

    return done


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
