"""Query parameters: parsed once per request into typed values.

Each route declares its parameters as a Struct below; `parse` turns
`request.args` into it (msgspec does the typing and the bounds) or raises
BadRequest naming the parameter. Below the server nothing sees a query
string. The OpenAPI document lists the same Structs as each route's
parameters.
"""
from __future__ import annotations

from typing import Annotated, Literal, TypeVar

import msgspec

from ..analysis.operators import GroupBy
from ..diff.launches import KernelGroupBy
from ..diff.impls.modules import ModulesQuery
from ..diff.tables import DEFAULT_LIMIT, MAX_LIMIT, TableQuery
from ..diff.tree import MODULES_DEFAULT_LIMIT, MODULES_MAX_LIMIT
from ..diff.units import Given
from ..diff.timeline import DEFAULT_MAX_EVENTS, DEFAULT_WIDTH_PX, MAX_EVENTS, MAX_WIDTH_PX, TimelineQuery
from ..errors import BadRequest
from ..struct_types import built

NonNegative = Annotated[int, msgspec.Meta(ge=0)]
# Work per step a user gives for a run whose statistics do not say (a trace-only run).
PerStep = Annotated[float, msgspec.Meta(gt=0, le=1e12)]


# The longest a request waits for a run still loading before it answers 409.
MAX_WAIT_MS = 10_000


class _Params(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    # While something the route reads is still loading, wait up to this long
    # for it before answering 409 (0: answer at once; server/http.py).
    wait_ms: Annotated[int, msgspec.Meta(
        ge=0, le=MAX_WAIT_MS, description="While a run this route reads is still loading, wait up to this many "
        "milliseconds for it before answering 409 (0: at once)")] = 0


class NoParams(_Params):
    pass


class RunParams(_Params):
    run: str
    # Empty = the first worker (sorted) and its last span.
    worker: str = ""
    span: str = ""


class OperatorsParams(RunParams):
    group_by: GroupBy = "name"


class DistributedParams(_Params):
    baseline: str
    # Empty: the baseline's ranks alone.
    experimental: str = ""


class PairParams(_Params):
    baseline: str
    experimental: str
    b_worker: str = ""
    b_span: str = ""
    e_worker: str = ""
    e_span: str = ""
    # Samples (tokens) per step of each run, where its statistics do not say
    # or say wrong: answers are per sample (token) when the runs' differ.
    baseline_samples: PerStep | None = None
    experimental_samples: PerStep | None = None
    baseline_tokens: PerStep | None = None
    experimental_tokens: PerStep | None = None

    def given(self) -> tuple[Given, Given]:
        return (Given(self.baseline_samples, self.baseline_tokens),
                Given(self.experimental_samples, self.experimental_tokens))


class PipelineParams(_Params):
    run: str


class PipelinePairParams(_Params):
    baseline: str
    experimental: str


class DiffModulesParams(PairParams):
    # Opaque piece path from a previous answer; "" is the root.
    path: str = ""
    offset: NonNegative = 0
    limit: Annotated[int, msgspec.Meta(ge=0, le=MODULES_MAX_LIMIT)] = MODULES_DEFAULT_LIMIT

    def query(self) -> ModulesQuery:
        return ModulesQuery(path=self.path, offset=self.offset, limit=self.limit)


class DiffTimelineParams(PairParams):
    # The `diff/modules` piece ("" = all steps).
    path: str = ""
    # A window inside the piece: µs after each side's piece start (absent: the whole piece).
    from_us: Annotated[float, msgspec.Meta(ge=0)] | None = None
    to_us: Annotated[float, msgspec.Meta(gt=0)] | None = None
    # Pixels the window is drawn on: shorter events are merged (0: every event, for an export).
    width_px: Annotated[int, msgspec.Meta(ge=0, le=MAX_WIDTH_PX)] = DEFAULT_WIDTH_PX
    # Per side, at most this many events drawn (the longest).
    max_events: Annotated[int, msgspec.Meta(ge=1, le=MAX_EVENTS)] = DEFAULT_MAX_EVENTS
    # An event name: its first occurrence in the window is drawn, however short.
    find: str = ""

    def __post_init__(self):
        if self.from_us is not None and self.to_us is not None and not self.from_us < self.to_us:
            raise ValueError(f"from_us ({self.from_us:g}) must be before to_us ({self.to_us:g})")

    def query(self) -> TimelineQuery:
        return TimelineQuery(path=self.path, from_us=self.from_us, to_us=self.to_us, width_px=self.width_px,
                             max_events=self.max_events, find=self.find)


class _TableParams(PairParams):
    # Restrict the table to the `diff/modules` piece at this path ("" = everything).
    path: str = ""
    sort: str = ""
    order: Literal["desc", "asc"] = "desc"
    filter: str = ""
    offset: NonNegative = 0
    limit: Annotated[int, msgspec.Meta(ge=0, le=MAX_LIMIT)] = DEFAULT_LIMIT

    def query(self) -> TableQuery:
        return TableQuery(group_by=self.group_by, path=self.path, sort=self.sort or None, order=self.order,
                          filter=self.filter, offset=self.offset, limit=self.limit)


class DiffOperatorsParams(_TableParams):
    group_by: GroupBy = "name"


class DiffKernelsParams(_TableParams):
    group_by: KernelGroupBy = "name"


class DiagnosticParams(_Params):
    run: str


class DiffDiagnosticParams(_Params):
    baseline: str
    experimental: str


P = TypeVar("P", bound=_Params)
_INT_FIELDS: dict[type, set[str]] = {}
# Types already built (struct_types.built): a warm request skips the lock.
_BUILT: set[type] = set()


def parse(params_type: type[P], args) -> P:
    """`args`: a werkzeug MultiDict or a plain mapping of strings. An empty
    value counts as absent (a client with nothing selected yet)."""
    if params_type not in _BUILT:
        _BUILT.add(built(params_type))  # on a request thread (struct_types.py)
    raw = {k: v for k, v in args.items() if v != ""}
    for name in _int_fields(params_type):
        value = raw.get(name)
        # Plain ASCII digits only: int() and msgspec would also take "+5" or "5_0".
        if value is not None and not (isinstance(value, str) and value.isascii() and value.isdigit()):
            raise BadRequest(f"{name} must be a non-negative integer (digits 0-9), got {value!r}")
    try:
        return msgspec.convert(raw, params_type, strict=False)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"bad query parameter: {_readable(exc)}") from None


def _int_fields(params_type: type) -> set[str]:
    fields = _INT_FIELDS.get(params_type)
    if fields is None:
        info = msgspec.inspect.type_info(params_type)
        fields = {f.name for f in info.fields if isinstance(f.type, msgspec.inspect.IntType)}
        _INT_FIELDS[params_type] = fields
    return fields


def _readable(exc: msgspec.ValidationError) -> str:
    # "Expected `int` >= 0 - at `$.offset`" -> "offset: Expected `int` >= 0".
    text = str(exc)
    message, sep, where = text.rpartition(" - at `$.")
    if sep:
        return f"{where.rstrip('`')}: {message}"
    return text
