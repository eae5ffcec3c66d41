"""Keep the cyclic garbage collector's full passes off the request path.

A full (generation 2) collection walks every container object the process
holds, and at TensorBoard's start that is ~90,000 of them (TensorBoard,
werkzeug, pandas, numpy and our own modules: classes, functions, module
dicts), all alive until exit. Such a pass runs in whichever thread happens
to allocate when the thresholds trip, and `benchmarks/bench_scale.py` (other
routes while a big trace parses) found it the slowest request
(benchmarks/README.md, "Figures behind constants").

`gc.freeze()` moves the objects alive now to a permanent generation that no
collection walks; objects made later are collected as before. It runs once
per process, after a full collection (so no garbage cycle is frozen), when
the plugin is constructed: TensorBoard's start, before any request is served.
`TB_PIPELINE_GC_FREEZE=0` turns it off.
"""
from __future__ import annotations

import gc
import os
import threading

_done = False
_lock = threading.Lock()


def freeze_startup_objects(env=os.environ) -> bool:
    """Freezes the objects alive now, once per process; True if it did now."""
    global _done
    if env.get("TB_PIPELINE_GC_FREEZE", "1").strip() == "0":
        return False
    with _lock:
        if _done:
            return False
        _done = True
    gc.collect()
    gc.freeze()
    return True
