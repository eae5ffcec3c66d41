"""Stage times of every Python process of a TensorBoard run (issue 34's
breakdown): on PYTHONPATH with TB_PIPELINE_STAGES_FILE set
(`_tb_user.py --stages FILE`), each process appends
`{"pid", "stage", "t0", "t1"}` lines (wall clock, comparable across
processes) for the calls below, wrapped when their module is first
imported; `_tb_stages.py` prints the timeline. Benchmark-only: nothing of
this is in the plugin.
"""
import functools
import json
import os
import sys
import time

_FILE = os.environ.get("TB_PIPELINE_STAGES_FILE")
_STARTED = time.time()


def _write(stage: str, t0: float, t1: float, **extra) -> None:
    line = json.dumps({"pid": os.getpid(), "stage": stage, "t0": t0, "t1": t1, **extra}) + "\n"
    fd = os.open(_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _timed(stage: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            _write(stage, t0, time.time())
    wrapper.__wrapped_stage__ = True
    return wrapper


def _wrap(owner, name: str, stage: str) -> None:
    fn = getattr(owner, name, None)
    if fn is not None and not getattr(fn, "__wrapped_stage__", False):
        setattr(owner, name, _timed(stage, fn))


# module -> [(attribute path, stage)]; a path "Class.method" wraps a method.
HOOKS = {
    "tb_pipeline_plugin.server.loader": [("PipelinePluginLoader.load", "plugin load (imports + __init__)")],
    "tb_pipeline_plugin.sources.provider": [("discover_runs", "discovery")],
    "tb_pipeline_plugin.sources.pool": [("_import_worker", "worker: imports the parser"),
                                        ("ParsePool.start", "pool start (waited)"),
                                        ("ParsePool.run", "server: parse in a worker (submit -> result)")],
    "tb_pipeline_plugin.sources.workers": [("ParsePool.start", "pool start (waited)"),
                                           ("ParsePool.run", "server: parse in a worker (submit -> result)"),
                                           ("parse_to_entry", "worker: parse_to_entry"),
                                           ("load_trace", "worker: decode (load_trace)"),
                                           ("link", "worker: link"),
                                           ("save_linked", "worker: columns written"),
                                           ("compute_views", "worker: first views"),
                                           ("map_entry", "server: map the entry")],
    "tb_pipeline_plugin.sources.parse_entry": [("parse_to_entry", "worker: parse_to_entry"),
                                               ("load_trace", "worker: decode (load_trace)"),
                                               ("link", "worker: link"),
                                               ("save_linked", "worker: columns written"),
                                               ("compute_views", "worker: first views")],
    "tb_pipeline_plugin.sources.artifacts": [("TraceLoader.__call__", "server: TraceLoader (stat -> TraceProcessor)"),
                                             ("map_entry", "server: map the entry")],
    "tb_pipeline_plugin.trace.decode": [("_decode_split", "decode: forked ranges (msgspec + columns)"),
                                        ("build_table", "decode: build_table (join chunks)")],
}


def _install(module_name: str, module) -> None:
    for path, stage in HOOKS[module_name]:
        owner, name = module, path
        if "." in path:
            cls, name = path.split(".")
            owner = getattr(module, cls, None)
            if owner is None:
                continue
        _wrap(owner, name, stage)
    _write(f"imported {module_name}", _STARTED, time.time())


if _FILE:
    _write("interpreter up", _STARTED, _STARTED, argv=sys.argv[:3])
    from tb_pipeline_plugin import import_hook  # the checkout on PYTHONPATH (`_tb_user.py --code`)

    for _name in HOOKS:
        import_hook.when_imported(_name, functools.partial(_install, _name))
