"""A linked trace <-> a directory of .npy files plus one JSON manifest.

What a parse produces is columns, so a parse done once (in a worker process,
or before a restart) is kept as those columns and mapped back with
`np.load(mmap_mode="r")`: no re-parse, no copy until a page is touched.

The manifest lists every array with its dtype, shape, byte size and CRC-32,
and the CRC of the manifest itself, so a truncated or altered entry is
detected (`CorruptEntry`) and never served. Only plain data is written (JSON
and .npy without pickles): a cache directory is no place for code.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zlib
from pathlib import Path

import numpy as np

from .link import LinkedTrace, Steps
from .table import EventTable, FlowColumns, KernelColumns, MemoryColumns

MANIFEST = "manifest.json"
_FORMAT = 1
_CLASSES = {c.__name__: c for c in (LinkedTrace, Steps, EventTable, KernelColumns, MemoryColumns, FlowColumns)}
_CRC_BLOCK_BYTES = 16 << 20


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


def save_linked(linked: LinkedTrace, directory: str) -> int:
    """Writes `linked` into an existing empty `directory`; returns the bytes written."""
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(linked, arrays, "")
    files = {}
    total = 0
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        if arr.dtype.hasobject:
            raise TypeError(f"column {name} holds Python objects and cannot be persisted")
        path = os.path.join(directory, name + ".npy")
        np.save(path, arr, allow_pickle=False)
        size = os.path.getsize(path)
        files[name] = {"bytes": size, "crc32": _crc_of_file(path)}
        total += size
    body = json.dumps({"format": _FORMAT, "parser": PARSER_VERSION, "tree": tree, "files": files}, allow_nan=True)
    manifest = json.dumps({"crc32": zlib.crc32(body.encode()), "body": body})
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as f:
        f.write(manifest)
    return total + len(manifest)


def load_linked(directory: str, verify: bool = True) -> LinkedTrace:
    """The persisted trace, its columns memory-mapped read-only.

    Raises CorruptEntry when anything does not match the manifest (missing or
    truncated file, other parser version, checksum)."""
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
            outer = json.load(f)
        body = outer["body"]
        if zlib.crc32(body.encode()) != outer["crc32"]:
            raise CorruptEntry("manifest checksum mismatch")
        manifest = json.loads(body)
    except CorruptEntry:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CorruptEntry(f"unreadable manifest: {exc}") from None
    if manifest.get("parser") != PARSER_VERSION:
        raise CorruptEntry(f"written by parser {manifest.get('parser')}, this is {PARSER_VERSION}")
    arrays = {}
    for name, info in manifest["files"].items():
        path = os.path.join(directory, name + ".npy")
        try:
            if os.path.getsize(path) != info["bytes"]:
                raise CorruptEntry(f"{name}.npy has {os.path.getsize(path)} bytes, expected {info['bytes']}")
            if verify and _crc_of_file(path) != info["crc32"]:
                raise CorruptEntry(f"{name}.npy checksum mismatch")
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except CorruptEntry:
            raise
        except (OSError, ValueError) as exc:
            raise CorruptEntry(f"{name}.npy unreadable: {exc}") from None
        # np.load maps an empty array as a regular array; others are memmaps.
        # Analyses take views and fancy-index; a plain ndarray view of the map
        # keeps numpy from wrapping every result in a memmap subclass.
        arrays[name] = arr.view(np.ndarray) if isinstance(arr, np.memmap) else arr
    try:
        linked = _decode(manifest["tree"], arrays)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptEntry(f"manifest does not describe a trace: {exc}") from None
    if not isinstance(linked, LinkedTrace):
        raise CorruptEntry("manifest does not describe a linked trace")
    return linked


def entry_bytes(directory: str) -> int:
    """Bytes of a complete entry, from its manifest (no directory walk); 0 if unreadable."""
    try:
        with open(os.path.join(directory, MANIFEST), encoding="utf-8") as f:
            raw = f.read()
        files = json.loads(json.loads(raw)["body"])["files"]
        return len(raw) + sum(int(v["bytes"]) for v in files.values())
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _crc_of_file(path: str) -> int:
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(_CRC_BLOCK_BYTES):
            crc = zlib.crc32(block, crc)
    return crc


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
