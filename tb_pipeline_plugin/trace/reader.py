"""Bytes of a trace file: plain or gzip, salvaging a cut gzip.

Files are opened by the caller's `opener` (remote logdirs go through the
sources layer's TensorBoard gfile wrapper), so decoding needs no TensorBoard.
"""
from __future__ import annotations

import gzip
import zlib

GZIP_MAGIC = b"\x1f\x8b"
_READ_BLOCK_BYTES = 16 << 20


def _open_local(path: str):
    return open(path, "rb")


def read_trace_bytes(path: str, opener=None) -> tuple[bytes, list[str]]:
    """The decompressed file content and warnings about what was lost.

    gzip is recognised by its magic bytes, not the file name. A gzip stream
    cut short (a file still being written, a failed copy) yields what could
    be decompressed plus a warning; the JSON decoder then salvages the
    complete events in it.
    """
    # The caller's filesystem layer (remote logdirs) or a local file.
    with (opener or _open_local)(path) as f:
        data = f.read()
    if not data.startswith(GZIP_MAGIC):
        return data, []
    try:
        return gzip.decompress(data), []
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        out = bytearray()
        decomp = zlib.decompressobj(wbits=31)
        try:
            for pos in range(0, len(data), _READ_BLOCK_BYTES):
                out += decomp.decompress(data[pos : pos + _READ_BLOCK_BYTES])
        except zlib.error:
            pass
        if not out:
            raise ValueError(f"unreadable gzip stream: {exc}") from None
        return bytes(out), [
            f"gzip stream is incomplete ({exc}); read {len(out):,} bytes before the cut"
        ]
