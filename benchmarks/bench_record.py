"""Cost of recording pipeline statistics, per recorded event.

    .venv/bin/python benchmarks/bench_record.py [--steps 200000] [--repeat 5] [--json out.json]

Two loops over the same in-memory batches, in one process, interleaved
`--repeat` times (minimum kept: least disturbed by other load):

- baseline: `for batch in batches:` with, per step, one no-op function call
  standing in for a callback (the loop and the callback cost the user pays
  anyway);
- candidate: `for batch in rec.wrap(batches):` with the same call inside
  `with rec.callback("cb"):` — per step, two recorded events (the data wait
  of next(), the callback) and one step record encoded and appended to the
  statistics file (host sampler off: it runs on its own thread, once a second).

`--flush-interval 0` measures the synchronous writer (one write() per record).

Also the cost of CPU time per task (record/task_cpu.py, around every SPDL
stage function and DataLoader part): the same no-op called `--steps` times
bare and through `task_cpu.timed` (two thread-CPU and two wall clock reads,
one lock); target < 2 µs per task.

The DataLoader's fetch as the recorder patches it (record/loader_clocks.py,
the same code in the loop's thread and in worker processes, where
the worker loop only adds a thread that writes a file once a
second): `_MapDatasetFetcher.fetch` of a one-item batch, bare and patched:
two timed calls per batch (the fetch and the collate_fn inside it); target
< 2 µs per timed call.

The GIL contention sampler (record/gil_contention.py, gilknocker): a
pure-Python workload on `--gil-threads` threads, `--gil-work` loop
iterations each, timed bare and with the sampler running at the default
1 s host interval, interleaved; its cost is the slowdown in percent
(target < 1 %).

Per-event cost = (candidate - baseline) / (2 * steps), wall time (the target)
and process CPU time (both threads; less sensitive to an oversubscribed
machine, where wall time also measures the neighbours). Targets: < 2 µs per
event, and the per-step overhead < 1 % of a 10 ms step (< 100 µs).
Exit status 0 when both targets are met, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tb_pipeline_plugin.record import Recorder  # noqa: E402
from tb_pipeline_plugin.record import task_cpu  # noqa: E402
from tb_pipeline_plugin.record.task_cpu import TaskClock, timed  # noqa: E402
from tb_pipeline_plugin.record.writer import DEFAULT_FLUSH_INTERVAL_S  # noqa: E402

EVENTS_PER_STEP = 2
TARGET_US_PER_EVENT = 2.0
STEP_S = 0.010
TARGET_STEP_PCT = 1.0
TARGET_GIL_PCT = 1.0


def _noop(x):
    return x


def baseline(batches) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        _noop(b)
    return time.perf_counter() - t0, time.process_time() - c0


def candidate(batches, logdir: str, run: str, flush_interval_s: float) -> float:
    rec = Recorder(logdir, run, host_interval_s=None, flush_interval_s=flush_interval_s)
    t0, c0 = time.perf_counter(), time.process_time()
    for b in rec.wrap(batches):
        with rec.callback("cb"):
            _noop(b)
    rec.close()  # timed too: it writes the records still pending
    return time.perf_counter() - t0, time.process_time() - c0


def timed_tasks(batches, runq: bool = True) -> tuple[float, float]:
    """`timed` as recorded; runq=False: without its run-queue sample (the
    sampling mask set so that no call reads schedstat), the same-run
    baseline of that sample's cost."""
    mask = task_cpu._SAMPLE_MASK
    task_cpu._SAMPLE_MASK = mask if runq else -1
    fn = timed(_noop, TaskClock())
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        fn(b)
    out = time.perf_counter() - t0, time.process_time() - c0
    task_cpu._SAMPLE_MASK = mask
    return out


def loader_fetch(steps: int, patched: bool) -> float:
    """Seconds for `steps` one-item fetches through torch's map-style fetcher."""
    from torch.utils.data._utils import fetch as torch_fetch

    from tb_pipeline_plugin.record import loader_clocks

    if patched:
        loader_clocks.install()
    cls = torch_fetch._MapDatasetFetcher
    original = getattr(cls.fetch, "__wrapped__", cls.fetch)
    saved = cls.fetch
    if not patched:
        cls.fetch = original
    try:
        fetcher = cls(list(range(16)), False, _noop, False)
        t0 = time.perf_counter()
        for i in range(steps):
            fetcher.fetch(i & 15)
        return time.perf_counter() - t0
    finally:
        cls.fetch = saved


def spin_threads(threads: int, work: int) -> float:
    import threading

    def spin():
        s = 0
        for i in range(work):
            s += i * i

    pool = [threading.Thread(target=spin) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - t0


def gil_sampler_cost(threads: int, work: int, repeat: int) -> tuple[float, float]:
    """(bare s, with the sampler s), the minimum of `repeat` interleaved runs."""
    from tb_pipeline_plugin.record.gil_contention import GilContention

    bare, sampled = [], []
    for _ in range(repeat):
        bare.append(spin_threads(threads, work))
        gil = GilContention.create(1.0)
        if gil is None:
            return min(bare), float("nan")
        gil.start()
        sampled.append(spin_threads(threads, work))
        gil.stop()
    return min(bare), min(sampled)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--flush-interval", type=float, default=DEFAULT_FLUSH_INTERVAL_S,
                   help="the writer's flush interval in seconds (0: one write() per record)")
    p.add_argument("--gil-threads", type=int, default=4)
    p.add_argument("--gil-work", type=int, default=3_000_000, help="loop iterations per thread")
    p.add_argument("--json", help="write the result row here")
    args = p.parse_args(argv)
    # A typical batch: a tuple of arrays (the recorder reads its batch size).
    x, y = np.zeros((32, 8), np.float32), np.zeros(32, np.int64)
    batches = [(x, y)] * args.steps
    out = tempfile.mkdtemp(prefix="bench_record_")
    try:
        base, cand, task, task_no_runq, fetch_bare, fetch_rec = [], [], [], [], [], []
        for r in range(args.repeat):
            base.append(baseline(batches))
            cand.append(candidate(batches, out, f"r{r}", args.flush_interval))
            task.append(timed_tasks(batches))
            task_no_runq.append(timed_tasks(batches, runq=False))
            fetch_bare.append(loader_fetch(args.steps, patched=False))
            fetch_rec.append(loader_fetch(args.steps, patched=True))
        gil_bare_s, gil_sampled_s = gil_sampler_cost(args.gil_threads, args.gil_work, args.repeat)
        lines = sum(1 for _ in open(os.path.join(out, "r0", "pipeline", os.listdir(os.path.join(out, "r0", "pipeline"))[0])))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    b, c = min(w for w, _ in base), min(w for w, _ in cand)
    b_cpu, c_cpu = min(u for _, u in base), min(u for _, u in cand)
    per_event_us = (c - b) / (EVENTS_PER_STEP * args.steps) * 1e6
    per_event_cpu_us = (c_cpu - b_cpu) / (EVENTS_PER_STEP * args.steps) * 1e6
    per_step_us = (c - b) / args.steps * 1e6
    per_task_us = (min(w for w, _ in task) - b) / args.steps * 1e6
    runq_sample_us = (min(w for w, _ in task) - min(w for w, _ in task_no_runq)) / args.steps * 1e6
    step_pct = 100.0 * per_step_us / (STEP_S * 1e6)
    fetch_us = (min(fetch_rec) - min(fetch_bare)) / args.steps * 1e6
    fetch_call_us = fetch_us / 2  # the fetch and its collate_fn: two timed calls
    gil_pct = 100.0 * (gil_sampled_s - gil_bare_s) / gil_bare_s
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    row = {"steps": args.steps, "flush_interval_s": args.flush_interval, "baseline_s": b, "candidate_s": c,
           "baseline_cpu_s": b_cpu, "candidate_cpu_s": c_cpu, "per_event_us": per_event_us,
           "per_event_cpu_us": per_event_cpu_us, "per_step_us": per_step_us, "pct_of_10ms_step": step_pct,
           "task_cpu_per_task_us": per_task_us, "runq_sample_per_task_us": runq_sample_us, "loader_fetch_per_batch_us": fetch_us,
           "loader_per_timed_call_us": fetch_call_us,
           "gil_bare_s": gil_bare_s, "gil_sampled_s": gil_sampled_s, "gil_sampler_pct": gil_pct,
           "records_written": lines, "load_average_1min": load, "cpu_count": os.cpu_count()}
    print(f"baseline  {b:.3f} s   candidate {c:.3f} s   ({args.steps:,} steps, {lines:,} records; "
          f"load average {load} on {os.cpu_count()} CPUs)")
    print(f"per event {per_event_us:.2f} µs wall, {per_event_cpu_us:.2f} µs CPU (both threads) "
          f"(target < {TARGET_US_PER_EVENT})   "
          f"per step {per_step_us:.2f} µs = {step_pct:.3f} % of a 10 ms step (target < {TARGET_STEP_PCT})")
    print(f"CPU time per task: {per_task_us:.2f} µs a task (target < {TARGET_US_PER_EVENT}), of which the "
          f"run-queue sample (1 call in {task_cpu.RUNQ_SAMPLE_EVERY}) {runq_sample_us:.2f} µs")
    print(f"DataLoader (loop thread or worker process): {fetch_us:.2f} µs a batch = {fetch_call_us:.2f} µs per timed "
          f"call (fetch, collate_fn; target < {TARGET_US_PER_EVENT})")
    print(f"GIL contention sampler: {args.gil_threads} pure-Python threads {gil_bare_s:.3f} s bare, "
          f"{gil_sampled_s:.3f} s sampled: {gil_pct:+.2f} % (target < {TARGET_GIL_PCT})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f)
    ok = (per_event_us < TARGET_US_PER_EVENT and step_pct < TARGET_STEP_PCT and per_task_us < TARGET_US_PER_EVENT
          and fetch_call_us < TARGET_US_PER_EVENT and not gil_pct >= TARGET_GIL_PCT)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
