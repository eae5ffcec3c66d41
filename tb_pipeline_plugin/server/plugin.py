"""The TensorBoard plugin: thin routes over the pure `*_impl` functions.

Each route gets its query parameters parsed once (`http.json_routes`, into
the Struct `routes.ROUTES` declares), asks the stores for every artifact it
reads (a `Pending` each: never waiting for a parse), and hands the loaded
values and typed parameters to an impl: `run_impls` for one run,
`diff.pair_impls` for a pair of traces, the analysis and diff functions for
statistics and diagnostic results; it adds the references (run, worker,
span) to the answer. Everything a route can fail with is a typed error that
`http` turns into JSON.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable, TypeVar

from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from ..analysis.diagnostic import report as diagnostic_report
from ..analysis.diagnostic_group import pool_diagnostic
from ..analysis.group import RecordingGroup
from ..analysis.pipeline import report as pipeline_report
from ..analysis.pipeline_group import pool_statistics
from ..analysis.pipeline_trace import steps_from_trace
from ..analysis.processor import TraceProcessor
from ..diff import pair_impls
from ..diff.diagnostic import diff_diagnostic_impl
from ..diff.pipeline import compare_pipeline
from ..diff.timeline import diff_timeline_impl
from ..errors import NotFound
from ..pipeline import PipelineTables
from ..sources.artifacts import Source, make_loader
from ..sources.logdir import RunInfo, TraceFile, discover_runs, resolve, resolve_diagnostic, run_info, stat_file
from ..sources.tb_profiler import tb_profiler_names
from . import params as Q
from . import run_impls
from .gc_freeze import freeze_startup_objects
from .http import json_response, json_routes, static_response
from .loader import PLUGIN_NAME, TAB_NAME
from .span_summaries import span_overviews
from .store import LoadState, LoadStore, Pending, PendingAll

T = TypeVar("T")

_STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")
# A rescan walks the logdir; data routes reuse a recent one.
_RESCAN_INTERVAL_S = 2.0
_FORCED_RESCAN_INTERVAL_S = 0.5
_MAX_RANK_SUMMARIES = 8192
_MAX_STATISTICS = 64
# The groups of the last pair compared stay built (their recordings held
# beyond TB_PIPELINE_MAX_LOADED_TRACES): a pair of two groups of N needs 2N
# recordings at once, which the store alone would evict in turn.
_MAX_GROUPS = 2
# Pooled pipeline statistics / diagnostic results of groups, kept for the
# last few asked: every tab and the explanation ask again for the same pool.
_MAX_POOLED = 8


def _group_state(members: list[LoadState | None]) -> LoadState:
    """A group's load state: failed if a recording failed, loading while one
    loads, unloaded while one is; ready when all are."""
    known = [m for m in members if m is not None]
    for status in ("failed", "loading", "unloaded"):
        hit = next((m for m in known if m.status == status), None)
        if hit is not None:
            return LoadState(status, error=hit.error)
    return LoadState("ready", warnings=[w for m in known for w in m.warnings])


class PipelinePlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext):
        self._logdir = context.logdir or ""
        max_ready = int(os.environ.get("TB_PIPELINE_MAX_LOADED_TRACES", "8"))
        # Parses run in worker processes (sources/workers.py); the store's
        # threads only wait for them and map the result, two threads per
        # worker process (`TraceLoader.concurrency`) so a run's ranks load in
        # parallel. The store's queue serves the artifacts a data route asks
        # for before `runs`' background prefetches.
        load = make_loader()
        parallel = load.loaders["trace"].concurrency
        self._store = LoadStore(load, max_workers=parallel, max_ready=max_ready)
        # Per-rank summaries of distributed runs: small, so every rank of a
        # run (hundreds) stays loaded; a trace evicted from `_store` is mapped
        # again from the on-disk cache, not re-parsed.
        self._rank_store = LoadStore(load, max_workers=parallel, max_ready=_MAX_RANK_SUMMARIES)
        # Pipeline statistics: small tables, kept apart from the traces so
        # they do not count against TB_PIPELINE_MAX_LOADED_TRACES (the
        # explanation of a pair holds two traces and two statistics at once:
        # with a limit of 3 they would evict each other for ever).
        self._stats_store = LoadStore(load, max_workers=1, max_ready=_MAX_STATISTICS)
        self._scanned: dict[str, RunInfo] = {}
        self._scanned_at = -1e9
        self._scan_lock = threading.Lock()
        self._groups: dict[tuple, RecordingGroup] = {}
        self._groups_lock = threading.Lock()
        self._pooled: dict[tuple, tuple] = {}
        self._pooled_lock = threading.Lock()
        # Last: every module is imported by now; a full GC pass over them
        # would otherwise land on a request (server/gc_freeze.py).
        freeze_startup_objects()

    # ---- TensorBoard hooks -----------------------------------------------------

    def get_plugin_apps(self):
        apps = {
            "/index.js": self._serve_index_js,
            "/timeline.html": self._serve_timeline_html,
            "/timeline.js": self._serve_timeline_js,
        }
        apps.update(json_routes({
            "/runs": self._runs,
            "/overview": self._overview,
            "/operators": self._operators,
            "/kernels": self._kernels,
            "/modules": self._modules,
            "/diff/overview": self._diff_overview,
            "/diff/memory": self._diff_memory,
            "/diff/explain": self._diff_explain,
            "/diff/modules": self._diff_modules,
            "/diff/operators": self._diff_operators,
            "/diff/kernels": self._diff_kernels,
            "/diff/timeline": self._diff_timeline,
            "/diagnostic": self._diagnostic,
            "/diff/diagnostic": self._diff_diagnostic,
            "/pipeline": self._pipeline,
            "/diff/pipeline": self._diff_pipeline,
            "/timeline": self._timeline,
            "/distributed": self._distributed,
        }))
        return apps

    def is_active(self) -> bool:
        # Called on TensorBoard's start-up path: must not walk or parse.
        return bool(self._logdir)

    def close(self) -> None:
        self._store.close()
        self._rank_store.close()
        self._stats_store.close()

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=TAB_NAME)

    # ---- discovery and loading ---------------------------------------------------

    def _scan(self, max_age_s: float) -> dict[str, RunInfo]:
        with self._scan_lock:
            if time.monotonic() - self._scanned_at > max_age_s:
                self._scanned = discover_runs(self._logdir)
                self._scanned_at = time.monotonic()
                keep = [Source("trace", tf.path) for info in self._scanned.values() for tf in info.trace_files()]
                self._stats_store.retain_only(
                    Source("pipeline", info.path) for info in self._scanned.values() if info.pipeline_files)
                keep += [Source("diagnostic", p) for info in self._scanned.values() for p in info.diagnostic_files]
                self._store.retain_only(keep)
                self._rank_store.retain_only(Source("rank_summary", s.path) for s in keep if s.kind == "trace")
            return self._scanned

    def _lookup(self, find: Callable[[dict[str, RunInfo]], T]) -> T:
        """`find` over the recent scan; on NotFound once more over a fresh
        one (maybe written since). The forced interval keeps a client asking
        for unknown runs from walking the logdir each time."""
        try:
            return find(self._scan(_RESCAN_INTERVAL_S))
        except NotFound:
            return find(self._scan(_FORCED_RESCAN_INTERVAL_S))

    def _resolve(self, run: str, worker: str = "", span: str = "") -> TraceFile:
        return self._lookup(lambda runs: resolve(runs, run, worker or None, span or None))

    @staticmethod
    def _ask(store: LoadStore, source: Source, identity: tuple[int | None, float], subject: str,
             gone: str, plural: bool = False) -> Pending:
        """Asks `store` for one artifact of this file version; a load it starts
        (or a queued prefetch of it) goes before every background prefetch.
        `identity`: (size, mtime) stat'ed for this request, so a file still
        being written is not served from the version the last scan saw."""
        size, mtime = identity
        if size is None:
            raise NotFound(gone)
        return Pending(store.request(source, size, mtime), subject, plural)

    def _ask_trace(self, tf: TraceFile, store: LoadStore | None = None, kind: str = "trace") -> Pending:
        who = f"run {tf.run!r} (worker {tf.worker!r})"
        return self._ask(store or self._store, Source(kind, tf.path), stat_file(tf.path), who,
                         f"the trace file of {who} is gone")

    def _ask_selection(self, p: Q.RunParams) -> tuple[Pending | PendingAll, dict]:
        return self._ask_side(p.run, p.worker, p.span)

    def _ask_side(self, run: str, worker: str = "", span: str = "") -> tuple[Pending | PendingAll, dict]:
        """One side of a comparison and its reference: a run's trace, or for
        a group of recordings (no worker or span asked) every recording's
        default trace, read as one `RecordingGroup`."""
        members = [] if worker or span else self._lookup(lambda runs: run_info(runs, run)).recordings
        if not members:
            tf = self._resolve(run, worker, span)
            return self._ask_trace(tf), tf.selection()
        files = [self._resolve(m) for m in members]
        ref = {"run": run, "worker": "", "span": ""}
        key = tuple((tf.path, *stat_file(tf.path)) for tf in files)
        with self._groups_lock:
            group = self._groups.get(key)
        if group is not None:
            # Built from these very file versions: its recordings stay with
            # it even when the store has evicted them for other runs.
            return PendingAll((), lambda _: group), ref
        pending = PendingAll(tuple(self._ask_trace(tf) for tf in files),
                             lambda tps: self._group(key, tps, [tf.run for tf in files]))
        return pending, ref

    def _group(self, key: tuple, members: list[TraceProcessor], names: list[str]) -> RecordingGroup:
        """The group of these loaded recordings, kept for the last `_MAX_GROUPS`
        groups (its recordings with it)."""
        with self._groups_lock:
            group = self._groups.get(key)
            if group is None:
                group = RecordingGroup(members, names)
                self._groups[key] = group
                while len(self._groups) > _MAX_GROUPS:
                    self._groups.pop(next(iter(self._groups)))
            return group

    def _pair(self, p: Q.PairParams) -> tuple[TraceProcessor, TraceProcessor, dict]:
        """Both sides and the references a pair answer carries. Both sides
        are asked for before either answers 409, so a diff's first request
        queues both ahead of the prefetches."""
        b, b_ref = self._ask_side(p.baseline, p.b_worker, p.b_span)
        e, e_ref = self._ask_side(p.experimental, p.e_worker, p.e_span)
        return b.value(), e.value(), {"baseline": b_ref, "experimental": e_ref}

    def _recordings(self, run: str) -> list[str]:
        """A group's recordings (empty for a plain run)."""
        return self._lookup(lambda runs: run_info(runs, run)).recordings

    @staticmethod
    def _ask_members(run: str, members: list[str], ask: Callable[[str], T], what: str) -> tuple[T, ...]:
        """`ask` of every recording of group `run`, all before any answers; a
        recording without the data says so, naming the group."""
        try:
            return tuple(ask(m) for m in members)
        except NotFound as exc:
            raise NotFound(f"group {run!r} pools its recordings' {what}, and one has none: {exc}") from None

    def _pooling(self, pool: Callable, members: list[str]) -> Callable[[list], object]:
        """`pool(parts, members)`, computed once for the same loaded parts (the
        store's very objects: their identities are the key, and the entry holds
        them, so an identity is not reused while it is kept) and kept for the
        last `_MAX_POOLED` pools."""
        def pooled(parts: list):
            key = (pool.__name__, tuple(members), tuple(map(id, parts)))
            with self._pooled_lock:
                hit = self._pooled.get(key)
            if hit is not None:
                return hit[1]
            value = pool(parts, members)
            with self._pooled_lock:
                self._pooled[key] = (parts, value)
                while len(self._pooled) > _MAX_POOLED:
                    self._pooled.pop(next(iter(self._pooled)))
            return value
        return pooled

    def _ask_diagnostic(self, run: str) -> Pending | PendingAll:
        """The run's diagnostic results; a group's, its recordings' pooled
        (analysis/diagnostic_group.py), each recording asked for before any answers."""
        members = self._recordings(run)
        if members:
            return PendingAll(self._ask_members(run, members, self._ask_diagnostic, "diagnostic results"),
                              self._pooling(pool_diagnostic, members))
        path = self._lookup(lambda runs: resolve_diagnostic(runs, run))
        # Stat'ed on every request: results being appended to are read again when they grow.
        return self._ask(self._store, Source("diagnostic", path), stat_file(path),
                         f"the diagnostic results of run {run!r}", f"the diagnostic results of run {run!r} are gone",
                         plural=True)

    def _ask_statistics(self, run: str) -> Pending | PendingAll | None:
        """The run's recorded pipeline statistics, or None when it has none; a
        group's, its recordings' pooled (analysis/pipeline_group.py), None
        unless every recording has them."""
        members = self._recordings(run)
        if members:
            parts = [self._ask_statistics(m) for m in members]
            if any(p is None for p in parts):
                return None
            return PendingAll(tuple(parts), self._pooling(pool_statistics, members))
        info = self._lookup(lambda runs: run_info(runs, run))
        identity = info.statistics_identity() if info.pipeline_files else None
        if identity is None:
            return None
        return self._ask(self._stats_store, Source("pipeline", info.path), identity,
                         f"the pipeline statistics of run {run!r}", "", plural=True)

    def _ask_pipeline(self, run: str) -> Pending | PendingAll:
        """The run's statistics; a run without any gets its split from its
        default trace's DataLoader annotations; a group, its recordings'
        (each as a run of its own) pooled."""
        members = self._recordings(run)
        if members:
            return PendingAll(self._ask_members(run, members, self._ask_pipeline, "pipeline statistics"),
                              self._pooling(pool_statistics, members))
        statistics = self._ask_statistics(run)
        if statistics is not None:
            return statistics
        info = self._lookup(lambda runs: run_info(runs, run))
        if not info.traces:
            raise NotFound(f"run {run!r} has neither pipeline statistics nor a trace")
        return self._ask_trace(self._resolve(run)).then(lambda tp: tp.memo("pipeline_tables", lambda: PipelineTables(
            source="trace", steps=steps_from_trace(tp.linked), warnings=list(tp.warnings))))

    def _ask_ranks(self, run: str) -> list[tuple[TraceFile, Pending]]:
        """Every worker of a run (its last span), all asked for before any answers."""
        first = self._resolve(run)
        runs = self._scan(_RESCAN_INTERVAL_S)
        return [(tf, self._ask_trace(tf, self._rank_store, "rank_summary"))
                for tf in (resolve(runs, first.run, worker) for worker in runs[first.run].traces)]

    # ---- routes ------------------------------------------------------------------

    @staticmethod
    def _static_file(name: str, content_type: str):
        path = os.path.join(_STATIC_DIR, name)
        if not os.path.exists(path):
            return json_response(
                {"error": "the frontend bundle is not built: run `make setup` (or `npm run build` in frontend/)", "status": 404},
                404,
            )
        with open(path, "rb") as f:
            return static_response(f.read(), content_type)

    @wrappers.Request.application
    def _serve_index_js(self, request):
        return self._static_file("index.js", "text/javascript; charset=utf-8")

    # The timeline page: torch-tb-profiler's trace viewer for one of our
    # traces (its own UI has no deep link). Static: the page reads
    # run/worker/span from its URL and asks `timeline` for their names.
    @wrappers.Request.application
    def _serve_timeline_html(self, request):
        return self._static_file("timeline.html", "text/html; charset=utf-8")

    @wrappers.Request.application
    def _serve_timeline_js(self, request):
        return self._static_file("timeline.js", "text/javascript; charset=utf-8")

    def _runs(self, _: Q.NoParams) -> dict:
        runs = self._scan(0.0)
        states = {}
        for name, info in runs.items():
            if info.traces:
                tf = resolve(runs, name)
                # Prefetches the default traces in the listed order (the UI
                # opens the first two runs by default) while the store has room
                # for them; the others stay `unloaded` until a data route asks.
                states[name] = self._store.summary(Source("trace", tf.path), tf.size, tf.mtime, prefetch=True)
        overviews, spans_loading = span_overviews(runs, states, self._rank_store)
        for name, info in runs.items():
            if info.recordings and not info.traces:
                states[name] = _group_state([states.get(m) for m in info.recordings])
        return run_impls.runs_impl(runs, states, overviews, spans_loading)

    def _overview(self, p: Q.RunParams) -> dict:
        trace, ref = self._ask_selection(p)
        return run_impls.overview_impl(trace.value(), ref)

    def _operators(self, p: Q.OperatorsParams) -> dict:
        return run_impls.operators_impl(self._ask_selection(p)[0].value(), p.group_by)

    def _kernels(self, p: Q.RunParams) -> dict:
        return run_impls.kernels_impl(self._ask_selection(p)[0].value())

    def _modules(self, p: Q.RunParams) -> dict:
        return run_impls.modules_impl(self._ask_selection(p)[0].value())

    def _diff_overview(self, p: Q.PairParams) -> dict:
        b, e, refs = self._pair(p)
        return {**refs, **pair_impls.diff_overview_impl(b, e)}

    def _diff_memory(self, p: Q.PairParams) -> dict:
        b, e, refs = self._pair(p)
        return {**refs, **pair_impls.diff_memory_impl(b, e)}

    def _diff_explain(self, p: Q.PairParams) -> dict:
        # Recorded statistics join the explanation only when both runs have
        # them (a trace's DataLoader split is already its data loading);
        # everything is asked for before anything answers 409.
        b_stats, e_stats = self._ask_statistics(p.baseline), self._ask_statistics(p.experimental)
        b, e, refs = self._pair(p)
        pipelines = (b_stats.value(), e_stats.value()) if b_stats is not None and e_stats is not None else None
        return {**refs, **pair_impls.diff_explain_impl(b, e, pipelines)}

    def _diff_modules(self, p: Q.DiffModulesParams) -> dict:
        b, e, refs = self._pair(p)
        return {**refs, **pair_impls.diff_modules_impl(b, e, p.path, p.offset, p.limit)}

    def _diff_operators(self, p: Q.DiffOperatorsParams) -> dict:
        b, e, refs = self._pair(p)
        return {**refs, **pair_impls.diff_operators_impl(b, e, p.table_query(), p.group_by, p.path)}

    def _diff_kernels(self, p: Q.DiffKernelsParams) -> dict:
        b, e, refs = self._pair(p)
        return {**refs, **pair_impls.diff_kernels_impl(b, e, p.table_query(), p.path)}

    def _diff_timeline(self, p: Q.DiffTimelineParams) -> dict:
        b, e, refs = self._pair(p)
        return {**refs, **diff_timeline_impl(b, e, p.path, p.from_us, p.to_us, p.width_px, p.max_events, p.find)}

    def _diagnostic(self, p: Q.DiagnosticParams) -> dict:
        return {"run": p.run, **diagnostic_report(self._ask_diagnostic(p.run).value())}

    def _diff_diagnostic(self, p: Q.DiffDiagnosticParams) -> dict:
        b, e = self._ask_diagnostic(p.baseline), self._ask_diagnostic(p.experimental)
        out = diff_diagnostic_impl(b.value(), e.value())
        out["baseline"]["run"], out["experimental"]["run"] = p.baseline, p.experimental
        return out

    def _pipeline(self, p: Q.PipelineParams) -> dict:
        return {"run": p.run, **pipeline_report(self._ask_pipeline(p.run).value())}

    def _diff_pipeline(self, p: Q.PipelinePairParams) -> dict:
        b, e = self._ask_pipeline(p.baseline), self._ask_pipeline(p.experimental)
        return {"baseline_run": p.baseline, "experimental_run": p.experimental,
                **compare_pipeline(b.value(), e.value())}

    def _timeline(self, p: Q.RunParams) -> dict:
        # Discovery only: the link must work before (or without) our parse.
        tf = self._resolve(p.run, p.worker, p.span)
        return run_impls.timeline_impl(tf, tb_profiler_names(self._logdir, tf))

    def _distributed(self, p: Q.DistributedParams) -> dict:
        sides = [(p.baseline, self._ask_ranks(p.baseline))]
        if p.experimental:
            sides.append((p.experimental, self._ask_ranks(p.experimental)))
        loaded = [(run, [(tf.worker, rank.value()) for tf, rank in ranks]) for run, ranks in sides]
        return run_impls.distributed_impl(*loaded)
