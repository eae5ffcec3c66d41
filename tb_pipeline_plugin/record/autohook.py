"""Hooks installed before the user's script runs (`tb-pipeline record`).

The launcher puts `record/boot/` on PYTHONPATH; its sitecustomize.py calls
`install()`, configured by environment variables:

    TB_PIPELINE_LOGDIR       where to write (required)
    TB_PIPELINE_RUN          run name (default: timestamp-host)
    TB_PIPELINE_HEADSPACE    N > 0: loaders replay their first N batches
    TB_PIPELINE_HOST_INTERVAL_S   host sampling period (default 1; 0 disables)
    TB_PIPELINE_SPDL_INTERVAL_S   SPDL interval stats period (default 1)
    TB_PIPELINE_COMMAND      the launched command line (JSON list), for the run record
    TB_PIPELINE_TRACE_DIR    where torch.profiler's tensorboard_trace_handler writes
                             instead of the script's directory (record --repeat; trace_dir.py)
    TB_PIPELINE_PROFILE      a schedule: torch.profiler traces of a few steps into the run
                             (record --profile; profiling.py)
    TB_PIPELINE_SAID_FILE    notices said once for the whole command (once.py)
"""
from __future__ import annotations

import atexit
import json
import os
import sys

from ..import_hook import when_imported
from . import profiling, trace_dir

ENV_LOGDIR = "TB_PIPELINE_LOGDIR"
ENV_RUN = "TB_PIPELINE_RUN"
ENV_HEADSPACE = "TB_PIPELINE_HEADSPACE"
ENV_HOST_INTERVAL = "TB_PIPELINE_HOST_INTERVAL_S"
ENV_SPDL_INTERVAL = "TB_PIPELINE_SPDL_INTERVAL_S"
ENV_COMMAND = "TB_PIPELINE_COMMAND"
# Set by the first process that installs: its children (DataLoader workers,
# subprocesses) see it and stay quiet, so one run has one recorder.
ENV_OWNER = "TB_PIPELINE_RECORDER_PID"

_recorder = None


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        return float(raw) if raw.strip() else default
    except ValueError:
        print(f"tb-pipeline: ignoring {name}={raw!r} (not a number)", file=sys.stderr)
        return default


def install():
    # Before the checks below: every process of the recording redirects its
    # traces, not only the one that records statistics.
    trace_dir.install()
    if os.environ.get("TB_PIPELINE_DIAGNOSTIC_MODE") == "1":
        from tb_pipeline_plugin.diagnose.hooks import install as install_diagnostic
        install_diagnostic()
        return
    global _recorder
    logdir = os.environ.get(ENV_LOGDIR)
    owner = os.environ.get(ENV_OWNER)
    if not logdir or _recorder is not None or (owner and owner != str(os.getpid())):
        return None
    os.environ[ENV_OWNER] = str(os.getpid())
    from .recorder import Recorder

    try:
        command = json.loads(os.environ.get(ENV_COMMAND, "null")) or sys.argv
    except ValueError:
        command = sys.argv
    headspace = int(_float_env(ENV_HEADSPACE, 0))
    host_interval = _float_env(ENV_HOST_INTERVAL, 1.0)
    spdl_interval = _float_env(ENV_SPDL_INTERVAL, 1.0)
    rec = Recorder(logdir, os.environ.get(ENV_RUN) or None, host_interval_s=host_interval or None,
                   headspace=max(headspace, 0), source="launcher", command=command)
    _recorder = rec
    launcher_profiler = profiling.from_env(rec)
    atexit.register(_close, rec, launcher_profiler)
    # The launcher's profiler (if any) starts with the first loop it times.
    loop_start = launcher_profiler.begin if launcher_profiler is not None else _nothing
    when_imported("torch.utils.data.dataloader", lambda m: _patch_dataloader(m, rec, loop_start))
    when_imported("spdl.pipeline", lambda m: _patch_spdl(rec, spdl_interval, loop_start))
    return rec


def _nothing() -> None:
    pass


def _close(rec, launcher_profiler) -> None:
    if launcher_profiler is not None:
        launcher_profiler.closing = True
    rec.close()  # ends the last step; the profiler stops at its boundary
    if launcher_profiler is not None:
        launcher_profiler.finish()


def _patch_dataloader(module, rec, loop_start) -> None:
    cls = module.DataLoader
    if getattr(cls.__iter__, "_tb_pipeline", False):
        return
    original = cls.__iter__

    def __iter__(self):
        loop_start()
        return rec.wrap(self, make_iter=lambda: original(self))

    __iter__._tb_pipeline = True
    cls.__iter__ = __iter__


def _patch_spdl(rec, interval_s: float, loop_start) -> None:
    rec.record_spdl(interval_s)
    try:
        from spdl.pipeline import Pipeline
    except ImportError:
        return
    if getattr(Pipeline.get_iterator, "_tb_pipeline", False):
        return
    original = Pipeline.get_iterator

    def get_iterator(self, *args, **kwargs):
        # The foreground loop's wait for the pipeline's next item is its data wait.
        loop_start()
        return rec.wrap(self, headspace=0, make_iter=lambda: original(self, *args, **kwargs))

    get_iterator._tb_pipeline = True
    Pipeline.get_iterator = get_iterator
