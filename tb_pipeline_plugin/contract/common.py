"""What every answer shares: the Struct base, numbers, how an answer names a
run it read, and the error answer."""
from __future__ import annotations

from typing import Literal, Union

import numpy as np
from msgspec import Struct

Number = Union[int, float]


class _Shape(Struct, forbid_unknown_fields=True, omit_defaults=False):
    pass


class ErrorResponse(_Shape, kw_only=True):
    error: str
    status: int
    # 409 only: the run is being parsed; retry later.
    run_status: Literal["loading"] | None = None


class RunRef(_Shape):
    """How every answer names a run it read. A one-run answer carries these
    three fields at its top; a pair answer carries one of these each as
    `baseline` and `experimental`. `worker` and `span` are "" where they do
    not apply: a group of recordings, pipeline statistics and diagnostic
    results (which belong to the run), every rank of a run."""

    run: str
    worker: str
    span: str


def numpy_hook(obj):
    """numpy's numbers and arrays, which the analyses' rows carry, as Python's:
    the `enc_hook` of every encoding of an answer (server/http.py) and of its
    builtins (diff/impls:plain)."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")
