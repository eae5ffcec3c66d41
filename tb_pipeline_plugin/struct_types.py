"""msgspec types built once, under a lock, before a thread decodes with them.

msgspec builds a Struct type's decoding information the first time the type
is decoded or converted, and two threads doing that at once for the same
type crash the process: one reads the entry the other is still filling
(msgspec 0.22.0, a segmentation fault; `tests/trace/test_concurrent_first_use.py`).
TensorBoard serves requests on threads and the plugin loads on threads, so
the first two requests to a route arriving together took TensorBoard down.

A `msgspec.convert` (or `msgspec.inspect`) of a Struct type on a thread
goes through `built(T)`; a module that decodes keeps a module-level
`msgspec.json.Decoder(T)`, which builds the type at import (one thread).
A leaf: any package may import it.
"""
from __future__ import annotations

import threading
from typing import TypeVar

import msgspec

T = TypeVar("T")
_built: set = set()
_lock = threading.Lock()


def built(t: type[T]) -> type[T]:
    """`t`, with its decoding information (and that of every type in it)
    built: by the first caller, while any other waits."""
    if t not in _built:
        with _lock:
            if t not in _built:
                msgspec.json.Decoder(t)
                _built.add(t)
    return t
