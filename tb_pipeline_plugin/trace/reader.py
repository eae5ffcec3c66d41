"""Bytes of a trace file: plain or gzip, local or remote, salvaging a cut gzip."""
from __future__ import annotations

import gzip
import zlib

GZIP_MAGIC = b"\x1f\x8b"
_READ_BLOCK_BYTES = 16 << 20


def _open(path: str):
    if "://" in path:
        # Remote logdirs (gs://, s3://, hdfs://) go through TensorBoard's gfile.
        from tensorboard.compat import tf

        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def read_trace_bytes(path: str) -> tuple[bytes, list[str]]:
    """The decompressed file content and warnings about what was lost.

    gzip is recognised by its magic bytes, not the file name. A gzip stream
    cut short (a file still being written, a failed copy) yields what could
    be decompressed plus a warning; the JSON decoder then salvages the
    complete events in it.
    """
    with _open(path) as f:
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
