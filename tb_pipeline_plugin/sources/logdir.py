"""Which runs, workers and spans a logdir holds.

Discovery only lists and stats files (plus a small header sniff for generic
Chrome traces); it never parses events, so it is cheap enough to repeat on
every `runs` request and picks up runs written while TensorBoard is up.

Listing goes through TensorBoard's gfile compat layer so `gs://`, `s3://` and
fsspec logdirs work like local ones; symlink containment is enforced where it
is meaningful, on the local filesystem.
"""
from __future__ import annotations

import codecs
import logging
import os
import posixpath
import re
import zlib
from dataclasses import dataclass, field
from typing import NamedTuple

from tensorboard.compat import tf

from ..bounded_cache import BoundedCache
from ..errors import BadRequest, NotFound
from ..formats.diagnostic import DIAGNOSTIC_DIR, RESULTS_FILE
from ..formats.group import MANIFEST_FILE
from ..formats.pipeline import PIPELINE_DIR
from ..readers.composer import composer_kind
from ..trace.worker_names import natural_key
from . import groups, layouts

logger = logging.getLogger(__name__)

KINETO_RE = re.compile(r"^(.*?)(\.\d+)?\.pt\.trace\.json(\.gz)?$")
GENERIC_JSON_RE = re.compile(r"^(.+?)\.json(\.gz)?$")
KINDS_ORDER = ("trace", "pipeline", "diagnostic", "group")

# Enough to get past a Kineto header with many deviceProperties entries.
SNIFF_BYTES = 64 * 1024
_SPAN_RE = re.compile(r"^\d+$")
_PH_KEY_RE = re.compile(rb'"ph"\s*:')
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


def discover_runs(logdir: str) -> dict[str, RunInfo]:
    """All runs under `logdir`, sorted by name. A missing logdir has no runs."""
    if not logdir or not _exists(logdir):
        return {}
    if not _is_remote(logdir):
        # Absolute paths keep store keys stable if the process changes directory.
        logdir = os.path.abspath(logdir)
    builders: dict[tuple[str, ...], _RunBuilder] = {}
    by_name: dict[str, _RunBuilder] = {}
    for parts, dirpath, files, stats, pipeline_dir, diagnostic_file in _walk(logdir):
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
    manifest = (groups.load_manifest(path, size, mtime, _read_head) if size is not None
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
        # Composer traces: path -> "rank" or "merged" (pipeline.composer.composer_kind),
        # and those that are also Chrome traces, kept apart until build.
        self.composer: dict[str, str] = {}
        self.composer_traces: list[TraceFile] = []
        self.kineto_files: list[str] = []
        self.generic_traces = False

    def add_file(self, fname: str, stat: tuple[str, int, float] | None = None) -> None:
        """`stat`: (full path, size, mtime) when the walk has them (local
        directories: one stat a file, not three; 10,000 ranks are 10,000 files)."""
        self.file_names.add(fname)
        full = stat[0] if stat else _join(self.path, fname)
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
        kind = None if m or g.group(2) or _is_remote(full) else _composer_kind(full, size, mtime)
        if kind is not None:
            # Composer's events are the run's pipeline statistics; they are its
            # trace only when no torch.profiler trace is there (see build).
            self.pipeline_files.append(full)
            self.composer[full] = kind
        if not m and not _looks_like_trace(full, bool(g.group(2)), size, mtime):
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
        for fname in sorted(_listdir(pdir)):
            if fname.startswith(".") or not fname.endswith(".jsonl"):
                continue
            full = _join(pdir, fname)
            if _isdir(full):
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


# ---- filesystem helpers -------------------------------------------------------

def _is_remote(path: str) -> bool:
    return "://" in path


def _join(a: str, b: str) -> str:
    if _is_remote(a):
        return a.rstrip("/") + "/" + b
    return os.path.join(a, b)


def display_name(name: str) -> str:
    """`name` as text that JSON can carry: bytes that are not UTF-8 (which
    Python lists as lone surrogates) become `%XX`, so the run or worker still
    shows, distinct and recognisable, and never breaks the `runs` answer."""
    if name.isascii():  # nearly every name: no encoding made (twice a file in a scan)
        return name
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "surrogateescape") if _only_escapes(name) else name.encode("utf-8", "replace")
        return raw.decode("utf-8", "tb_pipeline_percent")


def _only_escapes(name: str) -> bool:
    try:
        name.encode("utf-8", "surrogateescape")
        return True
    except UnicodeEncodeError:
        return False


def _percent_escape(exc: UnicodeDecodeError):
    return "".join(f"%{b:02X}" for b in exc.object[exc.start : exc.end]), exc.end


codecs.register_error("tb_pipeline_percent", _percent_escape)


# Local paths go through `os`: TensorBoard's gfile stub encodes paths as
# strict UTF-8 and fails on names that are not (a run would vanish silently).
def _exists(path: str) -> bool:
    if not _is_remote(path):
        return os.path.exists(path)
    try:
        return bool(tf.io.gfile.exists(path))
    except Exception:  # an unreachable remote logdir is simply empty for now
        return False


def _isdir(path: str) -> bool:
    if not _is_remote(path):
        return os.path.isdir(path)
    try:
        return bool(tf.io.gfile.isdir(path))
    except Exception:
        return False


def _listdir(path: str) -> list[str]:
    try:
        if not _is_remote(path):
            return os.listdir(path)
        # Object stores list sub-"directories" with a trailing slash.
        return [n.rstrip("/") for n in tf.io.gfile.listdir(path)]
    except Exception:  # unreadable directory: skip it, keep discovering the rest
        return []


def open_binary(path: str):
    """A binary file object for a local path or a remote URL (gs://, s3://, ...)."""
    if _is_remote(path):
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def _read_head(path: str, limit: int) -> bytes:
    with open_binary(path) as f:
        return f.read(limit)


def stat_file(path: str) -> tuple[int | None, float]:
    if not _is_remote(path):
        try:
            st = os.stat(path)
        except OSError:
            return None, 0.0
        return st.st_size, st.st_mtime
    try:
        st = tf.io.gfile.stat(path)
    except Exception:
        return None, 0.0
    # The TF-less stub reports only the length; a size change still shows a rewrite.
    return int(st.length), getattr(st, "mtime_nsec", 0) / 1e9


def _walk(logdir: str):
    """Yield (relative parts, dir path, file names, {file name: (path, size,
    mtime)} where the listing gave them (local directories), pipeline dir or
    None, diagnostic results file or None).

    Hidden directories are skipped, `pipeline/` directories and
    `diagnostic/` directories holding `diagnostic.jsonl` are reported to
    their parent instead of being walked, and on the local filesystem a
    symlinked directory is entered only if it resolves inside the logdir and
    is not one of its own ancestors (no escapes, no cycles). An alias to a
    sibling run is listed under both names, as TensorBoard itself does.
    """
    local = not _is_remote(logdir)
    real_root = os.path.realpath(logdir) if local else ""
    stack: list[tuple[tuple[str, ...], str, frozenset]] = [((), logdir, frozenset())]
    while stack:
        parts, dirpath, ancestors = stack.pop()
        if local:
            real = os.path.realpath(dirpath)
            if real in ancestors or not _within(real, real_root):
                continue
            ancestors = ancestors | {real}
        files: list[str] = []
        stats: dict[str, tuple[str, int, float]] = {}
        subdirs: list[str] = []
        pipeline_dir = diagnostic_file = None
        for name, full, is_dir, stat in (_scan_local(dirpath, real_root) if local else _scan_remote(dirpath)):
            if is_dir:
                if name == PIPELINE_DIR:
                    pipeline_dir = full
                elif name == DIAGNOSTIC_DIR and stat_file(_join(full, RESULTS_FILE))[0] is not None:
                    diagnostic_file = _join(full, RESULTS_FILE)
                else:
                    subdirs.append(name)
            else:
                files.append(name)
                if stat is not None:
                    stats[name] = (full, *stat)
        yield parts, dirpath, files, stats, pipeline_dir, diagnostic_file
        for name in sorted(subdirs, reverse=True):
            stack.append((parts + (name,), _join(dirpath, name), ancestors))


def _scan_local(dirpath: str, real_root: str):
    """(name, path, is a directory, (size, mtime) of a file or None) of a
    local directory's visible entries: os.scandir knows each entry's type
    without a syscall, and a file costs one stat."""
    try:
        entries = list(os.scandir(dirpath))
    except OSError:  # unreadable directory: skip it, keep discovering the rest
        return
    for entry in entries:
        name = entry.name
        if not name or name.startswith("."):
            continue
        try:
            if entry.is_symlink() and not _within(os.path.realpath(entry.path), real_root):
                continue
            if entry.is_dir():
                yield name, entry.path, True, None
                continue
            st = entry.stat()
        except OSError:  # gone meanwhile, or a dangling link: a file without a size
            yield name, entry.path, False, None
            continue
        yield name, entry.path, False, (st.st_size, st.st_mtime)


def _scan_remote(dirpath: str):
    for name in _listdir(dirpath):
        if not name or name.startswith("."):
            continue
        full = _join(dirpath, name)
        yield name, full, _isdir(full), None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# ---- generic Chrome trace sniffing --------------------------------------------

# Discovery repeats on every `runs` request: a file is sniffed again only
# when its size or mtime changed.
_SNIFF_CACHE_MAX = 4096
_sniff_cache: BoundedCache[tuple[str, int, float], bool] = BoundedCache(_SNIFF_CACHE_MAX)
_composer_cache: BoundedCache[tuple[str, int, float], str | None] = BoundedCache(_SNIFF_CACHE_MAX)


def _looks_like_trace(path: str, gz: bool, size: int, mtime: float) -> bool:
    return _sniff_cache.get_or_make((path, size, mtime), lambda: _sniff(path, gz))


def _sniff(path: str, gz: bool) -> bool:
    try:
        with (tf.io.gfile.GFile(path, "rb") if _is_remote(path) else open(path, "rb")) as f:
            head = f.read(SNIFF_BYTES)
        if gz:
            # A partial inflate of the first block; tolerant of truncated files.
            head = zlib.decompressobj(wbits=47).decompress(head, SNIFF_BYTES)
        return looks_like_trace_head(head)
    except Exception:
        return False


def _composer_kind(path: str, size: int, mtime: float) -> str | None:
    # Cached like the trace sniff.
    return _composer_cache.get_or_make((path, size, mtime), lambda: composer_kind(path))


def looks_like_trace_head(head: bytes) -> bool:
    """Whether the first bytes of a JSON document look like a Chrome trace."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{"):
        return b'"traceEvents"' in text
    if text.startswith(b"["):
        rest = text[1:].lstrip(b" \t\r\n")
        return rest.startswith(b"{") and _PH_KEY_RE.search(rest) is not None
    return False
