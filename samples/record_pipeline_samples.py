"""Record a pipeline-statistics pair for the Pipeline tab's browser test
(tests/e2e/test_e2e_pipeline.py): the same training loop fed by an SPDL pipeline
whose loading stage is too slow (baseline, input-bound) and by the same
pipeline with that stage's concurrency raised (experimental).

Real runs, recorded with tb_pipeline_plugin.record: step records, SPDL stage
and queue statistics through SPDL's config hooks, host samples.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tb_pipeline_plugin.record import Recorder  # noqa: E402

STEPS = 120
LOAD_S = 0.025  # per item: a file read, releasing the GIL
BATCH = 64
HIDDEN = 256
# The step waits this long for the accelerator (this CPU-only demo stands in
# with a sleep), so the pair means the same on fast and slow machines.
DEVICE_S = 0.010

# Name -> concurrency of the "load" stage.
PIPELINE_RUNS = {"pipeline_baseline": 1, "pipeline_experimental": 8}


def load(i: int) -> int:
    time.sleep(LOAD_S)
    return i


def decode(i: int) -> np.ndarray:
    return np.full((BATCH, 256), i % 7 - 3, dtype=np.float32)


def record_pipeline_run(out_dir: str, load_concurrency: int) -> str:
    from spdl.pipeline import PipelineBuilder

    logdir, run = os.path.split(os.path.abspath(out_dir))
    shutil.rmtree(os.path.join(out_dir, "pipeline"), ignore_errors=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Recorder(logdir, run, host_interval_s=0.1) as rec:
        rec.record_spdl(interval_s=0.25)
        pipeline = (PipelineBuilder().add_source(range(STEPS))
                    .pipe(load, concurrency=load_concurrency, name="load")
                    .pipe(decode, concurrency=2, name="decode")
                    .add_sink(16).build(num_threads=load_concurrency + 2))
        with pipeline.auto_stop():
            for step, x in enumerate(rec.wrap(pipeline)):
                batch = torch.from_numpy(x)
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(batch), torch.zeros(BATCH, dtype=torch.long))
                loss.backward()
                opt.step()
                time.sleep(DEVICE_S)
                with rec.callback("log_metrics"):
                    float(loss.detach())
                if step % 20 == 19:
                    with rec.callback("checkpoint"):
                        torch.save(model.state_dict(), os.devnull)
    return out_dir


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "runs"))
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name, concurrency in PIPELINE_RUNS.items():
            t0 = time.perf_counter()
            path = record_pipeline_run(os.path.join(args.out, name), concurrency)
            print(f"recorded {name} in {time.perf_counter() - t0:.2f} s -> {path}")
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
