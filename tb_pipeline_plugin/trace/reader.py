"""Bytes of a trace file: plain or gzip, within limits.

Files are opened by the caller's `opener` (remote logdirs go through the
sources layer's TensorBoard gfile wrapper), so decoding needs no TensorBoard.

Decompression streams in small blocks under three limits, so a gzip bomb
(a few MB that inflate to many GB) is refused after a bounded amount of
work and memory:

- size: at most `max_trace_bytes()` decompressed bytes (env
  `TB_PIPELINE_MAX_TRACE_MB`; default an eighth of the machine's memory,
  since decoding needs about 2.5 times the text on top of it);
- memory: at most a third of the memory available when the read starts;
- ratio: past 16 MiB, at most `TB_PIPELINE_MAX_GZIP_RATIO` (default 200)
  bytes out per compressed byte in. Real traces inflate 10 to 30 times;
  only padding (a bomb) inflates hundreds of times.

Damage loses only what follows it: a stream cut short, a corrupt byte or a
bad trailer keeps every byte decompressed before the damage, with a warning
that says where; the JSON decoder then salvages the complete events.
"""
from __future__ import annotations

import os
import zlib

import psutil

from ..byte_units import bytes_text

GZIP_MAGIC = b"\x1f\x8b"
MAX_TRACE_MB_ENV = "TB_PIPELINE_MAX_TRACE_MB"
MAX_GZIP_RATIO_ENV = "TB_PIPELINE_MAX_GZIP_RATIO"
_DEFAULT_MEMORY_SHARE = 8  # default limit: total memory / this
_DEFAULT_MAX_RATIO = 200.0
_RATIO_GRACE_BYTES = 16 << 20
_IN_BLOCK_BYTES = 64 << 10  # compressed bytes per step: damage loses at most one step, then byte-exact
_OUT_STEP_BYTES = 8 << 20  # decompressed bytes per call: limits are checked this often


class TraceTooLarge(ValueError):
    """The file (or what it decompresses to) is beyond the configured limits."""


def max_trace_bytes() -> int:
    raw = os.environ.get(MAX_TRACE_MB_ENV, "").strip()
    if raw:
        try:
            return max(1, int(float(raw) * (1 << 20)))
        except ValueError:
            pass  # a typo must not disable the limit: fall back to the default
    return psutil.virtual_memory().total // _DEFAULT_MEMORY_SHARE


def _max_ratio() -> float:
    try:
        return float(os.environ.get(MAX_GZIP_RATIO_ENV, "") or _DEFAULT_MAX_RATIO)
    except ValueError:
        return _DEFAULT_MAX_RATIO


def _open_local(path: str):
    return open(path, "rb")


class _Limits:
    def __init__(self) -> None:
        self.max_bytes = max_trace_bytes()
        self.memory_bytes = psutil.virtual_memory().available // 3
        self.max_ratio = _max_ratio()

    def check(self, out_bytes: int, in_bytes: int) -> None:
        if out_bytes > self.max_bytes:
            raise TraceTooLarge(
                f"the trace is larger than the limit of {bytes_text(self.max_bytes)} decompressed "
                f"(set {MAX_TRACE_MB_ENV} to raise it); refused"
            )
        if out_bytes > self.memory_bytes:
            raise TraceTooLarge(
                f"not enough free memory to load this trace: it decompresses to more than "
                f"{bytes_text(out_bytes)} and only {bytes_text(self.memory_bytes * 3)} is available; refused"
            )
        if out_bytes > _RATIO_GRACE_BYTES and out_bytes > self.max_ratio * max(in_bytes, 1):
            raise TraceTooLarge(
                f"the gzip data inflates more than {self.max_ratio:,.0f} times ({bytes_text(out_bytes)} from "
                f"{bytes_text(in_bytes)}): a real trace inflates 10 to 30 times, so this looks like a "
                f"decompression bomb (set {MAX_GZIP_RATIO_ENV} to allow it); refused"
            )


def check_limits(size: int) -> None:
    """Raises `TraceTooLarge` for a plain file of `size` bytes beyond the limits."""
    _Limits().check(size, size)


def read_trace_bytes(path: str, opener=None) -> tuple[bytes, list[str]]:
    """The decompressed file content and warnings about what was lost.

    gzip is recognised by its magic bytes, not the file name. Raises
    `TraceTooLarge` (a ValueError) beyond the limits in the module docstring.
    """
    limits = _Limits()
    # The caller's filesystem layer (remote logdirs) or a local file.
    with (opener or _open_local)(path) as f:
        head = f.read(2)
        if head != GZIP_MAGIC:
            data = _read_plain(f, head, limits.max_bytes + 1)
            limits.check(len(data), len(data))
            return data, []
        return _inflate(f, head, limits)


def _read_plain(f, head: bytes, limit: int) -> bytes:
    """The whole file as one bytes object. `head + rest` would copy hundreds
    of MB once more (and fault in as many fresh pages): rewind instead when
    the file allows it. `read(n)` reserves n bytes up front: ask for the
    file's size (and one byte more, to see a file beyond the limit), not
    the limit, so a 50 KB file does not reserve gigabytes of address space."""
    try:
        seekable = f.seekable()
    except (AttributeError, OSError):
        seekable = False
    if seekable:
        size = f.seek(0, os.SEEK_END)
        f.seek(0)
        return f.read(min(limit, size + 1))
    return head + f.read(limit - len(head))


def _inflate(f, head: bytes, limits: _Limits) -> tuple[bytes, list[str]]:
    out = bytearray()
    warnings: list[str] = []
    d = zlib.decompressobj(wbits=31)
    consumed = 0  # compressed bytes fed so far
    pending = head
    members = 1
    while True:
        block = pending or f.read(_IN_BLOCK_BYTES)
        pending = b""
        if not block:
            break
        saved, mark = d.copy(), len(out)
        try:
            _feed(d, block, out, consumed, limits)
        except zlib.error as exc:
            # Redo this block a byte at a time to keep everything before the damage.
            d = saved
            del out[mark:]
            at = consumed
            for i in range(len(block)):
                try:
                    _feed(d, block[i : i + 1], out, consumed + i, limits)
                except zlib.error:
                    at = consumed + i
                    break
            warnings.append(_damage(exc, at, len(out)))
            return _done(out, warnings)
        consumed += len(block)
        if d.eof:
            rest = d.unused_data
            consumed -= len(rest)
            rest = _next_member(f, rest)
            if rest is None:
                return _done(out, warnings)
            if not rest.startswith(GZIP_MAGIC):
                warnings.append(
                    f"data after gzip member {members} (compressed byte {consumed:,}) is not gzip; it was ignored"
                )
                return _done(out, warnings)
            # Concatenated members (gzip -c a b > ab) form one stream.
            members += 1
            d = zlib.decompressobj(wbits=31)
            pending = rest
    if not d.eof:
        if not out:
            raise ValueError("unreadable gzip stream: it ends before any data")
        warnings.append(
            f"gzip stream is incomplete (cut short after {consumed:,} compressed bytes); "
            f"read {len(out):,} bytes before the cut"
        )
    return _done(out, warnings)


def _next_member(f, rest: bytes) -> bytes | None:
    """The bytes after a gzip member (at least 2 when there are), or None at
    the end of the file; zero padding after the last member is allowed."""
    while True:
        if len(rest) < 2:
            more = f.read(_IN_BLOCK_BYTES)
            if more:
                rest += more
                continue
        if rest.strip(b"\x00"):
            return rest
        more = f.read(_IN_BLOCK_BYTES)
        if not more:
            return None
        rest = more


def _feed(d, block: bytes, out: bytearray, consumed: int, limits: _Limits) -> None:
    data = block
    while data:
        out += d.decompress(data, _OUT_STEP_BYTES)
        limits.check(len(out), consumed + len(block) - len(d.unconsumed_tail))
        data = d.unconsumed_tail
        if d.eof:
            break


def _damage(exc: zlib.error, at: int, kept: int) -> str:
    reason = str(exc).split(": ", 1)[-1]
    if "check" in reason:
        # Deflate has no checks of its own: the damage can be anywhere before.
        return (
            f"the gzip check at the end of the file failed ({reason}): some data may be damaged; "
            f"kept the {kept:,} decompressed bytes, events that do not parse are skipped"
        )
    return (
        f"gzip data is corrupt at compressed byte {at:,} ({reason}); "
        f"kept the {kept:,} bytes decompressed before it, the rest of the file was ignored"
    )


def _done(out: bytearray, warnings: list[str]) -> tuple[bytes, list[str]]:
    if not out:
        raise ValueError("unreadable gzip stream: " + (warnings[-1] if warnings else "no data"))
    # One copy, once: bytes is what the decoder and its Raw views expect.
    return bytes(out), warnings
