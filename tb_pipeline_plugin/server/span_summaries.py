"""The overviews the run picker names spans by (their steps and start time).

A run's default trace is loaded for its status anyway (`runs` prefetches
it); the other spans of a worker that has several are asked for as rank
summaries (an overview only: read from the parse cache once a trace has been
parsed, else parsed in the background), so that the picker can tell them
apart before one is picked; so is the default once evicted from the trace store.
A worker's only span other than the default (a rank of a distributed run)
is named by what is already loaded, never parsed for a label.
"""
from __future__ import annotations

from ..sources.artifacts import Source
from ..sources.logdir import RunInfo, resolve
from .store import LoadState, LoadStore


def span_overviews(runs: dict[str, RunInfo], defaults: dict[str, LoadState],
                   summaries: LoadStore) -> tuple[dict[str, dict], bool]:
    """(overview by trace path, whether some are still being read).
    `defaults`: the load state of each run's default trace (the trace store's);
    `summaries`: the rank-summary store."""
    out: dict[str, dict] = {}
    loading = False
    for name, info in runs.items():
        if not info.traces:
            continue
        default = resolve(runs, name)
        state = defaults.get(name)
        parsed = state is not None and state.status == "ready"
        if parsed and state.value is not None:
            out[default.path] = state.value.overview()
        for spans in info.traces.values():
            several = len(spans) > 1
            for tf in spans.values():
                if tf.path in out:
                    continue
                # The default, parsed but evicted since, is read back from the parse cache.
                wanted = several or (tf.path == default.path and parsed)
                got = summaries.summary(Source("rank_summary", tf.path), tf.size, tf.mtime, prefetch=wanted)
                if got.status == "ready" and got.value is not None:
                    out[tf.path] = got.value.overview
                loading = loading or (wanted and got.status == "loading")
    return out, loading
