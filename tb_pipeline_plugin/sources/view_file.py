"""A parse's first views, kept in its cache entry beside the columns.

The worker that parsed a trace writes the views it built (the values it also
hands back) into the entry, so a cache hit (a restart, `tb-pipeline
summarize`) serves a run's tabs, and a rank's summary, without building a
view in the server. Plain JSON, as the columns' manifest (no pickles in a
cache directory): a DataFrame is kept column by column with its dtype.

The file carries the hash of `analysis/`'s sources and its own checksum: a
changed analysis or a damaged file is ignored (the views are built again on
request), never served. Views of a shape this codec does not know are
simply not written.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

VIEWS = "views.json"
_FRAME = "__frame__"


def _analysis_digest() -> str:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent.parent / "analysis"
    for path in sorted(here.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


ANALYSIS_VERSION = _analysis_digest()


class _Unsupported(TypeError):
    pass


def _dtype_tag(dtype) -> dict:
    if isinstance(dtype, pd.StringDtype):
        return {"string": dtype.storage, "nan": dtype.na_value is not pd.NA}
    if isinstance(dtype, np.dtype) and dtype.kind in "biufO":
        return {"numpy": dtype.str}
    raise _Unsupported(f"column dtype {dtype}")


def _scalar(x):
    if isinstance(x, np.generic):
        x = x.item()
    if x is None or isinstance(x, (str, bool, int, float)):
        return x
    raise _Unsupported(f"value of type {type(x).__name__}")


def _encode(value):
    if isinstance(value, pd.DataFrame):
        if not isinstance(value.index, pd.RangeIndex) or value.index.start != 0 or value.index.step != 1:
            raise _Unsupported("a frame indexed other than 0..n-1")
        cols = []
        for name, col in value.items():
            if not isinstance(name, str):
                raise _Unsupported("a column not named by a string")
            tag = _dtype_tag(col.dtype)
            values = col.tolist()  # Python scalars; only object columns can hold anything else
            cols.append([name, tag, [_scalar(x) for x in values] if tag.get("numpy") == "|O" else values])
        return {_FRAME: cols}
    if isinstance(value, dict):
        if _FRAME in value or not all(isinstance(k, str) for k in value):
            raise _Unsupported("a dict with non-string keys")
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return _scalar(value)


def _column(tag: dict, values: list):
    if "string" in tag:
        return pd.array(values, dtype=pd.StringDtype(tag["string"], na_value=np.nan if tag["nan"] else pd.NA))
    dtype = np.dtype(tag["numpy"])
    if dtype.kind != "O":
        return np.array([math.nan if v is None else v for v in values] if dtype.kind == "f" else values, dtype=dtype)
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _decode(node):
    if isinstance(node, dict):
        if _FRAME in node:
            return pd.DataFrame({name: _column(tag, values) for name, tag, values in node[_FRAME]})
        return {k: _decode(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_decode(v) for v in node]
    return node


def _layout(names) -> list:
    return [[method, list(args)] for method, args in names]


def save_views(directory: str, names, views: list, has_device: bool, warnings: list[str]) -> bool:
    """Writes `views` (the values of the views `names`: (method, args) each)
    into an entry being staged; False if they cannot be kept."""
    try:
        body = json.dumps({"analysis": ANALYSIS_VERSION, "names": _layout(names), "views": _encode(views),
                           "has_device": bool(has_device), "warnings": list(warnings)})
    except (_Unsupported, ValueError, RecursionError):
        # RecursionError: a module tree thousands of levels deep (a hostile
        # or broken trace) is served by the server's own encoder, not kept.
        return False
    with open(os.path.join(directory, VIEWS), "w", encoding="utf-8") as f:
        f.write(json.dumps({"crc32": zlib.crc32(body.encode()), "body": body}))
    return True


def load_views(directory: str, names, only: set[int] | None = None) -> dict | None:
    """{"views", "has_device", "warnings"} of an entry, or None when it has
    none that this code can use (absent, other analysis or list of views
    `names`, damaged). `only`: positions of the views to build (the others
    come back None)."""
    try:
        with open(os.path.join(directory, VIEWS), encoding="utf-8") as f:
            outer = json.load(f)
        body = outer["body"]
        if zlib.crc32(body.encode()) != outer["crc32"]:
            return None
        data = json.loads(body)
        if data.get("analysis") != ANALYSIS_VERSION or data.get("names") != _layout(names):
            return None
        views = [_decode(v) if only is None or i in only else None for i, v in enumerate(data["views"])]
        return {"views": views, "has_device": bool(data["has_device"]),
                "warnings": [str(w) for w in data["warnings"]]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
