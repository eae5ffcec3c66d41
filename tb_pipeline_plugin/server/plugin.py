"""The TensorBoard plugin: thin routes over the pure `*_impl` functions.

Each route parses its query parameters once (`params.parse`, into the Struct
`routes.ROUTES` declares), resolves the selection to loaded runs through the
store (never waiting for a parse), and hands typed values to `views`.
Everything a route can fail with is a typed error that `json_route` turns
into JSON.
"""
from __future__ import annotations

import os
import threading
import time

from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from ..analysis.pipeline_trace import steps_from_trace
from ..analysis.processor import TraceProcessor
from ..errors import Conflict, NotFound, Unprocessable
from ..pipeline import PipelineTables
from ..sources.artifacts import Source, make_loader
from ..sources.logdir import RunInfo, TraceFile, discover_runs, resolve, resolve_diagnostic, run_info, stat_file
from ..sources.tb_profiler import tb_profiler_names
from . import params as Q
from . import views
from .gc_freeze import freeze_startup_objects
from .http import json_response, json_route, static_response
from .routes import ROUTES
from .store import LoadState, LoadStore

PLUGIN_NAME = "tb_pipeline"
_STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")
# A rescan walks the logdir; data routes reuse a recent one.
_RESCAN_INTERVAL_S = 2.0
_FORCED_RESCAN_INTERVAL_S = 0.5
_MAX_RANK_SUMMARIES = 8192
_MAX_STATISTICS = 64


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
        self._runs: dict[str, RunInfo] = {}
        self._scanned_at = -1e9
        self._scan_lock = threading.Lock()
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
        for route in ROUTES:
            apps[route.path] = getattr(self, "_" + route.path.strip("/").replace("/", "_") + "_route")
        return apps

    def is_active(self) -> bool:
        # Called on TensorBoard's start-up path: must not walk or parse.
        return bool(self._logdir)

    def close(self) -> None:
        self._store.close()
        self._rank_store.close()
        self._stats_store.close()

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="Pipeline Diff")

    # ---- discovery and loading ---------------------------------------------------

    def _scan(self, max_age_s: float) -> dict[str, RunInfo]:
        with self._scan_lock:
            if time.monotonic() - self._scanned_at > max_age_s:
                self._runs = discover_runs(self._logdir)
                self._scanned_at = time.monotonic()
                keep = [Source("trace", tf.path) for info in self._runs.values() for tf in info.trace_files()]
                self._stats_store.retain_only(
                    Source("pipeline", info.path) for info in self._runs.values() if info.pipeline_files)
                keep += [Source("diagnostic", p) for info in self._runs.values() for p in info.diagnostic_files]
                self._store.retain_only(keep)
                self._rank_store.retain_only(Source("rank_summary", s.path) for s in keep if s.kind == "trace")
            return self._runs

    def _resolve(self, run: str, worker: str, span: str) -> TraceFile:
        try:
            return resolve(self._scan(_RESCAN_INTERVAL_S), run, worker or None, span or None)
        except NotFound:
            # Maybe a run written since the last scan; the interval keeps a
            # client asking for unknown runs from walking the logdir each time.
            return resolve(self._scan(_FORCED_RESCAN_INTERVAL_S), run, worker or None, span or None)

    def _request(self, run: str, worker: str, span: str) -> tuple[TraceFile, LoadState]:
        """Resolves a selection and asks the store for it: a load it starts
        (or a queued prefetch of it) goes before every background prefetch."""
        tf = self._resolve(run, worker, span)
        # One stat per request: a file still being written must not be served
        # from the version the last (cached) scan saw.
        size, mtime = stat_file(tf.path)
        if size is None:
            raise NotFound(f"the trace file of run {tf.run!r} (worker {tf.worker!r}) is gone")
        return tf, self._store.request(Source("trace", tf.path), size, mtime)

    @staticmethod
    def _loaded(tf: TraceFile, state: LoadState) -> TraceProcessor:
        if state.status == "loading":
            raise Conflict(f"run {tf.run!r} (worker {tf.worker!r}) is still loading")
        if state.status == "failed":
            raise Unprocessable(f"run {tf.run!r} (worker {tf.worker!r}) could not be read: {state.error}")
        return state.value

    def _trace(self, p: Q.RunParams) -> tuple[TraceProcessor, TraceFile]:
        tf, state = self._request(p.run, p.worker, p.span)
        return self._loaded(tf, state), tf

    def _pair(self, p: Q.PairParams) -> tuple[TraceProcessor, TraceProcessor, TraceFile, TraceFile]:
        # Both sides are requested before either answers 409, so a diff's
        # first request queues both traces ahead of the prefetches.
        b_tf, b_state = self._request(p.baseline, p.b_worker, p.b_span)
        e_tf, e_state = self._request(p.experimental, p.e_worker, p.e_span)
        return self._loaded(b_tf, b_state), self._loaded(e_tf, e_state), b_tf, e_tf

    def _request_diagnostic(self, run: str) -> tuple[str, LoadState]:
        try:
            path = resolve_diagnostic(self._scan(_RESCAN_INTERVAL_S), run)
        except NotFound:
            path = resolve_diagnostic(self._scan(_FORCED_RESCAN_INTERVAL_S), run)
        # Stat on every request: results being appended to are read again when they grow.
        size, mtime = stat_file(path)
        if size is None:
            raise NotFound(f"the diagnostic results of run {run!r} are gone")
        return run, self._store.request(Source("diagnostic", path), size, mtime)

    @staticmethod
    def _loaded_diagnostic(run: str, state: LoadState):
        if state.status == "loading":
            raise Conflict(f"the diagnostic results of run {run!r} are still loading")
        if state.status == "failed":
            raise Unprocessable(f"the diagnostic results of run {run!r} could not be read: {state.error}")
        return state.value

    def _run_info(self, run: str) -> RunInfo:
        try:
            return run_info(self._scan(_RESCAN_INTERVAL_S), run)
        except NotFound:  # maybe written since the last scan, as in _resolve
            return run_info(self._scan(_FORCED_RESCAN_INTERVAL_S), run)

    def _request_statistics(self, run: str):
        """Asks the store for the run's recorded statistics; returns a
        function giving the loaded tables (409/422 until then), or None when
        the run has none."""
        info = self._run_info(run)
        identity = info.statistics_identity() if info.pipeline_files else None
        if identity is None:
            return None
        state = self._stats_store.request(Source("pipeline", info.path), *identity)

        def statistics() -> PipelineTables:
            if state.status == "loading":
                raise Conflict(f"the pipeline statistics of run {run!r} are still loading")
            if state.status == "failed":
                raise Unprocessable(f"the pipeline statistics of run {run!r} could not be read: {state.error}")
            return state.value
        return statistics

    def _request_pipeline(self, run: str):
        """Asks the store for the run's statistics; a run without any gets
        its split from its default trace's DataLoader annotations. Returns a
        function giving the loaded tables (409/422 until then), so a pair
        queues both sides before either answers."""
        statistics = self._request_statistics(run)
        if statistics is not None:
            return statistics
        info = self._run_info(run)
        if not info.traces:
            raise NotFound(f"run {run!r} has neither pipeline statistics nor a trace")
        tf, trace_state = self._request(run, "", "")

        def from_trace() -> PipelineTables:
            tp = self._loaded(tf, trace_state)
            return tp.memo("pipeline_tables", lambda: PipelineTables(
                source="trace", steps=steps_from_trace(tp.linked), warnings=list(tp.warnings)))
        return from_trace

    def _ranks(self, run: str) -> list[tuple[TraceFile, LoadState]]:
        """Every worker of a run (its last span), all requested before any answer."""
        first = self._resolve(run, "", "")
        runs = self._scan(_RESCAN_INTERVAL_S)
        out = []
        for worker in runs[first.run].traces:
            tf = resolve(runs, first.run, worker)
            size, mtime = stat_file(tf.path)
            if size is None:
                raise NotFound(f"the trace file of run {tf.run!r} (worker {tf.worker!r}) is gone")
            out.append((tf, self._rank_store.request(Source("rank_summary", tf.path), size, mtime)))
        return out

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

    @json_route("/runs")
    def _runs_route(self, _: Q.NoParams):
        runs = self._scan(0.0)
        states = {}
        for name, info in runs.items():
            if info.traces:
                tf = resolve(runs, name)
                # Prefetches the default traces in the listed order (the UI
                # opens the first two runs by default) while the store has room
                # for them; the others stay `unloaded` until a data route asks.
                states[name] = self._store.summary(Source("trace", tf.path), tf.size, tf.mtime, prefetch=True)
        return views.runs_impl(runs, states)

    @json_route("/overview")
    def _overview_route(self, p: Q.RunParams):
        return views.overview_impl(*self._trace(p))

    @json_route("/operators")
    def _operators_route(self, p: Q.OperatorsParams):
        tp, _ = self._trace(p)
        return views.operators_impl(tp, p.group_by)

    @json_route("/kernels")
    def _kernels_route(self, p: Q.RunParams):
        return views.kernels_impl(self._trace(p)[0])

    @json_route("/modules")
    def _modules_route(self, p: Q.RunParams):
        return views.modules_impl(self._trace(p)[0])

    @json_route("/diff/overview")
    def _diff_overview_route(self, p: Q.PairParams):
        return views.diff_overview_impl(*self._pair(p))

    @json_route("/diff/explain")
    def _diff_explain_route(self, p: Q.PairParams):
        # Recorded statistics join the explanation only when both runs have
        # them (a trace's DataLoader split is already its data loading);
        # everything is requested before anything answers 409.
        b_stats, e_stats = self._request_statistics(p.baseline), self._request_statistics(p.experimental)
        pair = self._pair(p)
        pipelines = (b_stats(), e_stats()) if b_stats is not None and e_stats is not None else None
        return views.diff_explain_impl(*pair, pipelines)

    @json_route("/diff/modules")
    def _diff_modules_route(self, p: Q.DiffModulesParams):
        return views.diff_modules_impl(*self._pair(p), p)

    @json_route("/diff/operators")
    def _diff_operators_route(self, p: Q.DiffOperatorsParams):
        return views.diff_operators_impl(*self._pair(p), p)

    @json_route("/diff/kernels")
    def _diff_kernels_route(self, p: Q.DiffKernelsParams):
        return views.diff_kernels_impl(*self._pair(p), p)

    @json_route("/diagnostic")
    def _diagnostic_route(self, p: Q.DiagnosticParams):
        return views.diagnostic_impl(p.run, self._loaded_diagnostic(*self._request_diagnostic(p.run)))

    @json_route("/diff/diagnostic")
    def _diff_diagnostic_route(self, p: Q.DiffDiagnosticParams):
        # Both sides are requested before either answers 409.
        b, e = self._request_diagnostic(p.baseline), self._request_diagnostic(p.experimental)
        return views.diff_diagnostic_impl(p.baseline, self._loaded_diagnostic(*b),
                                          p.experimental, self._loaded_diagnostic(*e))

    @json_route("/pipeline")
    def _pipeline_route(self, p: Q.PipelineParams):
        return views.pipeline_impl(p.run, self._request_pipeline(p.run)())

    @json_route("/diff/pipeline")
    def _diff_pipeline_route(self, p: Q.PipelinePairParams):
        b, e = self._request_pipeline(p.baseline), self._request_pipeline(p.experimental)
        return views.diff_pipeline_impl(p.baseline, p.experimental, b(), e())

    @json_route("/timeline")
    def _timeline_route(self, p: Q.RunParams):
        # Discovery only: the link must work before (or without) our parse.
        tf = self._resolve(p.run, p.worker, p.span)
        return views.timeline_impl(tf, tb_profiler_names(self._logdir, tf))

    @json_route("/distributed")
    def _distributed_route(self, p: Q.DistributedParams):
        sides = [(p.baseline, self._ranks(p.baseline))]
        if p.experimental:
            sides.append((p.experimental, self._ranks(p.experimental)))
        loaded = [(run, [(tf.worker, self._loaded(tf, state)) for tf, state in ranks]) for run, ranks in sides]
        return views.distributed_impl(*loaded)
