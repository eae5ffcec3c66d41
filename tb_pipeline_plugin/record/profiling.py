"""`tb-pipeline record --profile [SCHEDULE]`: torch.profiler traces with no code change.

The launcher's process starts `torch.profiler.profile` when the script first
iterates a DataLoader or an SPDL pipeline (the loops the Recorder already
times), gives it to the Recorder, which steps it at each step boundary
outside data wait and step time (recorder.py `_begin_request`), and writes
the traces into the run directory with `tensorboard_trace_handler`, beside
the pipeline statistics. Once the schedule is over the profiler is stopped
and detached: the rest of the run pays nothing for it.

A script that runs its own `torch.profiler.profile` (or the older
`torch.autograd.profiler.profile`) keeps it: starting one is seen, ours is then
never started (or stopped, if the script starts its own later), and a
`profiler` record in the statistics says whose profiler the run has.

SCHEDULE is `torch.profiler.schedule`'s keywords, `key=value` separated by
commas, over the defaults below: `wait=5,warmup=2,active=3,repeat=1`;
`memory=1` adds `profile_memory` (off by default: benchmarks/README.md,
"Traces from the launcher", measures its cost) and, on CUDA, the allocator's
history over the profiled window, dumped as a snapshot into the run's
directory (record/memory_history.py).
"""
from __future__ import annotations

import os
import sys
import time

from ..formats.pipeline import ProfilerRecord
from ..import_hook import when_imported
from .memory_history import MemoryHistory

ENV_PROFILE = "TB_PIPELINE_PROFILE"
DEFAULT_SCHEDULE = {"skip_first": 0, "wait": 1, "warmup": 1, "active": 3, "repeat": 1}
_FLAGS = {"memory": 0}


def parse_schedule(spec: str) -> dict[str, int]:
    """`"wait=5,active=2"` -> every key of DEFAULT_SCHEDULE and `memory`;
    ValueError naming what is wrong."""
    out = dict(DEFAULT_SCHEDULE, **_FLAGS)
    for part in (p.strip() for p in spec.split(",")):
        if not part or part == "default":
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in out:
            raise ValueError(f"--profile {spec!r}: {part!r} is not KEY=N with KEY one of {', '.join(out)}")
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"--profile {spec!r}: {key}={value!r} is not a whole number") from None
        if number < 0 or (key == "memory" and number > 1):
            raise ValueError(f"--profile {spec!r}: {key}={number} is out of range")
        out[key] = number
    if out["active"] < 1:
        raise ValueError(f"--profile {spec!r}: active must be at least 1 step")
    return out


def schedule_text(schedule: dict[str, int]) -> str:
    return ",".join(f"{k}={schedule[k]}" for k in DEFAULT_SCHEDULE)


def steps_needed(schedule: dict[str, int]) -> int | None:
    """Steps after which the schedule records nothing more (None: repeat=0, never)."""
    if schedule["repeat"] == 0:
        return None
    return schedule["skip_first"] + (schedule["wait"] + schedule["warmup"] + schedule["active"]) * schedule["repeat"]


class LauncherProfiler:
    """The launcher's profiler for one recording process. `begin()` at each
    loop's start (only the first one starts it); `finish()` at exit."""

    def __init__(self, rec, schedule: dict[str, int]):
        self.rec = rec
        self.schedule = schedule
        self.prof = None
        self.steps = 0
        self.traces_written = 0
        self.script_profiler = False
        self.done = False
        self.closing = False  # set at exit: the next boundary is the last
        self._discard = False
        self.memory_history = MemoryHistory(rec.run_dir, bool(schedule["memory"]))
        # torch.profiler.profile (`with profile(...)` calls start()) and the
        # older torch.autograd.profiler.profile, whose __enter__ torch.profiler
        # itself never calls.
        when_imported("torch.profiler.profiler", lambda m: self._watch(m.profile, "start"))
        when_imported("torch.autograd.profiler", lambda m: self._watch(m.profile, "__enter__"))

    # -- the script's own profiler -----------------------------------------
    def _watch(self, cls, method: str) -> None:
        original = getattr(cls, method)
        if getattr(original, "_tb_pipeline", False):
            return
        launcher = self

        def starting(self_prof, *args, **kwargs):
            if not getattr(self_prof, "_tb_pipeline_launcher", False) and getattr(self_prof, "enabled", True):
                launcher._script_started()
            return original(self_prof, *args, **kwargs)

        starting._tb_pipeline = True
        setattr(cls, method, starting)

    def _script_started(self) -> None:
        if self.script_profiler:
            return
        self.script_profiler = True
        stopped = self.prof is not None and not self.done
        if stopped:
            # Kineto runs one profiler at a time: the script's wins, and the
            # run keeps only its traces (ours would be cut short anyway).
            self._discard = True
            self._detach()
        note = ("the script starts its own torch.profiler: --profile "
                + (f"stopped the launcher's after {self.steps} steps, its trace discarded" if stopped
                   else "starts none") + "; the script's traces go where it sends them")
        print(f"tb-pipeline: {note}", file=sys.stderr)
        self._write("script", note)

    # -- ours ---------------------------------------------------------------
    def begin(self) -> None:
        if self.prof is not None or self.done or self.script_profiler:
            return
        import torch
        from torch import profiler

        activities = [profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(profiler.ProfilerActivity.CUDA)
        s = self.schedule
        # torch's own handler, not --repeat's redirect of the script's (trace_dir.py): ours names the run already.
        handler = getattr(profiler.tensorboard_trace_handler, "__wrapped__", profiler.tensorboard_trace_handler)
        prof = profiler.profile(
            activities=activities,
            schedule=profiler.schedule(wait=s["wait"], warmup=s["warmup"], active=s["active"],
                                       repeat=s["repeat"], skip_first=s["skip_first"]),
            on_trace_ready=self._trace_ready(handler(self.rec.run_dir)),
            record_shapes=True, with_stack=True, with_modules=True, profile_memory=bool(s["memory"]),
        )
        prof._tb_pipeline_launcher = True
        self.memory_history.start()  # CUDA and memory=1 only (record/memory_history.py)
        prof.start()
        self.prof = prof
        self.rec.profiler = self
        names = [a.name for a in activities]
        print(f"tb-pipeline: torch.profiler on ({schedule_text(s)}; {', '.join(names)}), traces into "
              f"{self.rec.run_dir}", file=sys.stderr)
        self._write("launcher", "", activities=names)

    def _trace_ready(self, handler):
        def on_trace_ready(prof):
            if not self._discard:
                handler(prof)
                self.traces_written += 1

        return on_trace_ready

    def step(self) -> None:
        """Called by the Recorder at each step boundary."""
        if self.closing:
            # The run's last boundary: stop here, so no empty step opens
            # after the loop's last one.
            self.steps += 1
            self._detach()
            return
        self.prof.step()
        self.steps += 1
        needed = steps_needed(self.schedule)
        if needed is not None and self.steps >= needed:
            self._detach()

    def _detach(self) -> None:
        self.done = True
        self.rec.profiler = None
        prof, self.prof = self.prof, None
        if prof is not None:
            prof.stop()  # exports the active steps recorded so far, if any
        self.memory_history.dump()

    def finish(self) -> None:
        """At exit: `closing` set before the Recorder closed its last step."""
        started = self.prof is not None or self.done
        if self.prof is not None:
            self._detach()
        needed = steps_needed(self.schedule)
        if self.script_profiler:
            return
        if not started:
            print("tb-pipeline: --profile: the script iterated no DataLoader or SPDL pipeline; "
                  "nothing was profiled", file=sys.stderr)
        elif needed is not None and self.steps < needed:
            print(f"tb-pipeline: --profile: the script ended after {self.steps} steps, before the "
                  f"schedule's {needed}; {self.traces_written} trace(s) written", file=sys.stderr)

    def _write(self, owner: str, note: str, activities: list[str] | None = None) -> None:
        ours = owner == "launcher"
        self.rec.writer.write(ProfilerRecord(
            wall_time_s=time.time(), pid=os.getpid(), owner=owner, note=note,
            schedule=schedule_text(self.schedule) if ours else None, activities=activities or [],
            profile_memory=ours and bool(self.schedule["memory"]), trace_dir=self.rec.run_dir if ours else None,
        ))


def from_env(rec) -> LauncherProfiler | None:
    spec = os.environ.get(ENV_PROFILE, "")
    if not spec.strip():
        return None
    try:
        schedule = parse_schedule(spec)
    except ValueError as exc:
        print(f"tb-pipeline: {exc}; not profiling", file=sys.stderr)
        return None
    return LauncherProfiler(rec, schedule)
