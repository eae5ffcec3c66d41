"""The names torch-tb-profiler gives one of our traces.

torch-tb-profiler (0.4.x) lists the same logdir its own way, and its routes
take its names, not ours:
- run: the directory relative to the logdir, except a trace directly in the
  logdir, which it names after the logdir's last component (we call it ".");
- worker: the file name before `[.<timestamp>].pt.trace.json[.gz]`, as ours;
- span: not the timestamp but its 1-based index among that worker's
  timestamp strings sorted as strings, counting every matching file in the
  directory (`.json` and `.json.gz` twins both count, the later index wins),
  or "default" for a file without a timestamp.
It reads only Kineto-named files (`*.pt.trace.json[.gz]`), so a generic
Chrome trace we list (`name.json`) has no counterpart there.

Copied behaviour, not imported code: tests/routes/test_tb_profiler_beside.py checks
these names against its own routes on the same logdir.
"""
from __future__ import annotations

import bisect
import os
import posixpath
from dataclasses import dataclass

from ..errors import NotFound
from .filesystem import display_name, is_remote, isdir, join, listdir
from .logdir import KINETO_RE
from .runs import TraceFile

DEFAULT_SPAN = "default"


@dataclass(frozen=True)
class ProfilerNames:
    run: str
    worker: str
    span: str


def tb_profiler_names(logdir: str, tf: TraceFile) -> ProfilerNames:
    """torch-tb-profiler's run, worker and span for our trace `tf`; NotFound
    when it does not read that file."""
    run_dir, fname = _split(tf.path)
    m = KINETO_RE.match(fname)
    if not m:
        raise NotFound(
            f"torch-tb-profiler reads only *.pt.trace.json[.gz] files; {fname!r} (run {tf.run!r}) is not one"
        )
    worker = m.group(1)
    run = _run_name(logdir, run_dir)
    if m.group(2) is None:
        return ProfilerNames(run, worker, DEFAULT_SPAN)
    spans = _timestamps_of(run_dir, worker)
    stamp = m.group(2)[1:]
    # Last index of `stamp` in the sorted list: what its dict assignment keeps.
    index = bisect.bisect_right(spans, stamp)
    return ProfilerNames(run, worker, str(index))


def _run_name(logdir: str, run_dir: str) -> str:
    """Theirs is the file's own directory under the logdir, named as discovery
    names directories: our run's name, or below it when discovery joined a
    training job's folders into one run (sources/layouts.py); the logdir
    itself is named after its directory."""
    root = logdir.rstrip("/")
    if is_remote(root):
        rest = run_dir[len(root):].strip("/") if run_dir.startswith(root) else ""
        parts = rest.split("/") if rest else []
    else:
        root = os.path.abspath(root)
        rel = os.path.relpath(run_dir, root)
        parts = [] if rel == "." else rel.split(os.sep)
    if parts:
        return "/".join(display_name(p) for p in parts)
    return posixpath.basename(root) if is_remote(root) else os.path.basename(root)


def _timestamps_of(run_dir: str, worker: str) -> list[str]:
    stamps = []
    for name in listdir(run_dir):
        m = KINETO_RE.match(name)
        if m and m.group(1) == worker and m.group(2) is not None and not isdir(join(run_dir, name)):
            stamps.append(m.group(2)[1:])
    return sorted(stamps)


def _split(path: str) -> tuple[str, str]:
    if is_remote(path):
        head, _, tail = path.rpartition("/")
        return head, tail
    return os.path.dirname(path), os.path.basename(path)
