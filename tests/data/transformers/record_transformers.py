"""Records the Hugging Face pair beside this file with the real `transformers` Trainer and a torch.profiler
callback, as its users write one: the profiler steps at each `on_step_end` and its traces go into the job's
`output_dir` beside the Trainer's own TensorBoard logs (`output_dir/runs/...`). Run once, in a venv of its own:

    python3 -m venv /tmp/hf-venv && /tmp/hf-venv/bin/pip install transformers tensorboard torch==2.7.0
    /tmp/hf-venv/bin/python tests/data/transformers/record_transformers.py

`baseline` reads a Dataset that sleeps 4 ms an item in the training process, `experimental` 0.5 ms.
The tests read the output; nothing here is edited by hand afterwards.
"""
from __future__ import annotations

import os
import shutil
import sys

import torch
import transformers
from transformers import Trainer, TrainerCallback, TrainingArguments

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from recording import SlowDataset, list_outputs, mlp  # noqa: E402

BATCH = 8
SLEEP_S = {"baseline": 0.004, "experimental": 0.0005}
STEPS = 8


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp()

    def forward(self, x, labels=None):
        logits = self.net(x)
        return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}


class ProfilerCallback(TrainerCallback):
    def __init__(self, prof):
        self.prof = prof

    def on_step_end(self, args, state, control, **kwargs):
        self.prof.step()


def record(name: str) -> None:
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    torch.manual_seed(0)
    args = TrainingArguments(output_dir=out, max_steps=STEPS, per_device_train_batch_size=BATCH, use_cpu=True,
                             save_strategy="no", report_to=["tensorboard"], logging_steps=1,
                             dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(model=Classifier(), args=args, train_dataset=SlowDataset(SLEEP_S[name], BATCH * STEPS, as_dict=True))
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(skip_first=1, wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out),
        record_shapes=True,
    ) as prof:
        trainer.add_callback(ProfilerCallback(prof))
        trainer.train()


if __name__ == "__main__":
    for name in SLEEP_S:
        record(name)
    list_outputs(HERE, "transformers", transformers.__version__)
