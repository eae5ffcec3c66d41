"""A group of recordings: `{logdir}/{group}/recordings.json` names the runs
right below it that record one configuration several times (see
docs/pipeline_format.md, "Groups of recordings").

`tb-pipeline record --repeat N` writes it before the first recording and
rewrites it after each; a person may write one by hand (only `version` and
`recordings` are required). Shared by the launcher, which writes it, and
discovery (sources/), which reads it; nothing here imports other modules of
the package.
"""
from __future__ import annotations

import msgspec

GROUP_VERSION = 1
MANIFEST_FILE = "recordings.json"
# A manifest names a few directories; anything this large is not one.
MAX_MANIFEST_BYTES = 1 << 20


class GroupManifest(msgspec.Struct, kw_only=True):
    """Unknown fields are ignored, so a later writer may add some."""

    version: int
    # Directory names right below the group's directory, in recording order;
    # only the recordings whose command succeeded.
    recordings: list[str]
    command: list[str] = []
    start_time_s: float | None = None  # Unix seconds, when the first recording started
    # Every recording's directory -> its command's exit status, failed ones included.
    exit_status: dict[str, int] = {}
    repeat: int | None = None  # how many recordings were asked for


# Built at import: a type first decoded by two threads at once crashes msgspec (struct_types.py).
_MANIFEST = msgspec.json.Decoder(GroupManifest)


def decode_manifest(data: bytes) -> GroupManifest:
    """The manifest in `data`; ValueError saying what is wrong with it."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise ValueError(f"{MANIFEST_FILE} is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        manifest = _MANIFEST.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{MANIFEST_FILE} is not a group manifest: {exc}") from None
    if manifest.version != GROUP_VERSION:
        raise ValueError(f"{MANIFEST_FILE} has version {manifest.version}; this version reads {GROUP_VERSION}")
    seen: set[str] = set()
    for name in manifest.recordings:
        if not name or name in (".", "..") or any(c in name for c in "/\\\x00"):
            raise ValueError(f"{MANIFEST_FILE} names {name!r}, which is not a directory name right below the group")
        if name in seen:
            raise ValueError(f"{MANIFEST_FILE} names {name!r} twice")
        seen.add(name)
    return manifest


def encode_manifest(manifest: GroupManifest) -> bytes:
    return msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"
