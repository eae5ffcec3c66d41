"""The filesystem layer of discovery and loading: local paths through `os`,
remote ones (`gs://`, `s3://`, fsspec) through TensorBoard's gfile, the one
module of the package that imports it; the logdir's walk; names as text.

Symlink containment is enforced where it is meaningful, on the local
filesystem.
"""
from __future__ import annotations

import codecs
import os

from tensorboard.compat import tf

from ..formats.diagnostic import DIAGNOSTIC_DIR, RESULTS_FILE
from ..formats.pipeline import PIPELINE_DIR


def is_remote(path: str) -> bool:
    return "://" in path


def join(a: str, b: str) -> str:
    if is_remote(a):
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
def exists(path: str) -> bool:
    if not is_remote(path):
        return os.path.exists(path)
    try:
        return bool(tf.io.gfile.exists(path))
    except Exception:  # an unreachable remote logdir is simply empty for now
        return False


def isdir(path: str) -> bool:
    if not is_remote(path):
        return os.path.isdir(path)
    try:
        return bool(tf.io.gfile.isdir(path))
    except Exception:
        return False


def listdir(path: str) -> list[str]:
    try:
        if not is_remote(path):
            return os.listdir(path)
        # Object stores list sub-"directories" with a trailing slash.
        return [n.rstrip("/") for n in tf.io.gfile.listdir(path)]
    except Exception:  # unreadable directory: skip it, keep discovering the rest
        return []


def open_binary(path: str):
    """A binary file object for a local path or a remote URL (gs://, s3://, ...)."""
    if is_remote(path):
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def read_head(path: str, limit: int) -> bytes:
    with open_binary(path) as f:
        return f.read(limit)


def stat_file(path: str) -> tuple[int | None, float]:
    if not is_remote(path):
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


def walk(logdir: str):
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
    local = not is_remote(logdir)
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
                elif name == DIAGNOSTIC_DIR and stat_file(join(full, RESULTS_FILE))[0] is not None:
                    diagnostic_file = join(full, RESULTS_FILE)
                else:
                    subdirs.append(name)
            else:
                files.append(name)
                if stat is not None:
                    stats[name] = (full, *stat)
        yield parts, dirpath, files, stats, pipeline_dir, diagnostic_file
        for name in sorted(subdirs, reverse=True):
            stack.append((parts + (name,), join(dirpath, name), ancestors))


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
    for name in listdir(dirpath):
        if not name or name.startswith("."):
            continue
        full = join(dirpath, name)
        yield name, full, isdir(full), None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
