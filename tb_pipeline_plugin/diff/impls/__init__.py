"""Every diff route's implementation: `impl(pair, query, refs)`, a `Pair`
(diff/pair.py), the typed values the route parsed in and the runs'
references, the route's answer out: its `contract` Struct, which the server
encodes with msgspec (server/http.py). Each answer is a view of the pair,
made once with the runs unnamed (`UNNAMED`) and named per call (`named`).

The server parses request parameters into the queries here; the notebook
API (`compare.py`), the reports and the CLI call the same functions, so
every surface shows the same numbers; those that read dicts take
`plain(answer)`.
"""
from __future__ import annotations

import msgspec

from ... import contract as C
from ...contract.common import numpy_hook

# The runs' reference of an answer made before any caller named them.
UNNAMED = C.RunRef(run="", worker="", span="")


def named(answer, refs: dict | None):
    """`answer` (a pair answer, its `baseline` and `experimental` UNNAMED)
    naming the runs as `refs` does ({"baseline": ref, "experimental": ref},
    each a run, worker and span); itself without `refs`. A shallow copy: the
    remembered answer is left as it was."""
    if refs is None:
        return answer
    return msgspec.structs.replace(answer, baseline=C.RunRef(**refs["baseline"]),
                                   experimental=C.RunRef(**refs["experimental"]))


def plain(answer) -> dict:
    """A pair answer as builtins (dicts and lists), without the runs'
    references: what the notebook API and the reports read."""
    out = msgspec.to_builtins(answer, enc_hook=numpy_hook)
    for side in ("baseline", "experimental"):
        if out.get(side) == {"run": "", "worker": "", "span": ""}:
            del out[side]
    return out

