"""The TensorBoard plugin: TensorBoard's hooks and thin routes.

Each route gets its query parameters parsed once (`http.json_routes`, into
the Struct `routes.ROUTES` declares), asks the provider for every run it
reads (`sources/provider.py`: each a `Pending`, never waiting for a parse),
and hands the loaded values and typed parameters to an impl: `run_impls`
for one run, `diff/impls/` for a pair (a `Pair`, diff/pair.py). Everything a route can fail with
is a typed error that `http` turns into JSON.
"""
from __future__ import annotations

import os

import msgspec
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .. import contract as C
from ..analysis.distributed import ranks_summary
from ..diff.impls.explain import diff_explain_impl
from ..diff.impls.memory import diff_memory_impl
from ..diff.impls.modules import diff_modules_impl
from ..diff.impls.overview import diff_overview_impl
from ..diff.impls.pipeline import diff_diagnostic_impl, diff_pipeline_impl
from ..diff.impls.tables import diff_kernels_impl, diff_operators_impl
from ..diff.impls.timeline import diff_timeline_impl
from ..diff.pair import NO_STATISTICS, NOT_GIVEN, pair_of, statistics_pair_of
from ..sources.artifacts import make_loader
from ..bounded_cache import BoundedCache
from ..sources.provider import RunProvider, trace_ref
from ..sources.rank_index import RunRanks, max_ranks_from_env
from ..sources.tb_profiler import tb_profiler_names
from . import params as Q
from . import run_impls
from .gc_freeze import freeze_startup_objects
from .http import encode_json, json_response, json_routes, static_response
from .names import PLUGIN_NAME, TAB_NAME

_STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")


class PipelinePlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext):
        self._logdir = context.logdir or ""
        max_ready = int(os.environ.get("TB_PIPELINE_MAX_LOADED_TRACES", "8"))
        self.runs = RunProvider(self._logdir, make_loader(), max_ready=max_ready, max_ranks=max_ranks_from_env())
        # The last few `distributed` answers, encoded, keyed by the very
        # records they were computed from (held with them: their ids stay
        # unique): asked again, 10,000 ranks (3 MB of JSON) are neither
        # recomputed nor encoded again.
        self._rank_answers: BoundedCache[tuple, tuple] = BoundedCache(4)
        # Each run's `ranks_summary`, keyed and held the same way (`_rank_summary`).
        self._rank_summaries: BoundedCache[tuple, tuple] = BoundedCache(4)
        # Last: every module is imported by now; a full GC pass over them
        # would otherwise land on a request (server/gc_freeze.py).
        freeze_startup_objects()
        if self._logdir:
            self.runs.start_loading()

    # ---- TensorBoard hooks -----------------------------------------------------

    def get_plugin_apps(self):
        apps = {
            "/index.js": self._serve_index_js,
            "/profiler.html": self._serve_profiler_html,
            "/profiler.js": self._serve_profiler_js,
        }
        apps.update(json_routes({
            "/runs": self._list_runs,
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
            "/profiler_link": self._profiler_link,
            "/distributed": self._distributed,
        }))
        return apps

    def is_active(self) -> bool:
        # Called on TensorBoard's start-up path: must not walk or parse.
        return bool(self._logdir)

    def close(self) -> None:
        self.runs.close()

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=TAB_NAME)

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

    # The profiler page: torch-tb-profiler's trace viewer for one of our
    # traces (its own UI has no deep link). Static: the page reads
    # run/worker/span from its URL and asks `profiler_link` for their names.
    @wrappers.Request.application
    def _serve_profiler_html(self, request):
        return self._static_file("profiler.html", "text/html; charset=utf-8")

    @wrappers.Request.application
    def _serve_profiler_js(self, request):
        return self._static_file("profiler.js", "text/javascript; charset=utf-8")

    def _list_runs(self, _: Q.NoParams) -> C.RunsResponse:
        return run_impls.runs_impl(*self.runs.listing())

    def _overview(self, p: Q.RunParams) -> C.OverviewResponse:
        trace, ref = self.runs.side(p.run, p.worker, p.span)
        return run_impls.overview_impl(trace.value(), ref)

    def _operators(self, p: Q.OperatorsParams) -> C.OperatorsResponse:
        trace, ref = self.runs.side(p.run, p.worker, p.span)
        return run_impls.operators_impl(trace.value(), p.group_by, ref)

    def _kernels(self, p: Q.RunParams) -> C.KernelsResponse:
        trace, ref = self.runs.side(p.run, p.worker, p.span)
        return run_impls.kernels_impl(trace.value(), ref)

    def _modules(self, p: Q.RunParams) -> C.ModulesResponse:
        trace, ref = self.runs.side(p.run, p.worker, p.span)
        return run_impls.modules_impl(trace.value(), ref)

    def _pipeline(self, p: Q.PipelineParams) -> C.PipelineResponse:
        return run_impls.pipeline_impl(self.runs.pipeline(p.run).value(), trace_ref(p.run))

    def _diagnostic(self, p: Q.DiagnosticParams) -> C.DiagnosticResponse:
        return run_impls.diagnostic_impl(self.runs.diagnostic(p.run).value(), trace_ref(p.run))

    def _profiler_link(self, p: Q.RunParams) -> C.ProfilerLinkResponse:
        # Discovery only: the link must work before (or without) our parse.
        tf = self.runs.resolve(p.run, p.worker, p.span)
        return run_impls.profiler_link_impl(tb_profiler_names(self._logdir, tf), tf.selection())

    def _distributed(self, p: Q.DistributedParams) -> msgspec.Raw:
        # Every rank of both runs asked for before either side is read; the
        # ranks ready answer now, the others are counted as loading.
        sides = [self.runs.ranks(run) for run in (p.baseline, p.experimental) if run]
        refs = {"baseline": trace_ref(p.baseline), "experimental": trace_ref(p.experimental) if p.experimental else None}

        def answer() -> tuple:
            body = encode_json(run_impls.distributed_impl(*sides, summarise=self._rank_summary, refs=refs))
            return [s.ready for s in sides], msgspec.Raw(body)

        key = (p.baseline, p.experimental, *(s.key for s in sides))
        return self._rank_answers.get_or_make(key, answer)[1]

    def _rank_summary(self, ranks: RunRanks) -> dict:
        """A run's `ranks_summary`, remembered by its ranks (`RunRanks.key`):
        the run asked alone, then against another, or against itself, is
        summarised once (a third of a 10,000-rank pair's answer)."""
        return self._rank_summaries.get_or_make(ranks.key, lambda: (ranks.ready, ranks_summary(ranks.ready)))[1]

    # ---- pairs -------------------------------------------------------------------

    def _pair(self, p: Q.PairParams):
        return self.runs.pair(p.baseline, p.experimental, p.b_worker, p.b_span, p.e_worker, p.e_span)

    @staticmethod
    def _refs(p: Q.PipelinePairParams | Q.DiffDiagnosticParams) -> dict:
        return {"baseline": trace_ref(p.baseline), "experimental": trace_ref(p.experimental)}

    def _comparison(self, p: Q.PairParams, with_statistics: bool = True):
        """The pair's `Pair` (diff/pair.py) and both runs' references; each
        run's recorded statistics, when asked (they give the step verdict;
        either its work per step and what the run was), all asked for
        before any is read."""
        asked = (self.runs.statistics(p.baseline), self.runs.statistics(p.experimental)) if with_statistics else ()
        b, e, refs = self._pair(p)
        statistics = tuple(None if a is None else a.value() for a in asked) or NO_STATISTICS
        return pair_of(b, e, statistics, p.given() if with_statistics else NOT_GIVEN), refs

    def _diff_overview(self, p: Q.PairParams) -> C.DiffOverviewResponse:
        pair, refs = self._comparison(p)
        return diff_overview_impl(pair, refs)

    def _diff_memory(self, p: Q.PairParams) -> C.DiffMemoryResponse:
        pair, refs = self._comparison(p, with_statistics=False)
        snapshots = (self.runs.snapshot(p.baseline), self.runs.snapshot(p.experimental))
        return diff_memory_impl(pair, snapshots, refs)

    def _diff_explain(self, p: Q.PairParams) -> C.DiffExplainResponse:
        pair, refs = self._comparison(p)
        return diff_explain_impl(pair, refs)

    def _diff_modules(self, p: Q.DiffModulesParams) -> C.DiffModulesResponse:
        pair, refs = self._comparison(p)
        return diff_modules_impl(pair, p.query(), refs)

    def _diff_operators(self, p: Q.DiffOperatorsParams) -> C.DiffOperatorsResponse:
        pair, refs = self._comparison(p)
        return diff_operators_impl(pair, p.query(), refs)

    def _diff_kernels(self, p: Q.DiffKernelsParams) -> C.DiffKernelsResponse:
        pair, refs = self._comparison(p)
        return diff_kernels_impl(pair, p.query(), refs)

    def _diff_timeline(self, p: Q.DiffTimelineParams) -> C.DiffTimelineResponse:
        pair, refs = self._comparison(p, with_statistics=False)
        return diff_timeline_impl(pair, p.query(), refs)

    def _diff_pipeline(self, p: Q.PipelinePairParams) -> C.DiffPipelineResponse:
        b, e = self.runs.pipeline(p.baseline), self.runs.pipeline(p.experimental)
        return diff_pipeline_impl(statistics_pair_of(b.value(), e.value()), self._refs(p))

    def _diff_diagnostic(self, p: Q.DiffDiagnosticParams) -> C.DiffDiagnosticResponse:
        b, e = self.runs.diagnostic(p.baseline), self.runs.diagnostic(p.experimental)
        return diff_diagnostic_impl(statistics_pair_of(b.value(), e.value()), self._refs(p))
