"""Name-based classification of events, done once per distinct string."""
from __future__ import annotations

import numpy as np

from ..trace.table import EventTable

DATA_LOADING_PREFIXES = ("enumerate(DataLoader)",)
OPTIMIZER_PREFIXES = ("Optimizer.step", "Optimizer.zero_grad")
HOST_COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "c10d::", "record_param_comms")
COMMUNICATION_KERNEL_MARKERS = ("nccl", "rccl")
STEP_PREFIX = "ProfilerStep#"


def name_mask(table: EventTable, rows: np.ndarray, test) -> np.ndarray:
    """test(name) for each row, evaluated once per distinct name id."""
    if len(rows) == 0:
        return np.zeros(0, dtype=bool)
    ids = table.name_id[rows]
    uniq, inverse = np.unique(ids, return_inverse=True)
    verdict = np.fromiter((bool(test(table.strings[i])) for i in uniq.tolist()), dtype=bool, count=len(uniq))
    return verdict[inverse]


def starts_with(prefixes: tuple[str, ...]):
    return lambda name: name.startswith(prefixes)


def is_communication_kernel(name: str) -> bool:
    low = name.lower()
    return any(m in low for m in COMMUNICATION_KERNEL_MARKERS)
