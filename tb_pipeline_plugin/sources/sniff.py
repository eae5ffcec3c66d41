"""Which files discovery takes for traces or Composer statistics, from
their first bytes: a generic Chrome trace's header, Composer's events.

Discovery repeats on every `runs` request: a file is sniffed again only
when its size or mtime changed.
"""
from __future__ import annotations

import re
import zlib

from ..bounded_cache import BoundedCache
from ..readers.composer import composer_kind as _read_composer_kind
from .filesystem import open_binary

# Enough to get past a Kineto header with many deviceProperties entries.
SNIFF_BYTES = 64 * 1024
_PH_KEY_RE = re.compile(rb'"ph"\s*:')

_SNIFF_CACHE_MAX = 4096
_sniff_cache: BoundedCache[tuple[str, int, float], bool] = BoundedCache(_SNIFF_CACHE_MAX)
_composer_cache: BoundedCache[tuple[str, int, float], str | None] = BoundedCache(_SNIFF_CACHE_MAX)


def looks_like_trace(path: str, gz: bool, size: int, mtime: float) -> bool:
    """Whether the file at `path` (gzipped when `gz`) is a Chrome trace."""
    return _sniff_cache.get_or_make((path, size, mtime), lambda: _sniff(path, gz))


def _sniff(path: str, gz: bool) -> bool:
    try:
        with open_binary(path) as f:
            head = f.read(SNIFF_BYTES)
        if gz:
            # A partial inflate of the first block; tolerant of truncated files.
            head = zlib.decompressobj(wbits=47).decompress(head, SNIFF_BYTES)
        return looks_like_trace_head(head)
    except Exception:
        return False


def composer_kind(path: str, size: int, mtime: float) -> str | None:
    """`readers.composer.composer_kind` of the file, cached like the trace sniff."""
    return _composer_cache.get_or_make((path, size, mtime), lambda: _read_composer_kind(path))


def looks_like_trace_head(head: bytes) -> bool:
    """Whether the first bytes of a JSON document look like a Chrome trace."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{"):
        return b'"traceEvents"' in text
    if text.startswith(b"["):
        rest = text[1:].lstrip(b" \t\r\n")
        return rest.startswith(b"{") and _PH_KEY_RE.search(rest) is not None
    return False
