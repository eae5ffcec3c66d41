"""Typed msgspec schema of a Kineto / Chrome trace event.

Only the fields the analyses read are declared: msgspec skips unknown keys
without allocating them, which is what keeps decoding a 1 GB trace cheap.
`Input Dims`, `Input type`, `grid` and `block` stay `Raw` (bytes of the JSON text) because
they are only grouped on, never computed with.
"""
from __future__ import annotations

import msgspec
from msgspec import Raw, field


_NO_ID = -1  # table.NO_ID (schema imports nothing of ours)
_NAN = float("nan")


class Args(msgspec.Struct, gc=False, frozen=True):
    # Fields in the order Kineto writes its keys: msgspec looks a key up
    # from the field after the last one found, so keys in this order are
    # found at once (a fifth of the decode of a stack-heavy trace went to
    # these lookups; benchmarks/README.md, "TensorBoard's start to every view").
    # Linking ids. Absent ids default to NO_ID (not None) so that a column
    # of them converts to int64 in one C call; an explicit null still
    # decodes as None.
    python_parent_id: int | None = field(name="Python parent id", default=_NO_ID)
    python_id: int | None = field(name="Python id", default=_NO_ID)
    external_id: int | None = field(name="External id", default=_NO_ID)
    # The inputs' dtypes as torch names them (`["float", "c10::BFloat16", "", "Scalar"]`), beside
    # their shapes (`record_shapes=True`): the precision an operator ran in.
    input_types: Raw = field(name="Input type", default=Raw())
    input_dims: Raw = field(name="Input Dims", default=Raw())
    # Kineto 2021's Python stack of an operator (`with_stack=True`), frames joined by ";".
    call_stack: Raw = field(name="Call stack", default=Raw())
    device: int | None = _NO_ID
    correlation: int | None = _NO_ID
    # Kernel launch properties (NaN when absent).
    registers_per_thread: float | None = field(name="registers per thread", default=_NAN)
    shared_memory_bytes: float | None = field(name="shared memory", default=_NAN)
    blocks_per_sm: float | None = field(name="blocks per SM", default=_NAN)
    warps_per_sm: float | None = field(name="warps per SM", default=_NAN)
    grid: Raw = Raw()
    block: Raw = Raw()
    occupancy_pct: float | None = field(name="est. achieved occupancy %", default=_NAN)
    # `[memory]` instant events.
    total_reserved: int | None = field(name="Total Reserved", default=None)
    total_allocated: int | None = field(name="Total Allocated", default=None)
    bytes_delta: int | None = field(name="Bytes", default=None)
    device_id: int | None = field(name="Device Id", default=None)
    device_type: int | None = field(name="Device Type", default=None)
    addr: int | None = field(name="Addr", default=_NO_ID)  # the block's address (Kineto from 2022)
    # 2021 traces spell the external id in lower case.
    external_id_2021: int | None = field(name="external id", default=_NO_ID)
    # `M` metadata events (process_name / thread_name).
    name: str | None = None


EMPTY_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    # NaN marks "absent": an event without a timestamp must not land at 1970,
    # and a complete event without a duration must not pass as 0 µs.
    ts: float = float("nan")
    dur: float = float("nan")
    id: int | str | None = None
    bp: str = ""
    args: Args = EMPTY_ARGS


class LenientEvent(msgspec.Struct, gc=False):
    """Fallback for a chunk whose values do not fit `Event` (a string where a
    number belongs, say): everything is taken as it comes and coerced later."""

    ph: object = ""
    cat: object = ""
    name: object = ""
    pid: object = 0
    tid: object = 0
    ts: object = None
    dur: object = None
    id: object = None
    bp: object = ""
    args: object = None


class Header(msgspec.Struct, gc=False):
    """The top-level object with the event array left undecoded."""

    traceEvents: Raw = Raw()
    schemaVersion: object = None
    deviceProperties: object = None
    distributedInfo: object = None
    baseTimeNanoseconds: object = None
    displayTimeUnit: object = None
    with_modules: object = None
    record_shapes: object = None
    profile_memory: object = None
    with_stack: object = None
    # Written by torch 2.x's profiler, which writes the option keys above
    # only when they are on (their absence then means off).
    trace_id: object = None
    cuda_runtime_version: object = None
    cuda_driver_version: object = None
    host_name: object = None


class EventsOnly(msgspec.Struct, gc=False):
    """`Header` without metadata: for a document whose metadata does not decode."""

    traceEvents: Raw = Raw()
