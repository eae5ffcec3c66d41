"""`tb-pipeline record --repeat N --run NAME -- CMD`: CMD recorded N times,
one process after the other, into `{logdir}/NAME/r1 ... rN`, with the group
manifest `NAME/recordings.json` (formats/group.py) naming the recordings
that succeeded.

One configuration recorded several times is what tells a real difference
between two configurations from the spread between runs of one; each
recording is an ordinary run (statistics, and the script's profiler traces
redirected into it: trace_dir.py).
"""
from __future__ import annotations

import os
import shutil
import sys
import time

from ..formats.group import GROUP_VERSION, MANIFEST_FILE, GroupManifest, encode_manifest
from .child import run_child
from .trace_dir import ENV_TRACE_DIR


# A shell's status for a command ended by SIGINT.
EXIT_INTERRUPTED = 128 + 2


def recording_dir_name(index: int) -> str:
    """The directory of the `index`-th recording (1-based)."""
    return f"r{index}"


def run_repeated(command: list[str], logdir: str, group: str, repeat: int, env_for) -> int:
    """Records `command` `repeat` times; `env_for(run)` is the recording
    environment of run `run`. Returns 0 when every recording succeeded, else
    the first failure's exit status (1 when that is not a valid one)."""
    if repeat < 1:
        raise ValueError("--repeat must be >= 1")
    if shutil.which(command[0]) is None:
        # Found out before the manifest is written: a typo leaves no group behind.
        raise ValueError(f"cannot run {command[0]!r}: not found, or not an executable file")
    group_dir = os.path.join(logdir, group)
    _refuse_existing(group_dir, repeat)
    manifest = GroupManifest(version=GROUP_VERSION, recordings=[], command=list(command),
                             start_time_s=time.time(), repeat=repeat)
    _write(group_dir, manifest)
    first_failure = 0
    for index in range(1, repeat + 1):
        name = recording_dir_name(index)
        run_dir = os.path.abspath(os.path.join(group_dir, name))
        env = dict(env_for(f"{group}/{name}"), **{ENV_TRACE_DIR: run_dir})
        print(f"tb-pipeline: recording {index} of {repeat} into {run_dir}", file=sys.stderr)
        try:
            status, stopped_by = run_child(command, env)
        except FileNotFoundError as exc:
            raise ValueError(f"cannot run {command[0]!r}: {exc.strerror}") from None
        if stopped_by:
            # Ctrl-C or SIGTERM ends the group, not only this recording; what finished stays listed.
            manifest.exit_status[name] = EXIT_INTERRUPTED
            _write(group_dir, manifest)
            print(f"tb-pipeline: interrupted: recording {name} left out; {len(manifest.recordings)} of "
                  f"{repeat} recordings kept in group {group_dir}", file=sys.stderr)
            return EXIT_INTERRUPTED
        manifest.exit_status[name] = status
        if status == 0:
            manifest.recordings.append(name)
        else:
            print(f"tb-pipeline: recording {name} failed (exit status {status}): left out of "
                  f"{os.path.join(group_dir, MANIFEST_FILE)}", file=sys.stderr)
            first_failure = first_failure or (status if 0 < status < 256 else 1)
        _write(group_dir, manifest)
    kept = len(manifest.recordings)
    print(f"tb-pipeline: {kept} of {repeat} recordings kept in group {group_dir}", file=sys.stderr)
    return first_failure


def _refuse_existing(group_dir: str, repeat: int) -> None:
    """A second `--repeat` into the same group would mix two sets of
    recordings under one manifest: refused, nothing written."""
    taken = [p for p in [MANIFEST_FILE] + [recording_dir_name(i) for i in range(1, repeat + 1)]
             if os.path.exists(os.path.join(group_dir, p))]
    if taken:
        raise ValueError(f"{group_dir} already holds {', '.join(taken)}: pick another --run")


def _write(group_dir: str, manifest: GroupManifest) -> None:
    # Replaced whole, so TensorBoard reading the logdir meanwhile never sees half a file.
    os.makedirs(group_dir, exist_ok=True)
    path = os.path.join(group_dir, MANIFEST_FILE)
    tmp = os.path.join(group_dir, f".{MANIFEST_FILE}.{os.getpid()}.tmp")  # hidden: discovery skips it
    with open(tmp, "wb") as f:
        f.write(encode_manifest(manifest))
    os.replace(tmp, path)
