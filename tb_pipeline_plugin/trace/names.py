"""What event names mean: the one place that knows PyTorch's naming rules.

Every layer (linking, analyses, diff pieces) asks here, so a rule cannot
drift between the overview and the diff.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from .table import EventTable
from .unique import unique_inverse

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
# `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` -> family `enumerate(DataLoader)`;
# torchdata's StatefulDataLoader iterators record the same name
# (`enumerate(DataLoader)#_StatefulSingleProcessDataLoaderIter.__next__`).
# DataPipes (what DataLoader2 iterates) record `enumerate(DataPipe)#ShufflerIterDataPipe`
# (torch 1.11 to 2.0) -> family `enumerate(DataPipe)`.
DATA_LOADING_RE = re.compile(r"^(enumerate\((?:DataLoader|DataPipe)\))#")
# From torch 2.1 a DataPipe iterated without a DataLoader records its
# `__next__` as the pipe and its arguments, the class name without
# `IterDataPipe`: `Mapper(datapipe=Shuffler, fn=<lambda>, input_col=None, ...)`
# -> family `Mapper`. torch's own pipes are known by name; any other pipe
# (torchdata's, a user's) by the upstream pipe among its arguments
# (`datapipe=` / `source_datapipe=`). A source pipe of another library,
# which has no upstream, cannot be told from a user annotation.
TORCH_DATAPIPES = ("Batcher", "Collator", "Concater", "Demultiplexer", "FileLister", "FileOpener", "Filter",
                   "Forker", "Grouper", "IterableWrapper", "Mapper", "Multiplexer", "RoutedDecoder", "Sampler",
                   "ShardingFilter", "Shuffler", "StreamReader", "UnBatcher", "Zipper")
DATAPIPE_RE = re.compile(r"^(?:(" + "|".join(TORCH_DATAPIPES) + r")\(|([A-Z]\w*)\((?=.*\b(?:source_)?datapipe=))")
# `Optimizer.step#SGD.step`, `Optimizer.zero_grad#SGD.zero_grad` -> `Optimizer.step`, ...
OPTIMIZER_RE = re.compile(r"^(Optimizer\.\w+)#")
MODULE_PREFIX = "nn.Module: "
EVALUATE_PREFIX = "autograd::engine::evaluate_function: "
HOST_COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "mpi:", "c10d::", "record_param_comms")
# Backends whose collectives run on the host even in a GPU job: their host
# time is the communication (NCCL's host call only enqueues a kernel).
CPU_COLLECTIVE_PREFIXES = ("gloo:", "mpi:")
COMMUNICATION_KERNEL_MARKERS = ("nccl", "rccl")
_INSTANCE_SUFFIX = re.compile(r"_\d+$")


def module_class(name: str) -> str:
    """`Linear_3` -> `Linear`: the instance counter says nothing about the work."""
    return _INSTANCE_SUFFIX.sub("", name)


def is_step(name: str) -> bool:
    return STEP_RE.match(name) is not None


def step_number(name: str) -> int | None:
    m = STEP_RE.match(name)
    if m is None:
        return None
    # Clamp absurd numbers instead of overflowing int64 later.
    return min(int(m.group(1)), 2**62)


def is_data_loading(name: str) -> bool:
    return DATA_LOADING_RE.match(name) is not None or DATAPIPE_RE.match(name) is not None


def data_loading_family(name: str) -> str | None:
    """What a data-loading annotation is aligned by across runs: `enumerate(DataLoader)`,
    `enumerate(DataPipe)`, or a DataPipe's class (`Mapper`); None for other names."""
    m = DATA_LOADING_RE.match(name)
    if m is not None:
        return m.group(1)
    m = DATAPIPE_RE.match(name)
    return None if m is None else m.group(1) or m.group(2)


def is_optimizer(name: str) -> bool:
    return OPTIMIZER_RE.match(name) is not None


def is_profiler_annotation(name: str) -> bool:
    """Annotations the profiler itself records around steps, data loading and
    the optimizer. 2021 traces file them under the `Operator` category."""
    return is_step(name) or is_data_loading(name) or is_optimizer(name)


def is_communication_kernel(name: str) -> bool:
    low = name.lower()
    return any(m in low for m in COMMUNICATION_KERNEL_MARKERS)


def is_host_collective(name: str) -> bool:
    return name.startswith(HOST_COLLECTIVE_PREFIXES)


def is_cpu_collective(name: str) -> bool:
    return name.startswith(CPU_COLLECTIVE_PREFIXES)


# torch.compile's wrapper around the user's module (torch._dynamo's
# OptimizedModule): the module it wraps is the one users name, so the
# wrapper is no module of the path, and a compiled `LM_0` is `LM_0` as in
# an eager run of the same model.
_WRAPPER_PREFIX = MODULE_PREFIX + "OptimizedModule_"


def is_module(name: str) -> bool:
    return name.startswith(MODULE_PREFIX) and not name.startswith(_WRAPPER_PREFIX)


def ids_mask(strings: list[str], ids: np.ndarray, test: Callable[[str], bool]) -> np.ndarray:
    """test(strings[id]) for each id, evaluated once per distinct id."""
    if len(ids) == 0:
        return np.zeros(0, dtype=bool)
    uniq, inverse = unique_inverse(ids)
    verdict = np.fromiter(
        (bool(i >= 0 and test(strings[i])) for i in uniq.tolist()), dtype=bool, count=len(uniq)
    )
    return verdict[inverse]


def name_mask(table: EventTable, rows: np.ndarray, test: Callable[[str], bool]) -> np.ndarray:
    """test(name) for each row, evaluated once per distinct name id."""
    return ids_mask(table.strings, table.name_id[rows], test)
