"""A linked trace <-> a directory: one file of raw columns plus a JSON manifest.

What a parse produces is columns, so a parse done once (in a worker process,
or before a restart) is kept as those columns and mapped back with
`np.memmap(mode="r")`: no re-parse, no copy until a page is touched.

The manifest lists every column with its dtype, shape and offset in one
file, the CRC-32 of each 32 MiB segment of that file and the CRC of the
manifest itself, so a truncated or altered entry is detected (`CorruptEntry`)
and never served. A restart checks the segments on every core: the check is
most of a warm load (0.19 s of one CRC over a 1 GB trace's 451 MB of
columns). A big trace's table is already in the columns file when it is
saved (its forked decoders wrote it there, `shared_join.JoinFile`): only the
link's columns are appended. Only plain data is written (JSON and raw numbers, no pickles): a
cache directory is no place for code.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..cores import usable_cores
from .link import LinkedTrace, Steps
from .shared_join import JoinFile
from .table import EventTable, FlowColumns, KernelColumns, MemoryColumns

MANIFEST = "manifest.json"
COLUMNS = "columns.bin"
_ALIGN = 64
_FORMAT = 3  # 2: a CRC per segment of the columns file; 3: the operators' input types (`input_type_id`)
SEGMENT_BYTES = 32 << 20
_CLASSES = {c.__name__: c for c in (LinkedTrace, Steps, EventTable, KernelColumns, MemoryColumns, FlowColumns)}


def _source_digest() -> str:
    """Hash of the decoder's own source: any change to how traces are decoded
    or linked invalidates every persisted entry, without anyone having to
    remember to bump a number."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted(here.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


PARSER_VERSION = f"{_FORMAT}-{_source_digest()}"


class CorruptEntry(ValueError):
    """A persisted entry that does not match its manifest."""


def save_linked(linked: LinkedTrace, directory: str, in_place: JoinFile | None = None) -> int:
    """Writes `linked` into an existing empty `directory`; returns the entry's bytes.

    Every column goes into one file (`COLUMNS`), each at a 64-byte aligned
    offset: one write and one mapping however many columns a trace has
    (a file per column costs milliseconds each, which dominates small ranks).
    `in_place`: that file, already holding the table's columns (the forked
    decoders wrote them there, `shared_join.py`): columns lying in it are
    listed where they are, and only the others are written, after them."""
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(linked, arrays, "")
    path = os.path.join(directory, COLUMNS)
    arrays = {name: np.ascontiguousarray(arr) for name, arr in arrays.items()}
    # Columns the decoders wrote stay (a mapped file cut short kills whoever reads the lost pages: never truncated).
    written = in_place is not None and in_place.mapped is not None and in_place.size > 0 \
        and os.path.abspath(in_place.path) == os.path.abspath(path)
    kept = _kept_in_place(arrays, in_place) if written else {}
    layout = {}
    buffers: list = []
    offset = -(-in_place.size // _ALIGN) * _ALIGN if written else 0
    start = offset
    for name, arr in arrays.items():
        if arr.dtype.hasobject:
            raise TypeError(f"column {name} holds Python objects and cannot be persisted")
        if name in kept:
            layout[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "offset": kept[name]}
            continue
        pad = -offset % _ALIGN
        if pad:
            buffers.append(b"\0" * pad)
            offset += pad
        if arr.size:
            buffers.append(memoryview(arr).cast("B"))
        layout[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset}
        offset += arr.nbytes
    # One gathered write and one checksum of the written file: this runs on
    # a thread beside the views, and a call per column would give the GIL up
    # and wait to get it back a hundred times.
    with open(path, "r+b" if written else "wb") as f:
        f.truncate(start)
        f.seek(start)
        _write_all(f.fileno(), buffers)
    # On the writer's thread alone: the views are being built beside it.
    crcs = _segment_crcs(_map_columns(path, offset), SEGMENT_BYTES, threads=1)
    body = json.dumps({"format": _FORMAT, "parser": PARSER_VERSION, "tree": tree, "columns": layout,
                       "columns_bytes": offset, "segment_bytes": SEGMENT_BYTES, "segment_crc32": crcs},
                      allow_nan=True)
    manifest = json.dumps({"crc32": zlib.crc32(body.encode()), "body": body})
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as f:
        f.write(manifest)
    return offset + len(manifest)


def _kept_in_place(arrays: dict[str, np.ndarray], in_place: JoinFile) -> dict[str, int]:
    """Offset in `in_place`'s file of each array that is a view of the
    columns the decoders wrote there."""
    anchor = np.frombuffer(in_place.mapped, np.uint8, count=1)
    base = anchor.__array_interface__["data"][0]
    del anchor
    kept = {}
    for name, arr in arrays.items():
        at = arr.__array_interface__["data"][0] - base
        if arr.nbytes and arr.flags.c_contiguous and 0 <= at and at + arr.nbytes <= in_place.size:
            kept[name] = at
    return kept


_IOV_MAX = 1024  # buffers per writev call (Linux's limit)


def _write_all(fd: int, buffers: list) -> None:
    """`buffers` written in order, in as few system calls as the OS allows."""
    pending = [b for b in buffers if len(b)]
    while pending:
        batch = pending[:_IOV_MAX]
        written = os.writev(fd, batch)
        done = 0
        while done < len(batch) and written >= len(batch[done]):
            written -= len(batch[done])
            done += 1
        pending = pending[done:]
        if written:  # a partial write ends inside this buffer
            pending[0] = memoryview(pending[0])[written:]


def _segment_crcs(blob: np.ndarray, segment_bytes: int, threads: int) -> list[int]:
    """The CRC-32 of each `segment_bytes` of `blob`, on up to `threads`
    threads (zlib gives the GIL up while it sums)."""
    segments = [blob[a : a + segment_bytes] for a in range(0, len(blob), segment_bytes)]
    if threads <= 1 or len(segments) <= 1:
        return [zlib.crc32(seg) for seg in segments]
    with ThreadPoolExecutor(min(threads, len(segments))) as pool:
        return list(pool.map(zlib.crc32, segments))


def _map_columns(path: str, size: int) -> np.ndarray:
    """The columns file of `size` bytes, mapped read-only (a file of 0 bytes cannot be mapped)."""
    return np.memmap(path, dtype=np.uint8, mode="r") if size else np.empty(0, np.uint8)


def load_linked(directory: str, verify: bool = True) -> LinkedTrace:
    """The persisted trace, its columns memory-mapped read-only.

    Raises CorruptEntry when anything does not match the manifest (missing or
    truncated file, other parser version, checksum; `verify=False` skips only
    the columns' checksum, for an entry this process just had written)."""
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
            outer = json.load(f)
        body = outer["body"]
        if zlib.crc32(body.encode()) != outer["crc32"]:
            raise CorruptEntry("manifest checksum mismatch")
        manifest = json.loads(body)
        layout, expected_bytes = manifest["columns"], manifest["columns_bytes"]
    except CorruptEntry:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorruptEntry(f"unreadable manifest: {exc}") from None
    if manifest.get("parser") != PARSER_VERSION:
        raise CorruptEntry(f"written by parser {manifest.get('parser')}, this is {PARSER_VERSION}")
    path = os.path.join(directory, COLUMNS)
    try:
        size = os.path.getsize(path)
        if size != expected_bytes:
            raise CorruptEntry(f"{COLUMNS} has {size} bytes, expected {expected_bytes}")
        blob = _map_columns(path, size)
    except CorruptEntry:
        raise
    except (OSError, ValueError) as exc:
        raise CorruptEntry(f"{COLUMNS} unreadable: {exc}") from None
    if verify:
        try:
            crcs = _segment_crcs(blob, int(manifest["segment_bytes"]), usable_cores())
            matches = crcs == manifest["segment_crc32"]
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptEntry(f"manifest has no usable checksums: {exc}") from None
        if not matches:
            raise CorruptEntry(f"{COLUMNS} checksum mismatch")
    arrays = {}
    try:
        for name, info in layout.items():
            dtype = np.dtype(info["dtype"])
            shape = tuple(info["shape"])
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            start = info["offset"]
            if start + nbytes > size:
                raise CorruptEntry(f"column {name} lies beyond the end of {COLUMNS}")
            # A plain ndarray view (not a memmap subclass): analyses index
            # and combine columns freely; the mapping stays its base.
            arrays[name] = blob[start : start + nbytes].view(np.ndarray).view(dtype).reshape(shape) if nbytes else np.empty(shape, dtype)
        linked = _decode(manifest["tree"], arrays)
    except CorruptEntry:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptEntry(f"manifest does not describe a trace: {exc}") from None
    if not isinstance(linked, LinkedTrace):
        raise CorruptEntry("manifest does not describe a linked trace")
    return linked


def entry_bytes(directory: str) -> int:
    """Bytes of an entry (two stats, no parsing); 0 if unreadable."""
    try:
        return os.path.getsize(os.path.join(directory, MANIFEST)) + os.path.getsize(os.path.join(directory, COLUMNS))
    except OSError:
        return 0


# ---- tagged JSON: dataclasses, arrays, tuples, dicts with non-string keys ----


def _encode(value, arrays: dict, path: str):
    if isinstance(value, np.ndarray):
        name = path.strip(".") or "root"
        arrays[name] = value
        return {"__array__": name}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value).__name__
        if cls not in _CLASSES:
            raise TypeError(f"{cls} is not a persistable trace class")
        fields = {f.name: _encode(getattr(value, f.name), arrays, f"{path}.{f.name}") for f in dataclasses.fields(value)}
        return {"__class__": cls, "fields": fields}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, arrays, f"{path}.{i}") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, arrays, f"{path}.{i}") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k, arrays, path), _encode(v, arrays, f"{path}.{i}")] for i, (k, v) in enumerate(value.items())]}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot persist a {type(value).__name__} at {path or 'the root'}")


def _decode(node, arrays: dict):
    if isinstance(node, list):
        return [_decode(v, arrays) for v in node]
    if not isinstance(node, dict):
        return node
    if "__array__" in node:
        return arrays[node["__array__"]]
    if "__class__" in node:
        cls = _CLASSES[node["__class__"]]
        return cls(**{k: _decode(v, arrays) for k, v in node["fields"].items()})
    if "__tuple__" in node:
        return tuple(_decode(v, arrays) for v in node["__tuple__"])
    if "__dict__" in node:
        return {_hashable(_decode(k, arrays)): _decode(v, arrays) for k, v in node["__dict__"]}
    raise ValueError(f"unknown node with keys {sorted(node)}")


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, (list, tuple)) else key
