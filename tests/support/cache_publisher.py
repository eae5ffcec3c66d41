"""Run in separate processes by tests/sources/test_scale.py: publish cache entries
into one cache root, as parse workers of several servers would."""
from __future__ import annotations

from tb_pipeline_plugin.sources.cache import CacheConfig, TraceCache
from tb_pipeline_plugin.trace import load_trace
from tb_pipeline_plugin.trace.link import link
from tb_pipeline_plugin.trace.persist import save_linked


def publish_copies(trace: str, root: str, max_bytes: int, names: list[str]) -> int:
    """Publishes the parse of `trace` under each of `names`; returns the pid."""
    import os

    linked = link(load_trace(trace))
    cache = TraceCache(CacheConfig(root, max_bytes))
    for name in names:
        staged = cache.staging_dir()
        save_linked(linked, staged)
        cache.publish(staged, name, 1, 1.0)
    return os.getpid()
