"""DataPipes iterated without a DataLoader: from torch 2.1 their `__next__`
annotations are named by the pipe (`Mapper(datapipe=Shuffler, ...)`), with
no `enumerate(DataPipe)#` prefix. Recorded here with the real torch.profiler;
they must count as data loading, as the older names do."""
from __future__ import annotations

import glob
import time

import numpy as np
import pytest

from support.json_oracle import load_events
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.trace.names import data_loading_family, is_data_loading

STEPS = 6
DELAY_S = 0.002


def _slow(x):
    time.sleep(DELAY_S)
    return x


@pytest.fixture(scope="module")
def datapipe_trace(tmp_path_factory) -> str:
    import torch
    from torch.utils.data.datapipes.iter import IterableWrapper

    out = tmp_path_factory.mktemp("datapipes")
    pipe = IterableWrapper(range(64)).shuffle().map(_slow).batch(4).collate()
    # No schedule: a DataPipe's iterator decides whether to annotate when it
    # is made, so it must be made while the profiler records; the steps are
    # marked as the profiler's schedule marks them, the fetch included.
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                on_trace_ready=torch.profiler.tensorboard_trace_handler(str(out))):
        batches = iter(pipe)
        for i in range(STEPS):
            with torch.profiler.record_function(f"ProfilerStep#{i}"):
                batch = next(batches)
                torch.nn.functional.linear(batch.float()[:, None].repeat(1, 64), torch.ones(64, 64)).sum()
    return glob.glob(str(out / "*.pt.trace.json*"))[0]


def test_datapipe_names_are_data_loading():
    assert data_loading_family("Mapper(datapipe=Shuffler, fn=<lambda>, input_col=None, output_col=None)") == "Mapper"
    assert data_loading_family("IterableWrapper(deepcopy=True, iterable=range(0, 64))") == "IterableWrapper"
    # Another library's pipe: known by its upstream pipe among the arguments.
    assert data_loading_family("Prefetcher(buffer_size=10, source_datapipe=Mapper)") == "Prefetcher"
    assert data_loading_family("enumerate(DataPipe)#ShufflerIterDataPipe") == "enumerate(DataPipe)"
    assert not is_data_loading("MyAnnotation(x=1)") and not is_data_loading("Mapper")


def test_datapipe_time_is_the_steps_data_loading(datapipe_trace):
    """Per step, the union of the pipe annotations inside the step, from the JSON."""
    _, events = load_events(datapipe_trace)
    annotations = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    pipes = [e for e in annotations if is_data_loading(e["name"])]
    assert {data_loading_family(e["name"]) for e in pipes} >= {"Collator", "Batcher", "Mapper", "Shuffler"}
    steps = sorted((e for e in annotations if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    expected = []
    for s in steps:
        inside = sorted((max(e["ts"], s["ts"]), min(e["ts"] + e["dur"], s["ts"] + s["dur"])) for e in pipes
                        if e["ts"] < s["ts"] + s["dur"] and e["ts"] + e["dur"] > s["ts"])
        total, end = 0.0, -np.inf
        for a, b in inside:
            if b > end:
                total += b - max(a, end)
                end = b
        expected.append(total)
    ov = TraceProcessor.load(datapipe_trace).overview()
    measured = [st["breakdown_us"]["data_loading"] for st in ov["steps"]]
    assert len(measured) == len(expected) >= 3
    assert measured == pytest.approx(expected, abs=1.0)
    # The slow map runs 4 times a batch: most of each step waits for data.
    assert np.mean(measured) >= 4 * DELAY_S * 1e6 * 0.9


def test_datapipe_is_a_data_loading_piece(datapipe_trace):
    from tb_pipeline_plugin.analysis.pieces import ATOM_KINDS

    index = TraceProcessor.load(datapipe_trace).pieces()
    loading = {index.key[a] for a in range(len(index.kind)) if ATOM_KINDS[index.kind[a]] == "data_loading"}
    assert "Collator" in loading, loading
