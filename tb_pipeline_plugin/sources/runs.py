"""What discovery found and what a request selects of it: a run's trace
files (`TraceFile`), its artifacts (`RunInfo`), and the checks and defaults
that turn a request's run, worker and span into one of them (`resolve`)."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from ..errors import BadRequest, NotFound
from ..formats.diagnostic import DIAGNOSTIC_DIR, RESULTS_FILE
from .filesystem import stat_file

_SPAN_RE = re.compile(r"^\d+$")
_MAX_NAME_CHARS = 4096


class TraceFile(NamedTuple):
    """One trace file of a run. A named tuple, not a frozen dataclass: a scan
    of 10,000 rank files makes 10,000 of them, at a tenth of the cost."""

    run: str
    worker: str
    span: str
    path: str
    size: int
    mtime: float

    def selection(self) -> dict:
        """The `TraceRef` of an answer: the run, worker and span it was computed from."""
        return {"run": self.run, "worker": self.worker, "span": self.span}


@dataclass
class RunInfo:
    name: str
    path: str
    # worker -> span -> file; workers sorted, spans in ascending numeric order.
    traces: dict[str, dict[str, TraceFile]] = field(default_factory=dict)
    kinds: list[str] = field(default_factory=list)
    # Statistics: our JSONL under pipeline/, and Composer traces in the run directory.
    pipeline_files: list[str] = field(default_factory=list)
    diagnostic_files: list[str] = field(default_factory=list)
    # What discovery left out of this run, and why (a name clash, say).
    notes: list[str] = field(default_factory=list)
    # A group (a valid recordings.json): its member runs' full names, in the
    # manifest's order; the members stay runs of their own.
    recordings: list[str] = field(default_factory=list)

    def statistics_identity(self) -> tuple[int, float] | None:
        """(total bytes, newest mtime) of the statistics files, stat'ed now:
        changes whenever one grows, so the store reloads a run being written.
        None when every file is gone."""
        total, newest, seen = 0, 0.0, False
        for path in self.pipeline_files:
            size, mtime = stat_file(path)
            if size is not None:
                total, newest, seen = total + size, max(newest, mtime), True
        return (total, newest) if seen else None

    def workers(self) -> list[dict]:
        """The `workers` field of the `runs` route."""
        return [{"name": w, "spans": list(spans)} for w, spans in self.traces.items()]

    def trace_files(self) -> list[TraceFile]:
        return [tf_ for spans in self.traces.values() for tf_ in spans.values()]


def default_traces(runs: dict[str, RunInfo]):
    """(run, its default trace) of every run with traces, in the listed order:
    what the run listing prefetches, first to last."""
    for name, info in runs.items():
        if info.traces:
            yield name, resolve(runs, name)


def resolve(
    runs: dict[str, RunInfo], run: str | None, worker: str | None = None, span: str | None = None
) -> TraceFile:
    """The trace a request selects; worker and span default as documented.

    An empty `worker`/`span` counts as absent (a client with nothing selected
    yet); an empty `run` is a bad request.
    """
    run = _check_run_name(run)
    if worker:
        _check_component("worker", worker)
    if span and not _SPAN_RE.match(span):
        raise BadRequest(f"span must be a decimal number, got {span!r}")
    info = runs.get(run)
    if info is None:
        raise NotFound(f"unknown run {run!r}")
    if not info.traces:
        raise NotFound(f"run {run!r} has no trace files")
    if not worker:
        worker = next(iter(info.traces))
    spans = info.traces.get(worker)
    if spans is None:
        raise NotFound(f"unknown worker {worker!r} in run {run!r}")
    if not span:
        span = next(reversed(spans))
    found = spans.get(span)
    if found is None:
        raise NotFound(f"unknown span {span!r} for worker {worker!r} in run {run!r}")
    return found


def resolve_diagnostic(runs: dict[str, RunInfo], run: str | None) -> str:
    """The diagnostic results file of `run`."""
    run = _check_run_name(run)
    info = runs.get(run)
    if info is None:
        raise NotFound(f"unknown run {run!r}")
    if not info.diagnostic_files:
        raise NotFound(f"run {run!r} has no diagnostic results ({DIAGNOSTIC_DIR}/{RESULTS_FILE}); "
                       f"record them with TB_PIPELINE_DIAGNOSTIC_MODE=1 or python -m tb_pipeline_plugin.diagnose")
    return info.diagnostic_files[0]


def run_info(runs: dict[str, RunInfo], run: str | None) -> RunInfo:
    """The run a request names (400 on a malformed name, 404 on an unknown one)."""
    info = runs.get(_check_run_name(run))
    if info is None:
        raise NotFound(f"unknown run {run!r}")
    return info


def _check_run_name(run: str | None) -> str:
    if run is None or run == "":
        raise BadRequest("missing parameter 'run'")
    if len(run) > _MAX_NAME_CHARS or "\x00" in run or "\\" in run:
        raise BadRequest(f"malformed run name {run!r}")
    if run.startswith("/") or ".." in run.split("/"):
        raise BadRequest(f"run must be a path relative to the logdir without '..': {run!r}")
    if posixpath.normpath(run) != run:
        raise BadRequest(f"run name is not normalized: {run!r}")
    return run


def _check_component(what: str, value: str) -> None:
    if (
        len(value) > _MAX_NAME_CHARS
        or value in (".", "..")
        or any(c in value for c in "/\\\x00")
    ):
        raise BadRequest(f"malformed {what} {value!r}")
