"""SPDL 0.8: turn a PipelineConfig (what PipelineBuilder.build receives) into
a chain of stages for the engine.

Pipe stages are swept; aggregate/disaggregate stages are stateful, so they
only regroup the cached items (as SPDL's own profiler runs them at
concurrency 1 only). Stages the engine cannot isolate (path variants,
subprocess regions, merges) end the chain, and the summary says why.
"""
from __future__ import annotations

import asyncio
import itertools
from typing import Any

from .stages import Stage, regroup


def _aggregate(op, drop_last: bool):
    def apply(items: list) -> list:
        out = []
        for item in items:
            emitted = op.accumulate(item)
            if emitted is not None:
                out.append(emitted)
        if not drop_last:
            last = op.flush()
            if last is not None:
                out.append(last)
        return out
    return apply


def _disaggregate(items: list) -> list:
    return [x for batch in items for x in batch]


class AsyncSource:
    """First n items of an async iterable, as a plain list."""

    def __init__(self, source, n: int):
        self.source, self.n = source, n

    def __iter__(self):
        async def take():
            out = []
            async for item in self.source:
                out.append(item)
                if len(out) >= self.n:
                    break
            return out
        return iter(asyncio.run(take()))


class _Unsupported(Exception):
    pass


def chain_from_config(cfg: Any, num_inputs: int) -> tuple[list[Stage], Any, str]:
    """(stages, source, note); note is non-empty when part of the pipeline
    could not be profiled."""
    from spdl.pipeline.defs import AggregateConfig, DisaggregateConfig, PipeConfig, SourceConfig

    src = cfg.src
    if not isinstance(src, SourceConfig):
        return [], [], f"{type(src).__name__} sources (merged pipelines) are not profiled"
    source = src.source
    if hasattr(source, "__aiter__") and not hasattr(source, "__iter__"):
        source = AsyncSource(source, num_inputs)
    elif src.continuous if hasattr(src, "continuous") else False:
        source = itertools.islice(source, num_inputs)
    stages: list[Stage] = []
    note = ""
    for pipe in cfg.pipes:
        if isinstance(pipe, PipeConfig):
            stages.append(Stage(pipe.name, pipe._args.op))
        elif isinstance(pipe, AggregateConfig):
            stages.append(regroup(pipe.name, _aggregate(pipe.op, pipe.drop_last)))
        elif isinstance(pipe, DisaggregateConfig):
            stages.append(regroup(pipe.name, _disaggregate))
        else:
            note = (f"stopped at {type(pipe).__name__} stage {getattr(pipe, 'name', '?')!r}: "
                    f"not profiled, nor the stages after it")
            break
    return stages, source, note
