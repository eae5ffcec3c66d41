"""A big local trace read piece by piece, so that forked decoders each read
only their own byte range.

Reading a 1 GB file into one buffer before forking took 0.56 s on one core,
a tenth of the load, and left the whole text in the parent. Here the parent
allocates the buffer without touching it (its pages cost nothing until
written), reads the document's two ends (where the event array is guessed,
`locate.guess_events`) and a small window at each chunk boundary; after the
fork each process decodes its own range.

The decoders themselves do not copy their ranges: each maps the file
(`RangeFile.mapped`) and scans the page cache's own pages, so a 1 GB trace
is never read into process memory, and each drops the pages it has decoded
(`decode._page_dropper`): a decoding child of the 1 GB cpu_stack trace
peaked at 300 MB RSS, its parent at 747 MB, against 806 MB and 1,272 MB
reading their halves (same run, 2026-12-07). Pages first touched in this VM cost a
host fault each (benchmarks/README.md, `bench_scale.py`): reading a 203 MB
file into fresh memory took 0.25-1.1 s, mapping it 0.02 s. A file cut while
it is mapped faults (SIGBUS) at the first access past its new end, which
kills the process: so only forked decoders map it (`fork_map(...,
in_caller=False)`), and a child that dies is a fallback to the whole read.

Every step that does not go as expected (a gzip file, an array that the two
ends do not settle, a boundary not found in its window, a short read from a
file cut while it was read) gives `None`, and the caller reads the whole
file as before: this path is only ever a faster way to the same table.
"""
from __future__ import annotations

import mmap
import os

from .locate import BOUNDARY, TRACE_EVENTS_KEY, EventRegion, chunk_bounds, guess_events
from .reader import GZIP_MAGIC

# Enough of each end for `guess_events`: the metadata before the events and
# its look-back of 1 MiB after them.
EDGE_BYTES = 2 << 20
# Where a chunk boundary is looked for; it is extended this far at most
# before giving up (one event larger than that is no trace to split).
WINDOW_BYTES = 64 << 10
MAX_WINDOW_BYTES = 4 << 20


class RangeFile:
    """A local file's bytes in a buffer of its size, filled on demand."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        try:
            self.size = os.fstat(self.fd).st_size
            # Private anonymous memory: pages untouched until a range is read
            # into them, in the process that decodes it. (A bytearray zeroes
            # all of them first: a forked reader then copies every page it
            # fills, which made this path slower than one whole read.)
            self.data = mmap.mmap(-1, max(self.size, 1), flags=mmap.MAP_PRIVATE)
        except BaseException:
            os.close(self.fd)
            raise
        self._view = memoryview(self.data)[: self.size]

    def close(self) -> None:
        self._view.release()
        os.close(self.fd)
        try:
            self.data.close()
        except BufferError:
            pass  # a view of it still alive somewhere: freed with its last reference

    def read(self, start: int, end: int) -> bool:
        """Bytes [start, end) into place; False on a short read (the file
        shrank since it was opened)."""
        start, end = max(0, start), min(self.size, end)
        while start < end:
            got = os.preadv(self.fd, [self._view[start:end]], start)
            if got <= 0:
                return False
            start += got
        return True

    def mapped(self, start: int, end: int) -> mmap.mmap | None:
        """The whole file mapped read-only (page-cache pages, no copy), the
        kernel asked to read [start, end) ahead; None when the file is now
        shorter than `end` (cut since it was opened) or cannot be mapped.
        For a forked decoder only: an access past the end of a file cut
        later kills the process with SIGBUS."""
        try:
            if os.fstat(self.fd).st_size < end or self.size == 0:
                return None
            m = mmap.mmap(self.fd, self.size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            return None
        page = mmap.PAGESIZE
        at = max(0, start) // page * page
        try:
            m.madvise(mmap.MADV_WILLNEED, at, min(self.size, end) - at)
        except (OSError, ValueError, AttributeError):
            pass  # only advice
        return m

    def is_gzip(self) -> bool:
        return self.read(0, 2) and bytes(self.data[:2]) == GZIP_MAGIC

    def region(self) -> EventRegion | None:
        """The event array, guessed from the two ends of the document."""
        head_end = min(self.size, EDGE_BYTES)
        if not self.read(0, head_end) or not self.read(self.size - EDGE_BYTES, self.size):
            return None
        # The unread middle is zeros; the key must lie in the read head (a
        # search past it would scan the zeros and find nothing anyway).
        if self.data.find(TRACE_EVENTS_KEY, 0, head_end) < 0:
            return None
        region = guess_events(self.data)
        if region is None or region.start > head_end or region.end < self.size - EDGE_BYTES:
            return None
        return region

    def chunk_bounds(self, start: int, end: int, chunk_bytes: int) -> list[int] | None:
        """`locate.chunk_bounds` over the unread middle: a window is read at
        each place a chunk may end. None when a window holds no boundary."""
        try:
            return chunk_bounds(self.data, start, end, chunk_bytes, next_start=self._next_start)
        except _Unreadable:
            return None

    def _next_start(self, pos: int, end: int) -> int | None:
        window = WINDOW_BYTES
        while True:
            stop = min(end, pos + window)
            if not self.read(pos, stop):
                raise _Unreadable
            m = BOUNDARY.search(self.data, pos, stop)
            if m is not None:
                return m.end() - 1
            if stop == end:
                return None
            if window >= MAX_WINDOW_BYTES:
                raise _Unreadable
            window *= 4


class _Unreadable(Exception):
    """A short read, or a window without an event boundary: read the whole file instead."""
