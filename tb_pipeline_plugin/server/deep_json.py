"""JSON encoding without recursion, for values nested too deep for msgspec.

msgspec's encoder recurses once per nesting level and stops at Python's
recursion limit; a module tree 500 levels deep (a recursive model, or a
crafted trace) would fail to encode. This walks with an explicit stack and
lets msgspec encode the flat parts, so the output is the same JSON document.
A Struct (the contract's answers) is walked as the object of its encoded
fields.
"""
from __future__ import annotations

from typing import Callable

from msgspec import Struct

_CONTAINERS = (dict, list, tuple, Struct)


def _fields(item: Struct) -> dict:
    """A Struct's fields as msgspec encodes them: by their encoded names, in
    declared order (every contract Struct encodes its defaults too)."""
    return {name: getattr(item, field)
            for name, field in zip(item.__struct_encode_fields__, item.__struct_fields__)}


def encode_deep(obj, encode: Callable[[object], bytes]) -> bytes:
    """`obj` as JSON; `encode` encodes anything not nested (msgspec's).

    A dict's non-container values are encoded in one call (its container
    values follow them, so key order may differ from `obj`'s)."""
    out: list[bytes] = []
    stack: list[tuple[bool, object]] = [(False, obj)]  # (is raw bytes, item)
    while stack:
        raw, item = stack.pop()
        if raw:
            out.append(item)
            continue
        if isinstance(item, Struct):
            item = _fields(item)
        if isinstance(item, dict):
            flat = {k: v for k, v in item.items() if not isinstance(v, _CONTAINERS)}
            nested = [(k, v) for k, v in item.items() if isinstance(v, _CONTAINERS)]
            head = encode(flat)[:-1]  # without its closing brace
            out.append(head)
            stack.append((True, b"}"))
            for i in range(len(nested) - 1, -1, -1):
                key, value = nested[i]
                stack.append((False, value))
                sep = b"," if (flat or i) else b""
                stack.append((True, sep + encode(key if isinstance(key, str) else str(key)) + b":"))
        elif isinstance(item, (list, tuple)):
            out.append(b"[")
            stack.append((True, b"]"))
            for i in range(len(item) - 1, -1, -1):
                stack.append((False, item[i]))
                if i:
                    stack.append((True, b","))
        else:
            out.append(encode(item))
    return b"".join(out)
