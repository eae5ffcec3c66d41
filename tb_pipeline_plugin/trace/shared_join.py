"""Forked decoders' columns joined where they are written: one shared file.

Each forked decoder used to pickle its chunks' columns back through a pipe,
one child after the other, and the caller concatenated them: for a 1 GB
trace, after both children had decoded (1.8 s), 0.75 s of pickling and
unpickling and 0.43 s of concatenation, on one core, three copies of the
table. Now a decoder sends only its row counts and its interned values; the
caller merges the interners, lays out every joined column in one memory
file (`memfd`) and sends each decoder its place in it and its id mappings;
the decoders re-express their ids and write their rows at once, each on its
core; the caller's columns are views of that file. One copy of the table,
made in parallel, and nothing of it in the caller's heap.

Given a `JoinFile` (a cache entry's columns file), the decoders write into
that file instead: `persist.save_linked` then leaves the table's columns
where they are and writes only the link's, so the table is written once.

A decoder whose columns are not all plain numbers (string flow ids, rare)
sends its chunks pickled instead, joined as before (`assemble.join_parts`):
the same table either way (tests/trace/test_decode_parallel.py).
"""
from __future__ import annotations

import mmap
import os
from typing import Callable

import numpy as np

from .assemble import JOINED_DTYPES, JoinedColumns, join_parts, remap_ids
from .columns import ChunkColumns
from .fork_map import fork_talking
from .intern import Interners

_ALIGN = 64  # each column starts on a cache line


def available() -> bool:
    return hasattr(os, "memfd_create")


class JoinFile:
    """A file for the joined columns to be written into, opened (emptied)
    here; once a join has written it, `mapped` is its mapping and `size` the
    bytes the columns take from its start. Closing leaves the mapping."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        self.mapped: mmap.mmap | None = None
        self.size = 0

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "JoinFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def decode_and_join(decode_range: Callable[[int], tuple | None], n: int,
                    into: JoinFile | None = None) -> tuple[JoinedColumns, Interners] | None:
    """Ranges 0..n-1 each decoded in a forked child by `decode_range(k)` ->
    (parts, strings, keys) or None, joined in order as `join_parts` joins
    them, into a memory file or `into`; None when any child failed or sent
    nothing usable (the caller then decodes in one process)."""
    fd = into.fd if into is not None else os.memfd_create("tb-pipeline-columns", os.MFD_CLOEXEC)
    try:
        children = fork_talking(lambda k, talk: _decoder(decode_range, k, talk, fd), range(n))
        try:
            got = _join(children, fd)
        finally:
            for child in children:
                child.close()
    finally:
        if into is None:
            os.close(fd)
    if got is not None and into is not None and got[2] is not None:
        into.mapped, into.size = got[2], got[3]
    return None if got is None else (got[0], got[1])


def _join(children, fd: int) -> tuple | None:
    counts = [child.recv() for child in children]
    if any(c is None for c in counts):
        return None
    interners = Interners.adopt(counts[0]["strings"], counts[0]["keys"])
    mappings = [(None, None)]
    for c in counts[1:]:
        mappings.append((interners.strings.codes(c["strings"]), interners.keys.codes(c["keys"])))
    if not all(c["plain"] for c in counts):
        joined = _join_pickled(children, mappings, interners)
        return None if joined is None else (joined, interners, None, 0)
    layout, size = _layout([c["rows"] for c in counts])
    os.ftruncate(fd, max(size, 1))
    main_rows = 0
    for k, (child, (string_ids, key_ids)) in enumerate(zip(children, mappings)):
        place = {group: {key: starts[k] for key, (starts, _) in columns.items()} for group, columns in layout.items()}
        if not child.send({"place": place, "size": size, "string_ids": string_ids, "key_ids": key_ids,
                           "main_row": main_rows}):
            return None
        main_rows += counts[k]["rows"]["main"].get("ts_us", 0)
    if any(child.recv() != "written" for child in children):
        return None
    mapped, joined = _views(fd, size, layout)
    joined.add_named_and_counted([c["named"] for c in counts])
    return joined, interners, mapped, size


def _join_pickled(children, mappings, interners: Interners) -> JoinedColumns | None:
    parts: list[ChunkColumns] = []
    for child, (string_ids, key_ids) in zip(children, mappings):
        if not child.send("pickled"):
            return None
        got = child.recv()
        if got is None:
            return None
        if string_ids is not None:
            for part in got:
                remap_ids(part, string_ids, key_ids)
        parts.extend(got)
    return join_parts(parts)


def _layout(rows: list[dict]) -> tuple[dict, int]:
    """layout[group][key] = (byte offset of each child's rows in that joined
    column, the column's rows); and the file's size."""
    layout: dict = {}
    at = 0
    for group, dtypes in JOINED_DTYPES.items():
        layout[group] = {}
        for key, dtype in dtypes.items():
            width = np.dtype(dtype).itemsize
            starts, total = [], 0
            for r in rows:
                starts.append(at + total * width)
                total += r[group][key]
            layout[group][key] = (starts, total)
            at = -(-(at + total * width) // _ALIGN) * _ALIGN
    return layout, at


def _views(fd: int, size: int, layout: dict) -> tuple[mmap.mmap, JoinedColumns]:
    # Every page mapped at once (MAP_POPULATE): faulted in one by one by the first reads instead, a 1 GB trace's
    # columns cost the link 0.1-0.2 s more.
    mapped = mmap.mmap(fd, max(size, 1), mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                       mmap.PROT_READ | mmap.PROT_WRITE)
    groups = {group: {key: np.frombuffer(mapped, dtype=dtype, count=layout[group][key][1],
                                         offset=layout[group][key][0][0])
                      for key, dtype in dtypes.items()}
              for group, dtypes in JOINED_DTYPES.items()}
    return mapped, JoinedColumns(**groups)


def _decoder(decode_range: Callable[[int], tuple | None], k: int, talk, fd: int) -> None:
    """A child's side: decode, say what it holds, then write it where told."""
    got = decode_range(k)
    if got is None:
        return  # the caller reads the end of the pipe: this range failed
    parts, strings, keys = got
    plain = all(a.dtype != object for p in parts for g in (p.main, p.kernel, p.memory, p.flow) for a in g.values())
    rows = {group: {key: sum(len(getattr(p, group)[key]) for p in parts if key in getattr(p, group)) for key in dtypes}
            for group, dtypes in JOINED_DTYPES.items()}
    named = JoinedColumns({}, {}, {}, {})  # what its chunks named and counted, without their columns
    named.add_named_and_counted(parts)
    talk.send({"rows": rows, "strings": strings, "keys": keys, "plain": plain, "named": named})
    order = talk.recv()
    if order == "pickled":
        talk.send(parts)
        return
    if order["string_ids"] is not None:
        for part in parts:
            remap_ids(part, order["string_ids"], order["key_ids"])
    row = order["main_row"]
    for part in parts:
        if "row" in part.kernel:
            part.kernel["row"] = part.kernel["row"] + row
        row += len(part.main.get("ts_us", ()))
    _write(parts, order["place"], order["size"], fd)
    talk.send("written")


def _write(parts: list[ChunkColumns], place: dict, size: int, fd: int) -> None:
    mapped = mmap.mmap(fd, max(size, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    for group, dtypes in JOINED_DTYPES.items():
        for key, dtype in dtypes.items():
            arrays = [getattr(p, group)[key] for p in parts if key in getattr(p, group)]
            n = sum(len(a) for a in arrays)
            if n:
                out = np.frombuffer(mapped, dtype=dtype, count=n, offset=place[group][key])
                np.concatenate(arrays, out=out, casting="unsafe")
