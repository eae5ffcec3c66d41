"""Trace + pipeline statistics in one run directory: a training loop fed by a two-stage SPDL pipeline, traced
by torch.profiler and recorded by the Recorder, its loading stage 30x slower in `slow` than in `fast`; and two
trace-only runs of the same model. Recorded once (support/recordings.py) for test_explain_pipeline and
test_e2e_browser."""
from __future__ import annotations

import time
from pathlib import Path

import torch
from torch import nn

from support import explain_runs as R
from support.recordings import recording
from tb_pipeline_plugin.record import Recorder

STEPS = 16  # recorded by the Recorder; the profiler traces all but the first 3
LOAD_S = {"fast": 0.001, "slow": 0.03}


def _record(logdir, run: str, load_s: float) -> None:
    """A training loop fed by a two-stage SPDL pipeline (load: a sleep that
    releases the GIL, as a file read would; decode), traced and recorded."""
    from spdl.pipeline import PipelineBuilder

    def load(i):
        time.sleep(load_s)
        return i

    def decode(i):
        return torch.full((R.BATCH, R.FEATURES), float(i % 7 - 3))

    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model = R.Net([256, 256, 256])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    y = torch.zeros(R.BATCH, dtype=torch.long)
    try:
        with Recorder(str(logdir), run, host_interval_s=None) as rec:
            rec.record_spdl(interval_s=0.1)
            pipeline = (PipelineBuilder().add_source(range(STEPS)).pipe(load, concurrency=1, name="load")
                        .pipe(decode, concurrency=1, name="decode").add_sink(4).build(num_threads=3))
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                        # Active past the last step: the trace is written when
                                        # the profiler exits, not inside a recorded step (where the
                                        # export, 0.2 s, would read as that step's data wait).
                                        schedule=torch.profiler.schedule(wait=1, warmup=2, active=STEPS, repeat=1),
                                        on_trace_ready=rec.trace_handler(), with_stack=True,
                                        with_modules=True) as prof:
                rec.profiler = prof
                with pipeline.auto_stop():
                    for x in rec.wrap(pipeline):
                        opt.zero_grad()
                        nn.functional.cross_entropy(model(x), y).backward()
                        opt.step()
    finally:
        torch.set_num_threads(threads)


@recording(name="explain_pipeline_runs", sources=["tests/support/explain_runs.py"])
def recorded_runs(root: Path) -> None:
    """The fast and slow pipeline runs and two trace-only ones, made once (support/recordings.py)."""
    _record(root, "_warmup", LOAD_S["fast"])  # the first recording of a process runs cold
    _record(root, "fast", LOAD_S["fast"])
    _record(root, "slow", LOAD_S["slow"])
    # Traces only: the same model, no Recorder.
    for run in ("plain_a", "plain_b"):
        R.record(str(root / run), steps=4)
