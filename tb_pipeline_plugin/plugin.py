"""The TensorBoard plugin: thin routes over the pure `*_impl` functions.

Routes resolve parameters to a trace, ask the store for its parsed form
(never waiting for a parse), and hand it to a pure function. Everything a
route can fail with is a typed error that `json_route` turns into JSON.
"""
from __future__ import annotations

import os
import threading
import time

from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from . import run_api
from .errors import BadRequest, Conflict, NotFound, Unprocessable
from .http import json_response, json_route
from .logdir import RunInfo, TraceFile, discover_runs, resolve, stat_file
from .store import LoadState, LoadStore
from .trace_processor import TraceProcessor

PLUGIN_NAME = "tb_pipeline"
_STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
# A rescan walks the logdir; data routes reuse a recent one.
_RESCAN_INTERVAL_S = 2.0
_FORCED_RESCAN_INTERVAL_S = 0.5


class PipelinePlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext):
        self._logdir = context.logdir or ""
        max_ready = int(os.environ.get("TB_PIPELINE_MAX_LOADED_TRACES", "8"))
        # One parse at a time: a parse is mostly Python holding the GIL, so
        # more threads would not finish sooner. The store's queue serves the
        # traces a data route asks for before `runs`' background prefetches.
        self._store = LoadStore(TraceProcessor.load, max_workers=1, max_ready=max_ready)
        self._runs: dict[str, RunInfo] = {}
        self._scanned_at = -1e9
        self._scan_lock = threading.Lock()

    # ---- TensorBoard hooks -----------------------------------------------------

    def get_plugin_apps(self):
        return {
            "/index.js": self._serve_index_js,
            "/runs": self._runs_route,
            "/overview": self._overview_route,
            "/operators": self._operators_route,
            "/kernels": self._kernels_route,
            "/modules": self._modules_route,
            "/diff/overview": self._diff_overview_route,
            "/diff/modules": self._diff_modules_route,
            "/diff/operators": self._diff_operators_route,
            "/diff/kernels": self._diff_kernels_route,
        }

    def is_active(self) -> bool:
        # Called on TensorBoard's start-up path: must not walk or parse.
        return bool(self._logdir)

    def close(self) -> None:
        self._store.close()

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="Pipeline Diff")

    # ---- discovery and loading ---------------------------------------------------

    def _scan(self, max_age_s: float) -> dict[str, RunInfo]:
        with self._scan_lock:
            if time.monotonic() - self._scanned_at > max_age_s:
                self._runs = discover_runs(self._logdir)
                self._scanned_at = time.monotonic()
                self._store.retain_only(tf.path for info in self._runs.values() for tf in info.trace_files())
            return self._runs

    def _resolve(self, run, worker, span, param: str = "run") -> TraceFile:
        if not run:
            raise BadRequest(f"missing parameter {param!r}")
        try:
            return resolve(self._scan(_RESCAN_INTERVAL_S), run, worker or None, span or None)
        except NotFound:
            # Maybe a run written since the last scan; the interval keeps a
            # client asking for unknown runs from walking the logdir each time.
            return resolve(self._scan(_FORCED_RESCAN_INTERVAL_S), run, worker or None, span or None)

    def _request(self, run, worker, span, param: str = "run") -> tuple[TraceFile, LoadState]:
        """Resolves a selection and asks the store for it: a load it starts
        (or a queued prefetch of it) goes before every background prefetch."""
        tf = self._resolve(run, worker, span, param)
        # One stat per request: a file still being written must not be served
        # from the version the last (cached) scan saw.
        size, mtime = stat_file(tf.path)
        if size is None:
            raise NotFound(f"the trace file of run {tf.run!r} (worker {tf.worker!r}) is gone")
        return tf, self._store.request(tf.path, size, mtime)

    @staticmethod
    def _loaded(tf: TraceFile, state: LoadState) -> tuple[TraceProcessor, dict]:
        if state.status == "loading":
            raise Conflict(f"run {tf.run!r} (worker {tf.worker!r}) is still loading")
        if state.status == "failed":
            raise Unprocessable(f"run {tf.run!r} (worker {tf.worker!r}) could not be read: {state.error}")
        return state.value, run_api.selection(tf.run, tf.worker, tf.span)

    def _trace(self, run, worker, span, param: str = "run") -> tuple[TraceProcessor, dict]:
        return self._loaded(*self._request(run, worker, span, param))

    def _pair(self, args) -> tuple[TraceProcessor, TraceProcessor, dict, dict]:
        # Both sides are requested before either answers 409, so a diff's
        # first request queues both traces ahead of the prefetches.
        b_req = self._request(args.get("baseline"), args.get("b_worker"), args.get("b_span"), "baseline")
        e_req = self._request(args.get("experimental"), args.get("e_worker"), args.get("e_span"), "experimental")
        b, b_sel = self._loaded(*b_req)
        e, e_sel = self._loaded(*e_req)
        return b, e, b_sel, e_sel

    # ---- routes ------------------------------------------------------------------

    @wrappers.Request.application
    def _serve_index_js(self, request):
        path = os.path.join(_STATIC_DIR, "index.js")
        if not os.path.exists(path):
            return json_response(
                {"error": "the frontend bundle is not built: run `make setup` (or `npm run build` in frontend/)", "status": 404},
                404,
            )
        with open(path, "rb") as f:
            body = f.read()
        return wrappers.Response(body, content_type="text/javascript; charset=utf-8")

    @json_route
    def _runs_route(self, request):
        runs = self._scan(0.0)
        states = {}
        for name, info in runs.items():
            if info.traces:
                tf = resolve(runs, name)
                # Prefetches the default traces in the listed order (the UI
                # opens the first two runs by default) while the store has room
                # for them; the others stay `unloaded` until a data route asks.
                states[name] = self._store.summary(tf.path, tf.size, tf.mtime, prefetch=True)
        return run_api.runs_impl(runs, states)

    @json_route
    def _overview_route(self, request):
        a = request.args
        tp, sel = self._trace(a.get("run"), a.get("worker"), a.get("span"))
        return run_api.overview_impl(tp, sel)

    @json_route
    def _operators_route(self, request):
        a = request.args
        tp, _ = self._trace(a.get("run"), a.get("worker"), a.get("span"))
        return run_api.operators_impl(tp, a.get("group_by"))

    @json_route
    def _kernels_route(self, request):
        a = request.args
        tp, _ = self._trace(a.get("run"), a.get("worker"), a.get("span"))
        return run_api.kernels_impl(tp)

    @json_route
    def _modules_route(self, request):
        a = request.args
        tp, _ = self._trace(a.get("run"), a.get("worker"), a.get("span"))
        return run_api.modules_impl(tp)

    @json_route
    def _diff_overview_route(self, request):
        from .diff import api as diff_api

        b, e, b_sel, e_sel = self._pair(request.args)
        return {"baseline": b_sel, "experimental": e_sel, **diff_api.diff_overview_impl(b, e)}

    @json_route
    def _diff_modules_route(self, request):
        from .diff import api as diff_api

        b, e, b_sel, e_sel = self._pair(request.args)
        return {"baseline": b_sel, "experimental": e_sel, **diff_api.diff_modules_impl(b, e, request.args.get("path", ""), request.args)}

    @json_route
    def _diff_operators_route(self, request):
        from .diff import api as diff_api

        b, e, b_sel, e_sel = self._pair(request.args)
        return {"baseline": b_sel, "experimental": e_sel, **diff_api.diff_operators_impl(b, e, request.args)}

    @json_route
    def _diff_kernels_route(self, request):
        from .diff import api as diff_api

        b, e, b_sel, e_sel = self._pair(request.args)
        return {"baseline": b_sel, "experimental": e_sel, **diff_api.diff_kernels_impl(b, e, request.args)}
