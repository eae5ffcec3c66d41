"""One loadable artifact of a run, and how each kind is loaded.

The server's store caches artifacts by `Source` (kind + path) and file
identity (size, mtime), whatever their kind: a trace per worker and span
today; pipeline statistics and diagnostic results register their loader in
`LOADERS` the same way, and get the same loading states, errors, warnings
and eviction for free.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ..analysis.processor import TraceProcessor
from .logdir import open_binary


class Source(NamedTuple):
    kind: str  # "trace", ...: a key of LOADERS
    path: str


def _load_trace(path: str) -> TraceProcessor:
    return TraceProcessor.load(path, opener=open_binary)


LOADERS: dict[str, Callable[[str], Any]] = {
    "trace": _load_trace,
}


def load_source(source: Source) -> Any:
    """The parsed artifact; raises with a user-facing reason when it cannot be read."""
    loader = LOADERS.get(source.kind)
    if loader is None:
        raise ValueError(f"no loader for artifacts of kind {source.kind!r}")
    return loader(source.path)
