"""One loadable artifact of a run, and how each kind is loaded.

The server's store caches artifacts by `Source` (kind + path) and file
identity (size, mtime), whatever their kind: a trace per worker and span,
diagnostic results per run; pipeline statistics register their loader in
`LOADERS` the same way, and get the same loading states, errors, warnings
and eviction for free.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ..analysis.processor import TraceProcessor
from ..pipeline.diagnostic import DiagnosticRun, parse_diagnostic
from .logdir import open_binary


class Source(NamedTuple):
    kind: str  # "trace", ...: a key of LOADERS
    path: str


def _load_trace(path: str) -> TraceProcessor:
    return TraceProcessor.load(path, opener=open_binary)


def _load_diagnostic(path: str) -> DiagnosticRun:
    """Diagnostic-mode results; a file still being appended to is read as far
    as it goes (the store reads it again when its size or mtime changes)."""
    with open_binary(path) as f:
        data = f.read()
    run = parse_diagnostic(data, path)
    if not run.records:
        why = run.warnings[0] if run.warnings and "line" in run.warnings[0] else (
            "the file is empty: the sweep has not written anything yet" if not data.strip() else
            "no line is a complete record")
        raise ValueError(f"no diagnostic record could be read: {why}")
    return run


LOADERS: dict[str, Callable[[str], Any]] = {
    "trace": _load_trace,
    "diagnostic": _load_diagnostic,
}


def load_source(source: Source) -> Any:
    """The parsed artifact; raises with a user-facing reason when it cannot be read."""
    loader = LOADERS.get(source.kind)
    if loader is None:
        raise ValueError(f"no loader for artifacts of kind {source.kind!r}")
    return loader(source.path)
