"""Records the Composer pair beside this file with the real `mosaicml` package, the way a Composer user lays out a
run: `Profiler(trace_handlers=[JSONTraceHandler(folder=RUN + "/composer_traces")], torch_prof_folder=RUN +
"/torch_traces")`. Run once, in a venv of its own (mosaicml pins an older torch than the project's):

    python3 -m venv /tmp/composer-venv && /tmp/composer-venv/bin/pip install mosaicml==0.32.1
    /tmp/composer-venv/bin/python tests/data/composer/record_composer.py

`baseline`: a Dataset that sleeps 4 ms an item (8 a batch) read in the training process: input-bound.
`experimental`: the same with 0.5 ms an item. Two profiling cycles each (two Composer files and two torch
traces per rank, Composer's merged_trace.json across both). The tests read the output; nothing here is edited
by hand afterwards.
"""
from __future__ import annotations

import os
import shutil
import sys

import torch
from torch.utils.data import DataLoader

from composer import Trainer
from composer.models import ComposerClassifier
from composer.profiler import JSONTraceHandler, Profiler, cyclic_schedule

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from recording import CLASSES, SlowDataset, list_outputs, mlp  # noqa: E402

BATCH = 8
SLEEP_S = {"baseline": 0.004, "experimental": 0.0005}
# Skip 1 batch, then twice: wait 1, warm up 1, record 2 (batches 4-5 and 8-9).
SCHEDULE = dict(skip_first=1, wait=1, warmup=1, active=2, repeat=2)
BATCHES = 10


def record(name: str) -> None:
    run = os.path.join(HERE, name)
    shutil.rmtree(run, ignore_errors=True)
    torch.manual_seed(0)
    module = mlp()
    loader = DataLoader(SlowDataset(SLEEP_S[name], BATCH * BATCHES), batch_size=BATCH, shuffle=False, num_workers=0)
    trainer = Trainer(
        model=ComposerClassifier(module, num_classes=CLASSES),
        train_dataloader=loader,
        max_duration=f"{BATCHES}ba",
        device="cpu",
        run_name=name,
        progress_bar=False,
        log_to_console=False,
        loggers=[],
        save_folder=None,
        profiler=Profiler(
            schedule=cyclic_schedule(**SCHEDULE),
            trace_handlers=[JSONTraceHandler(folder=run + "/composer_traces", overwrite=True)],
            torch_prof_folder=run + "/torch_traces",
            torch_prof_overwrite=True,
            # Allocation events would triple the files; the tests read none.
            torch_prof_profile_memory=False,
        ),
    )
    trainer.fit()
    trainer.close()


if __name__ == "__main__":
    import composer

    for name in SLEEP_S:
        record(name)
    list_outputs(HERE, "composer", composer.__version__)
