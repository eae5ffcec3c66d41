"""Loose decoding for events whose values do not fit the typed schema."""
from __future__ import annotations

import msgspec

from ..struct_types import built
from .schema import EMPTY_ARGS, Args, Event, LenientEvent


def _args(value) -> Args:
    if not isinstance(value, dict):
        return EMPTY_ARGS
    try:
        return msgspec.convert(value, built(Args), strict=False)
    except msgspec.ValidationError:
        pass
    # Keep the fields that convert on their own, drop the rest.
    good = {}
    for key, item in value.items():
        try:
            msgspec.convert({key: item}, built(Args), strict=False)
            good[key] = item
        except msgspec.ValidationError:
            continue
    return msgspec.convert(good, built(Args), strict=False)


_NAN = float("nan")


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, str)):
        try:
            return float(value)
        except (ValueError, OverflowError):  # not a number, or an int beyond float range
            return None
    return None


def _key(value):
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else str(value)


def coerce_events(events: list[LenientEvent]) -> tuple[list[Event], int]:
    """Typed events and the number that could not be used at all."""
    out: list[Event] = []
    dropped = 0
    for e in events:
        # Unusable times become NaN; the column builder drops and counts them.
        ts = _number(e.ts)
        dur = _number(e.dur)
        if not isinstance(e.ph, str):
            dropped += 1
            continue
        out.append(
            Event(
                ph=e.ph,
                cat=e.cat if isinstance(e.cat, str) else "",
                name=e.name if isinstance(e.name, str) else str(e.name),
                pid=_key(e.pid),
                tid=_key(e.tid),
                ts=_NAN if ts is None else ts,
                dur=_NAN if dur is None else dur,
                id=_key(e.id) if e.id is not None else None,
                bp=e.bp if isinstance(e.bp, str) else "",
                args=_args(e.args),
            )
        )
    return out, dropped
