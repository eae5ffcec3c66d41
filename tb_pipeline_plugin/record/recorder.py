"""Recorder: step timings from inside a training loop, at a few µs a step.

A step runs from the moment the loop asks the loader for its batch to the
moment it asks for the next one:

    data_wait  time inside the loader's next()
    callbacks  time inside `callback(name)` blocks, by name
    compute    the rest, up to an explicit `step()` mark (or the next request)
    other      after `step()` until the next request (evaluation, checkpoints)
"""
from __future__ import annotations

import os
import socket
import sys
import time
from importlib import metadata

from ..errors import MissingExtra
from ..formats.pipeline import LoopEnd, RunEnd, RunMeta, StepRecord
from .device_clock import DeviceClock
from .host import HostSampler
from .iterators import HeadspaceIter, TimedIter, for_loader
from .writer import DEFAULT_FLUSH_INTERVAL_S, StatsWriter, run_name_default, stats_path

_perf = time.perf_counter


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


class _Timed:
    """`with rec.callback("name"):` and `@rec.callback("name")`. One per
    name, reused; a stack of start times makes nesting the same name safe."""

    __slots__ = ("_rec", "_name", "_t0")

    def __init__(self, rec: "Recorder", name: str):
        self._rec = rec
        self._name = name
        self._t0: list[float] = []

    def __enter__(self):
        self._t0.append(_perf())
        return self

    def __exit__(self, *exc):
        t1 = _perf()
        t0 = self._t0.pop()
        self._rec._add_callback(self._name, t0, t1 - t0)
        return False

    def __call__(self, fn):
        name, rec = self._name, self._rec

        def timed(*args, **kwargs):
            t0 = _perf()
            try:
                return fn(*args, **kwargs)
            finally:
                rec._add_callback(name, t0, _perf() - t0)

        timed.__wrapped__ = fn
        timed.__name__ = getattr(fn, "__name__", "timed")
        timed.__doc__ = getattr(fn, "__doc__", None)
        return timed


class Recorder:
    """Writes `{logdir}/{run}/pipeline/{host}_{pid}.jsonl`.

    logdir / run: where (run defaults to a timestamp and the host name).
    host_interval_s: host sampler period; None or 0 disables the sampler.
    gil_contention: the host sampler also samples this process's GIL
        contention (record/gil_contention.py; needs the `gil` extra).
    headspace: > 0 makes `wrap` cache the loader's first N batches and replay
        them, so the run measures the step rate with data loading taken out.
    flush_interval_s: how often records reach the file (0: each at once;
        see writer.py for the trade-off).
    profiler: a started `torch.profiler.profile`; `prof.step()` is called at
        each step boundary. Give it `on_trace_ready=rec.trace_handler()` so the
        trace lands in the same run directory as the statistics.
    """

    def __init__(self, logdir: str, run: str | None = None, *, host_interval_s: float | None = 1.0,
                 headspace: int = 0, profiler=None, source: str = "recorder", command: list[str] | None = None,
                 flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S, gil_contention: bool = True):
        if headspace < 0:
            raise ValueError("headspace must be >= 0 batches")
        self.logdir = logdir
        self.run = run or run_name_default()
        self.run_dir = os.path.join(logdir, self.run)
        self.headspace = int(headspace)
        self.profiler = profiler
        self.writer = StatsWriter(stats_path(logdir, self.run), flush_interval_s)
        # Wall time of a perf_counter reading: one time.time() at start, then
        # the monotonic clock (cheaper and immune to clock steps).
        self._wall0 = time.time() - _perf()
        self._step = 0
        self._open = False
        self._last_end = -1.0  # perf time the last step closed
        self._closed = False
        self._start = 0.0
        self._wait = 0.0
        self._mark = -1.0
        self._cb: dict[str, float] = {}
        self._cb_pre = 0.0  # before the step's batch request (e.g. epoch-start callbacks)
        self._cb_before = 0.0  # between the batch and the step() mark
        self._cb_after = 0.0  # after the mark
        self._pending_start = -1.0
        # A loop ended its profiler step without opening the next (_end_profiler_step).
        self._profiler_between = False
        self._batch_size: int | None = None
        self._tokens: int | None = None
        self._cached = False
        self._loader = 0
        self._loaders: dict[tuple, int] = {}
        self.caches: dict[tuple, list] = {}
        self._timers: dict[str, _Timed] = {}
        self._loader_cpu = False
        self._device = DeviceClock()
        self.writer.write(RunMeta(
            wall_time_s=time.time(), command=list(command if command is not None else sys.argv), pid=os.getpid(),
            python=sys.version.split()[0], cpu_count=os.cpu_count() or 1, hostname=socket.gethostname(),
            torch=_version("torch"), spdl=_version("spdl") or _version("spdl_core"), source=source,
            headspace_batches=self.headspace, host_interval_s=host_interval_s or None,
        ))
        self.sampler = HostSampler(self.writer.write, host_interval_s, gil=gil_contention).start() if host_interval_s else None

    # -- public API -------------------------------------------------------
    def wrap(self, iterable, headspace: int | None = None, make_iter=None):
        """An iterator over `iterable` that times each next() as data wait.
        With headspace (here or in the constructor) and a sized iterable, the
        first N batches are cached and replayed for the rest of every epoch.
        `make_iter` creates the real iterator (default `iter(iterable)`)."""
        n = self.headspace if headspace is None else headspace
        if not self._loader_cpu and type(iterable).__module__.startswith("torch.utils.data"):
            self.record_loader_cpu()
        key = _loader_key(iterable)
        loader = self._loaders.setdefault(key, len(self._loaders))
        if n > 0:
            try:
                length = len(iterable)
            except TypeError:
                print("tb-pipeline: headspace needs a loader with len(); recording it normally",
                      file=sys.stderr)
            else:
                cache = self.caches.setdefault(key, [])
                return for_loader(HeadspaceIter, iterable)(self, iterable, loader, cache, n, length, make_iter)
        return for_loader(TimedIter, iterable)(self, iterable, loader, make_iter)

    def callback(self, name: str) -> _Timed:
        """Times a named callback: a context manager and a decorator."""
        timer = self._timers.get(name)
        if timer is None:
            timer = self._timers[name] = _Timed(self, name)
        return timer

    def step(self) -> None:
        """Marks the end of the step's compute; time until the next batch
        request is `other`. Optional: without it compute runs to the request."""
        if self._open and self._mark < 0:
            self._mark = _perf()

    def record_spdl(self, interval_s: float = 1.0) -> None:
        """Record the stage statistics of SPDL pipelines built from now on
        (through SPDL's default hook and queue classes; process-wide, so the
        latest recorder to call this receives them)."""
        try:
            import spdl.pipeline  # noqa: F401
        except ImportError:
            raise MissingExtra("SPDL", "spdl", "record_spdl") from None
        from . import spdl_hooks

        spdl_hooks.install(self.writer.write, interval_s)

    def record_loader_cpu(self) -> None:
        """CPU and wall time of DataLoader fetches and collate_fn calls in
        this process and its loader workers (record/loader_clocks.py),
        written when the recorder closes."""
        from . import loader_clocks

        self._loader_cpu = loader_clocks.install(workers=True)

    def trace_handler(self):
        """`on_trace_ready` for torch.profiler writing into this run's directory."""
        try:
            import torch.profiler
        except ImportError:
            raise MissingExtra("torch", "record", "trace_handler") from None

        return torch.profiler.tensorboard_trace_handler(self.run_dir)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # A step still open holds the epilogue (no loop end was seen): it ends
        # here, and the readers judge whether it is a step (readers/records.py).
        last_open = self._open
        if self._open:
            self._close_step(self._mark if self._mark >= 0 else _perf())
            if self.profiler is not None:
                self.profiler.step()
            for record in self._device.loop_ended(self._loader):
                self.writer.write(record)
        now = _perf()
        epilogue = 0.0 if last_open or self._last_end < 0 else now - self._last_end
        self.writer.write(RunEnd(wall_time_s=self._wall0 + now, steps=self._step, epilogue_s=epilogue,
                                 last_step_open=last_open))
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler = None
        if self._loader_cpu:
            from . import loader_clocks

            for record in loader_clocks.final_records():
                self.writer.write(record)
        self.writer.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _loop_end(self, how: str, loader: int) -> None:
        """A loader's iterator is exhausted or dropped by the loop: its last
        step ends now (a `break` leaves no next request to end it), so what
        follows the loop is no step's time."""
        if self._closed:
            return
        if self._open and self._loader == loader:
            self._close_step(self._mark if self._mark >= 0 else _perf())
            if self.profiler is not None:
                self._end_profiler_step()
        for record in self._device.loop_ended(loader):
            self.writer.write(record)
        self.writer.write(LoopEnd(wall_time_s=self._wall0 + _perf(), steps=self._step, how=how, loader=loader))

    def _end_profiler_step(self) -> None:
        """Ends the profiler's running ProfilerStep without opening the next
        one (torch's `prof.step()` does both): the time after a loop is no
        step's, and a ProfilerStep opened there would be an empty step in the
        trace. The next loop's first request steps the profiler."""
        prof = getattr(self.profiler, "prof", self.profiler)  # the launcher's wrapper holds torch's profile
        running = getattr(prof, "step_rec_fn", None)
        if running is not None:
            running.__exit__(None, None, None)
            prof.step_rec_fn = None
        self._profiler_between = True

    # -- hot path (called by the iterators and timers) --------------------
    def _add_callback(self, name: str, t0: float, dt: float) -> None:
        cb = self._cb
        cb[name] = cb.get(name, 0.0) + dt
        if not self._open:
            # Before the first batch request of a step: the step starts here.
            if self._pending_start < 0:
                self._pending_start = t0
            self._cb_pre += dt
        elif self._mark < 0:
            self._cb_before += dt
        else:
            self._cb_after += dt

    def _begin_request(self, t: float) -> float:
        """Closes the running step at `t` and steps the profiler; returns the
        next step's start."""
        if self._open or self._profiler_between:
            if self._open:
                self._close_step(t)
            self._profiler_between = False
            if self.profiler is not None:
                self.profiler.step()
                # prof.step() may export a trace: the profiler's cost, in
                # neither step nor its data wait (its measured cost:
                # benchmarks/README.md, `bench_record.py`).
                t = _perf()
        start = self._pending_start
        self._pending_start = -1.0
        return t if start < 0 else start

    def _open_step(self, start: float, t_req: float, t_got: float, batch, loader: int, cached: bool) -> None:
        for record in self._device.step_started(self._step, loader):
            self.writer.write(record)
        self._open = True
        self._start = start
        self._wait = t_got - t_req
        self._mark = -1.0
        self._loader = loader
        self._cached = cached
        self._batch_size, self._tokens = batch_counts(batch)

    def _close_step(self, end: float) -> None:
        self._open = False
        mark = self._mark if self._mark >= 0 else end
        start = self._start
        wait = self._wait
        compute = mark - start - wait - self._cb_pre - self._cb_before
        other = end - mark - self._cb_after
        # A plain tuple here; the writer's flusher builds the record (keeps
        # the Struct construction off the training loop).
        self.writer.write_deferred(_step_record, (
            self._step, self._wall0 + start, end - start, wait, compute if compute > 0 else 0.0,
            other if other > 0 else 0.0, self._cb, self._batch_size, self._tokens, self._cached, self._loader,
        ))
        self._step += 1
        self._last_end = end
        self._cb = {}
        self._cb_pre = self._cb_before = self._cb_after = 0.0


def _step_record(step, wall_start_s, duration_s, data_wait_s, compute_s, other_s, callbacks_s, batch_size,
                 tokens, cached, loader) -> StepRecord:
    return StepRecord(step=step, wall_start_s=wall_start_s, duration_s=duration_s, data_wait_s=data_wait_s,
                      compute_s=compute_s, other_s=other_s, callbacks_s=callbacks_s, batch_size=batch_size,
                      tokens=tokens, cached=cached, loader=loader)


def _loader_key(iterable) -> tuple:
    """Which loader this is, across epochs: loops often build a new
    DataLoader each epoch, so identity would split one loader in many. Same
    class, same dataset class and same length count as the same loader; an
    evaluation loader beside the training one usually differs in length."""
    try:
        length = len(iterable)
    except TypeError:
        length = None
    dataset = getattr(iterable, "dataset", None)
    return type(iterable).__qualname__, type(dataset).__qualname__ if dataset is not None else None, length


def batch_counts(batch) -> tuple[int | None, int | None]:
    """(samples, tokens) of a batch, if cheap to see: samples are the
    leading dimension of its first tensor-like leaf; tokens the element
    count of its first 2-D integer tensor (token ids), looked for among the
    first few leaves only."""
    return batch_size(batch), _tokens(batch)


def _tokens(batch, depth: int = 0) -> int | None:
    if depth > 3:
        return None
    kind = type(batch)
    if kind is tuple or kind is list:
        leaves = batch[:4]
    elif kind is dict:
        leaves = list(batch.values())[:4]
    else:
        shape, dtype = getattr(batch, "shape", None), getattr(batch, "dtype", None)
        try:
            if shape is None or len(shape) != 2 or dtype is None or getattr(dtype, "is_floating_point", True) \
                    or getattr(dtype, "is_complex", False) or str(dtype) == "torch.bool":
                return None
            return int(shape[0]) * int(shape[1])
        except (TypeError, ValueError):
            return None
    for leaf in leaves:
        n = _tokens(leaf, depth + 1)
        if n is not None:
            return n
    return None


def batch_size(batch) -> int | None:
    """Leading dimension of the batch's first tensor-like leaf, if cheap to see."""
    for _ in range(4):
        kind = type(batch)
        if kind is tuple or kind is list:
            if not batch:
                return None
            batch = batch[0]
        elif kind is dict:
            if not batch:
                return None
            batch = next(iter(batch.values()))
        else:
            shape = getattr(batch, "shape", None)
            try:
                return int(shape[0]) if shape is not None and len(shape) else None
            except (TypeError, ValueError):
                return None
    return None
