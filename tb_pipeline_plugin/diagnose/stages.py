"""Stage descriptions the engine sweeps."""
from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from typing import Any, Callable

MAP, REGROUP = "map", "regroup"


@dataclass
class Stage:
    """A named stage.

    kind "map": fn(item) -> item, swept over concurrency levels.
    kind "regroup": fn(list_of_items) -> list_of_items, applied once while the
    next stage's inputs are cached and never swept (batching, aggregation,
    flattening: stateful, so running it concurrently means nothing).
    `flatten`: a map stage whose call returns several outputs (a generator).
    `process_init(worker_id, num_workers)`: what the pipeline's own worker
    processes run before their first call (DataLoader: one intra-op thread,
    then worker_init_fn), run in each process of the process levels;
    `process_intra_op_threads` the torch threads it sets (0: inherited).
    """

    name: str
    fn: Callable
    kind: str = MAP
    flatten: bool = False
    process_init: Callable[[int, int], None] | None = None
    process_intra_op_threads: int = 0

    def call(self) -> Callable[[Any], Any]:
        """The per-item callable the sweep times: async functions are run to
        completion and generators are drained, so the time is the work's."""
        fn = self.fn
        if inspect.iscoroutinefunction(fn):
            return _RunAsync(fn)
        if inspect.isasyncgenfunction(fn):
            return _DrainAsync(fn)
        if self.flatten or inspect.isgeneratorfunction(fn):
            return Drain(fn)
        return fn


class _RunAsync:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, item):
        return asyncio.run(self.fn(item))


class _DrainAsync:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, item):
        async def drain():
            return [x async for x in self.fn(item)]
        return asyncio.run(drain())


class Drain:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, item):
        return list(self.fn(item))


def flattens(call: Callable) -> bool:
    """Whether each call of this per-item callable returns several next inputs."""
    return isinstance(call, (Drain, _DrainAsync))


def regroup(name: str, fn: Callable[[list], list]) -> Stage:
    return Stage(name, fn, kind=REGROUP)


def batches_of(size: int, drop_last: bool = False) -> Callable[[list], list]:
    def group(items: list) -> list:
        out = [items[i:i + size] for i in range(0, len(items), size)]
        return out[:-1] if drop_last and out and len(out[-1]) < size else out
    return group


def as_stage(spec: Any) -> Stage:
    if isinstance(spec, Stage):
        return spec
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and callable(spec[1]):
        return Stage(spec[0], spec[1], flatten=inspect.isgeneratorfunction(spec[1]))
    raise TypeError(f"a stage is (name, function) or Stage, got {spec!r}")
