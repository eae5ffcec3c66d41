"""Which runs, workers and spans a logdir holds: discovery.

Discovery only lists and stats files (plus a small header sniff for generic
Chrome traces, `sniff.py`); it never parses events, so it is cheap enough to
repeat on every `runs` request and picks up runs written while TensorBoard
is up. It lists through `filesystem.py`, so `gs://`, `s3://` and fsspec
logdirs work like local ones; what it finds is `runs.py`'s `RunInfo`.
"""
from __future__ import annotations

import logging
import os
import re

from ..bounded_cache import BoundedCache
from ..formats.group import MANIFEST_FILE
from ..trace.worker_names import natural_key
from . import groups, layouts
from .filesystem import display_name, exists, is_remote, isdir, join, listdir, read_head, stat_file, walk
from .runs import RunInfo, TraceFile
from .sniff import composer_kind, looks_like_trace

logger = logging.getLogger(__name__)

KINETO_RE = re.compile(r"^(.*?)(\.\d+)?\.pt\.trace\.json(\.gz)?$")
GENERIC_JSON_RE = re.compile(r"^(.+?)\.json(\.gz)?$")
KINDS_ORDER = ("trace", "pipeline", "diagnostic", "group")


def discover_runs(logdir: str) -> dict[str, RunInfo]:
    """All runs under `logdir`, sorted by name. A missing logdir has no runs."""
    if not logdir or not exists(logdir):
        return {}
    if not is_remote(logdir):
        # Absolute paths keep store keys stable if the process changes directory.
        logdir = os.path.abspath(logdir)
    builders: dict[tuple[str, ...], _RunBuilder] = {}
    by_name: dict[str, _RunBuilder] = {}
    for parts, dirpath, files, stats, pipeline_dir, diagnostic_file in walk(logdir):
        name = "/".join(display_name(p) for p in parts) if parts else "."
        if name in by_name and (by_name[name].has_data() or by_name[name].manifest_file is not None):
            # Two directories whose names differ only in undecodable bytes
            # escaped to the same text: keep the first, say so.
            logger.warning("tb_pipeline: run directory %r shows as %r, like another one: skipped", dirpath, name)
            by_name[name].notes.append(f"another directory also shows as {name!r} and was skipped")
            continue
        builder = _RunBuilder(name, dirpath)
        for fname in sorted(files):
            builder.add_file(fname, stats.get(fname))
        if pipeline_dir is not None:
            builder.add_pipeline_dir(pipeline_dir)
        if diagnostic_file is not None:
            builder.diagnostic_files.append(diagnostic_file)
        builders[parts] = by_name[name] = builder
    _fold_job_folders(builders)
    found = {b.name: b for b in builders.values() if b.has_data()}
    manifests = {b.name: b for b in builders.values() if b.manifest_file is not None}
    runs = {name: found[name].build() for name in found}
    for name, builder in manifests.items():
        _apply_group(runs, name, builder)
    return {name: runs[name] for name in sorted(runs)}


def _fold_job_folders(builders: dict[tuple[str, ...], _RunBuilder]) -> None:
    """Joins into their parent the folders one training job writes its
    profiler output to (`layouts.py`: Composer's trace and torch trace
    folders); deepest directories first, so a joined folder is seen whole."""
    below: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for parts in builders:
        if parts:
            below.setdefault(parts[:-1], []).append(parts)
    for parent in sorted(below, key=len, reverse=True):
        target = builders.get(parent)
        # A child missing from `builders` was a directory skipped for its name.
        data = [p for p in below[parent]
                if p in builders and (builders[p].has_data() or builders[p].manifest_file is not None)]
        if target is None or not data:
            continue
        names = set(layouts.folds_into_parent(bool(target.composer), [builders[p].folder(p[-1]) for p in data]))
        for p in data:
            if p[-1] in names:
                target.absorb(builders.pop(p))


# Manifest versions whose notes went to the log (a run may show none of them).
_unshown_notes_logged: BoundedCache[tuple[str, int, float], bool] = BoundedCache(4096)


def _apply_group(runs: dict[str, RunInfo], name: str, builder: _RunBuilder) -> None:
    """Makes `name` a group when its manifest is valid and names a run;
    otherwise says why on the directory's run, or, when the directory holds
    no data of its own, on the runs right below it (the ones a reader sees)."""
    path = builder.manifest_file
    size, mtime = stat_file(path)
    manifest = (groups.load_manifest(path, size, mtime, read_head) if size is not None
                else f"{MANIFEST_FILE} cannot be read (a broken link, or removed meanwhile)")
    if isinstance(manifest, str):
        notes = [f"not a group of recordings: {manifest}"]
    else:
        found = groups.membership(name, manifest, runs, builder.file_names)
        if found.recordings:
            info = runs.get(name) or RunInfo(name=name, path=builder.path)
            info.recordings = found.recordings
            # What every recording has, the group has too: its routes pool them (the Pipeline and
            # Diagnostic tabs read `kinds`); a trace is not listed, since the group has no workers.
            pooled = {k for k in ("pipeline", "diagnostic") if all(k in runs[m].kinds for m in found.recordings)}
            info.kinds = [k for k in KINDS_ORDER if k in info.kinds or k == "group" or k in pooled]
            info.notes.extend(found.notes)
            runs[name] = info
            return
        notes = found.notes
    if name in runs:
        runs[name].notes.extend(notes)
        return
    whose = "the logdir" if name == "." else repr(name)
    below = groups.children(name, runs)
    for child in below:
        runs[child].notes.extend(f"{whose}: {note}" for note in notes)
    if not below and _unshown_notes_logged.get((path, size, mtime)) is None:
        # No run to show it on: TensorBoard's log says it, once per version of the manifest.
        _unshown_notes_logged.put((path, size, mtime), True)
        for note in notes:
            logger.warning("tb_pipeline: %s: %s", whose, note)


class _RunBuilder:
    def __init__(self, name: str, path: str):
        self.name = name
        self.path = path
        self.traces: dict[str, dict[str, TraceFile]] = {}
        self.pipeline_files: list[str] = []
        self.diagnostic_files: list[str] = []
        self.notes: list[str] = []
        self.manifest_file: str | None = None
        self.file_names: set[str] = set()  # every file right in the directory (a manifest may name one)
        # Composer traces: path -> "rank" or "merged" (readers/composer.py:composer_kind),
        # and those that are also Chrome traces, kept apart until build.
        self.composer: dict[str, str] = {}
        self.composer_traces: list[TraceFile] = []
        self.kineto_files: list[str] = []
        self.generic_traces = False

    def add_file(self, fname: str, stat: tuple[str, int, float] | None = None) -> None:
        """`stat`: (full path, size, mtime) when the walk has them (local
        directories: one stat a file, not three; 10,000 ranks are 10,000 files)."""
        self.file_names.add(fname)
        full = stat[0] if stat else join(self.path, fname)
        if fname == MANIFEST_FILE:
            self.manifest_file = full
            return
        m = KINETO_RE.match(fname)
        if m:
            worker, span = m.group(1), (m.group(2) or ".0")[1:]
        else:
            g = GENERIC_JSON_RE.match(fname)
            if not g:
                return
            worker, span = g.group(1), "0"
        if not worker:
            return
        worker = display_name(worker)
        size, mtime = stat[1:] if stat else stat_file(full)
        if size is None:
            return
        kind = None if m or g.group(2) or is_remote(full) else composer_kind(full, size, mtime)
        if kind is not None:
            # Composer's events are the run's pipeline statistics; they are its
            # trace only when no torch.profiler trace is there (see build).
            self.pipeline_files.append(full)
            self.composer[full] = kind
        if not m and not looks_like_trace(full, bool(g.group(2)), size, mtime):
            return
        found = TraceFile(self.name, worker, span, full, size, mtime)
        if kind is not None:
            self.composer_traces.append(found)
            return
        if m:
            self.kineto_files.append(fname)
        else:
            self.generic_traces = True
        self._add_trace(found, display_name(fname) != fname)

    def _add_trace(self, found: TraceFile, escaped: bool) -> None:
        spans = self.traces.setdefault(found.worker, {})
        # Files arrive in name order, so `w.json` beats `w.json.gz` for the
        # same (worker, span): deterministic, and the plain one decodes faster.
        kept = spans.setdefault(found.span, found)
        if kept.path == found.path:
            return
        if escaped:
            self.notes.append(f"file {display_name(os.path.basename(found.path))!r} was skipped: its name shows like that of another file")
        elif os.path.dirname(kept.path) != os.path.dirname(found.path):
            self.notes.append(f"file {display_name(found.path)!r} was skipped: worker {found.worker!r} span "
                              f"{found.span} is also {display_name(kept.path)!r}")

    def folder(self, dirname: str) -> layouts.Folder:
        """This directory as `layouts.folds_into_parent` sees it."""
        other = bool(self.diagnostic_files or self.manifest_file or self.generic_traces
                     or len(self.pipeline_files) > len(self.composer))
        return layouts.Folder(display_name(dirname), len(self.composer), list(self.kineto_files), other)

    def absorb(self, child: "_RunBuilder") -> None:
        """`child`'s files become this run's (a folder of the same training job)."""
        for spans in child.traces.values():
            for tf_ in spans.values():
                self._add_trace(tf_._replace(run=self.name), False)
        self.composer_traces += [tf_._replace(run=self.name) for tf_ in child.composer_traces]
        self.kineto_files += child.kineto_files
        self.generic_traces |= child.generic_traces
        self.composer.update(child.composer)
        self.pipeline_files += child.pipeline_files
        self.diagnostic_files += child.diagnostic_files
        self.notes += child.notes

    def add_pipeline_dir(self, pdir: str) -> None:
        for fname in sorted(listdir(pdir)):
            if fname.startswith(".") or not fname.endswith(".jsonl"):
                continue
            full = join(pdir, fname)
            if isdir(full):
                continue
            self.pipeline_files.append(full)

    def has_data(self) -> bool:
        return bool(self.traces or self.pipeline_files or self.diagnostic_files)

    def build(self) -> RunInfo:
        if not self.traces:
            # Composer's own events as the trace when the torch profiler wrote
            # none; its merge of the rank files is not a worker of its own.
            ranked = [t for t in self.composer_traces if self.composer[t.path] == "rank"]
            for tf_ in ranked or self.composer_traces[:1]:
                self._add_trace(tf_, False)
        traces = {
            # One span (a rank of a big job, usually) needs no sort: 10,000 sorts of one are 10,000 calls.
            w: spans if len(spans) == 1 else {s: spans[s] for s in sorted(spans, key=int)}
            for w, spans in sorted(self.traces.items(), key=lambda ws: natural_key(ws[0]))
        }
        present = {
            "trace": bool(traces),
            "pipeline": bool(self.pipeline_files),
            "diagnostic": bool(self.diagnostic_files),
            "group": False,  # known once every run is: discover_runs' _apply_group
        }
        return RunInfo(
            name=self.name,
            path=self.path,
            traces=traces,
            kinds=[k for k in KINDS_ORDER if present[k]],
            pipeline_files=self.pipeline_files,
            diagnostic_files=self.diagnostic_files,
            notes=self.notes,
        )
