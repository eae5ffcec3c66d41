"""Sends the script's `torch.profiler.tensorboard_trace_handler(dir)` traces
into the recording's run directory (`TB_PIPELINE_TRACE_DIR`).

`tb-pipeline record --repeat N` sets it for each recording: the script names
one directory for all N, where their traces would mix and no run could tell
its own; redirected, each recording holds its trace beside its statistics.
Plain `record` does not set it (the traces stay where the script puts them,
as before the launcher existed).

Installed in every process of the recording, not only the one that records
statistics: the profiled process may be a child (a `torchrun` worker).
"""
from __future__ import annotations

import functools
import os
import sys

from ..import_hook import when_imported

ENV_TRACE_DIR = "TB_PIPELINE_TRACE_DIR"
_MODULES = ("torch.profiler.profiler", "torch.profiler")


def install() -> None:
    target = os.environ.get(ENV_TRACE_DIR)
    if target:
        # torch.profiler re-exports the handler of torch.profiler.profiler:
        # a script may take it from either, so both names are wrapped.
        when_imported("torch.profiler", lambda module: _patch(target))


def _patch(target: str) -> None:
    wrapped: dict[int, object] = {}
    for name in _MODULES:
        module = sys.modules.get(name)
        original = getattr(module, "tensorboard_trace_handler", None)
        if original is None or getattr(original, "_tb_pipeline", False):
            continue
        if id(original) not in wrapped:
            wrapped[id(original)] = _redirecting(original, target)
        setattr(module, "tensorboard_trace_handler", wrapped[id(original)])


def _redirecting(original, target: str):
    told: set[str] = set()

    @functools.wraps(original)
    def tensorboard_trace_handler(dir_name=None, *args, **kwargs):
        if dir_name is not None and dir_name != target and dir_name not in told:
            told.add(dir_name)
            print(f"tb-pipeline: torch.profiler traces for {dir_name!r} go to {target} "
                  "(this recording's run directory)", file=sys.stderr)
        return original(target, *args, **kwargs)

    tensorboard_trace_handler._tb_pipeline = True
    return tensorboard_trace_handler
