"""Notices said once per `tb-pipeline record` command, not once per process.

`--repeat N` runs the script N times, each a process of its own: a notice
about the environment ("gilknocker is not installed") would be printed N
times. The launcher names a file (`TB_PIPELINE_SAID_FILE`) that every
recording's process shares: a notice's key is appended to it when the notice
is printed, and a notice whose key is there already is not printed again.
Without the file (a script using the Recorder itself) a notice is said once
per process.
"""
from __future__ import annotations

import os
import sys

ENV_SAID_FILE = "TB_PIPELINE_SAID_FILE"
_said: set[str] = set()


def say_once(key: str, message: str) -> None:
    """Prints `message` (one line) on stderr unless this command said `key` already."""
    if key in _said:
        return
    _said.add(key)
    path = os.environ.get(ENV_SAID_FILE)
    if path:
        try:
            with open(path, "a+", encoding="utf-8") as f:
                f.seek(0)
                if key in f.read().split():
                    return
                f.write(key + "\n")
        except OSError:
            pass  # no shared file after all: said once for this process
    print(message, file=sys.stderr)
