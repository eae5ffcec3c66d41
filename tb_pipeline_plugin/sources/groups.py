"""Which run directories are groups of recordings (`recordings.json`,
formats/group.py) and which runs are their members.

Pure over names and bytes: `sources/logdir.py` lists and reads the files and
hands them here, so remote logdirs work the same. A manifest that cannot be
read gives a reason, never an exception: discovery must go on.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..bounded_cache import BoundedCache
from ..formats.group import MANIFEST_FILE, MAX_MANIFEST_BYTES, GroupManifest, decode_manifest

# Discovery repeats on every `runs` request: a manifest is decoded again only
# when its size or mtime changed.
_manifest_cache: BoundedCache[tuple[str, int, float], GroupManifest | str] = BoundedCache(4096)


@dataclass(frozen=True)
class Membership:
    """What a valid manifest makes of its directory."""

    recordings: list[str]  # the member runs' full names that exist, in manifest order
    notes: list[str]  # listed recordings left out, and why


def load_manifest(path: str, size: int, mtime: float, read: Callable[[str, int], bytes]) -> GroupManifest | str:
    """The manifest at `path`, or why it is not one. `read(path, limit)`
    returns at most `limit` bytes of the file."""
    return _manifest_cache.get_or_make((path, size, mtime), lambda: _decoded(path, read))


def _decoded(path: str, read: Callable[[str, int], bytes]) -> GroupManifest | str:
    result: GroupManifest | str
    try:
        data = read(path, MAX_MANIFEST_BYTES + 1)
    except Exception as exc:  # local OSError, or a remote filesystem's own errors
        result = f"{MANIFEST_FILE} cannot be read: {getattr(exc, 'strerror', None) or exc}"
    else:
        try:
            result = decode_manifest(data)
        except ValueError as exc:
            result = str(exc)
    return result


def member_name(group: str, recording: str) -> str:
    """A recording's run name: its directory below the group's."""
    return recording if group == "." else f"{group}/{recording}"


def membership(group: str, manifest: GroupManifest, runs: Collection[str],
               files: Collection[str] = ()) -> Membership:
    """`files`: the names of the files (not directories) in the group's directory."""
    members, notes = [], []
    for recording in manifest.recordings:
        name = member_name(group, recording)
        if recording in files:
            # A hand-written manifest naming itself, or a trace beside it: a recording is a directory.
            notes.append(f"{MANIFEST_FILE} lists {recording!r}, a file, not a recording's directory: "
                         "left out of the group")
        elif name in runs:
            members.append(name)
        else:
            notes.append(f"{MANIFEST_FILE} lists {recording!r}, which holds no run "
                         "(no trace, statistics or diagnostic results): left out of the group")
    return Membership(members, notes)


def children(group: str, runs: Collection[str]) -> list[str]:
    """The runs right below the directory of `group`."""
    if group == ".":
        return [r for r in runs if r != "." and "/" not in r]
    prefix = group + "/"
    return [r for r in runs if r.startswith(prefix) and "/" not in r[len(prefix):]]
