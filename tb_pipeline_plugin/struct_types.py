"""Build msgspec's decoding information for Struct types before threads use them.

msgspec builds a Struct type's decoding information the first time the type
is decoded or converted, and two threads doing that at once for the same
type crash the process: one reads the entry the other is still filling
(msgspec 0.22.0, a segmentation fault; `tests/test_concurrent_first_use.py`).
TensorBoard serves requests on threads and the plugin loads on threads, so
the first two requests to a route arriving together took TensorBoard down.

Every type decoded or converted at run time is built once, in one thread:
a module-level `msgspec.json.Decoder(T)` where a module decodes (an import
runs in one thread), `build_types` where it converts, and the route table's
parameter and response types when TensorBoard builds the routes, before it
serves. A leaf: any package may import it.
"""
from __future__ import annotations

import msgspec


def build_types(*types: type) -> None:
    """Builds the decoding information of `types` and every type they contain now."""
    for t in types:
        msgspec.json.Decoder(t)
