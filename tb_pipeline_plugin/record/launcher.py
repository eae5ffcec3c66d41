"""`tb-pipeline record --logdir DIR [--run NAME] [--headspace N] [--repeat N] [--profile [SCHEDULE]] -- CMD ...`:
run CMD with the recording hooks installed, no change to the script
(`--repeat`: N times, a group of recordings; record/repeat.py; `--profile`:
torch.profiler traces of a few steps too, record/profiling.py)."""
from __future__ import annotations

import json
import os
import sys
import tempfile

from . import autohook, profiling
from .child import run_child
from .once import ENV_SAID_FILE
from .repeat import run_repeated
from .trace_dir import ENV_TRACE_DIR
from .writer import run_name_default

BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot")


def record_env(logdir: str, run: str, headspace: int = 0, host_interval_s: float = 1.0,
               spdl_interval_s: float = 1.0, command: list[str] | None = None,
               base: dict | None = None, profile: str | None = None) -> dict:
    """The environment that makes a Python process record into {logdir}/{run}
    (`profile`: a --profile schedule, traces too)."""
    env = dict(os.environ if base is None else base)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [BOOT_DIR, package_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[autohook.ENV_LOGDIR] = os.path.abspath(logdir)
    env[autohook.ENV_RUN] = run
    env[autohook.ENV_HEADSPACE] = str(int(headspace))
    env[autohook.ENV_HOST_INTERVAL] = str(host_interval_s)
    env[autohook.ENV_SPDL_INTERVAL] = str(spdl_interval_s)
    env[autohook.ENV_COMMAND] = json.dumps(list(command or []))
    env.pop(autohook.ENV_OWNER, None)
    if profile is None:
        env.pop(profiling.ENV_PROFILE, None)
    else:
        env[profiling.ENV_PROFILE] = profile or "default"
    # Set per recording by --repeat only: one inherited from an enclosing
    # recording must not redirect this one's traces.
    env.pop(ENV_TRACE_DIR, None)
    return env


def run_recorded(command: list[str], logdir: str, run: str | None = None, headspace: int = 0,
                 host_interval_s: float = 1.0, spdl_interval_s: float = 1.0, repeat: int | None = None,
                 profile: str | None = None) -> int:
    """Runs `command` recording into {logdir}/{run}; returns its exit status.
    With `repeat`: N recordings into {logdir}/{run}/r1 ... rN, a group.
    With `profile` (a SCHEDULE, "" for the default): torch.profiler traces
    of the schedule's steps into each recording's directory."""
    if not command:
        raise ValueError("no command to run: tb-pipeline record --logdir DIR -- python train.py ...")
    if headspace < 0:
        raise ValueError("--headspace must be >= 0")
    if host_interval_s < 0 or spdl_interval_s <= 0:
        raise ValueError("intervals must be > 0 seconds (host interval 0 disables host sampling)")
    if profile is not None:
        profiling.parse_schedule(profile)  # a bad SCHEDULE stops here, before anything runs
    run = run or run_name_default()
    # Notices about the environment, said once for the whole command (once.py).
    fd, said = tempfile.mkstemp(prefix="tb-pipeline-said-")
    os.close(fd)
    base = dict(os.environ, **{ENV_SAID_FILE: said})
    try:
        if repeat is not None:
            return run_repeated(command, logdir, run, repeat, lambda member: record_env(
                logdir, member, headspace, host_interval_s, spdl_interval_s, command, base=base, profile=profile))
        env = record_env(logdir, run, headspace, host_interval_s, spdl_interval_s, command, base=base,
                         profile=profile)
        print(f"tb-pipeline: recording into {os.path.join(logdir, run)}", file=sys.stderr)
        try:
            return run_child(command, env)[0]
        except FileNotFoundError as exc:
            raise ValueError(f"cannot run {command[0]!r}: {exc.strerror}") from None
    finally:
        os.unlink(said)
