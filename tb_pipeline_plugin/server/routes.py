"""The route table: each route's path, parameters and response, declared once.

`plugin.py` serves these (its map from path to handler must name each
exactly once), `openapi.py` documents them, and the route tests check every
answer against them; adding a route means adding a row here, a handler in
`plugin.py` and an `*_impl` in `run_impls.py` or `diff/impls/`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import contract as C
from . import params as Q


@dataclass(frozen=True)
class Route:
    path: str
    params: type
    response: type
    summary: str


ROUTES: tuple[Route, ...] = tuple(Route(*row) for row in (
    ("/runs", Q.NoParams, C.RunsResponse,
     "Runs in the logdir with their workers, spans, kinds and load state; never waits for a parse."),
    ("/overview", Q.RunParams, C.OverviewResponse,
     "One trace's device, steps, step-time breakdown, GPU utilisation and memory."),
    ("/operators", Q.OperatorsParams, C.OperatorsResponse, "Operator statistics of one trace, by name or by name and input shape."),
    ("/kernels", Q.RunParams, C.KernelsResponse, "GPU kernel statistics of one trace, by name."),
    ("/modules", Q.RunParams, C.ModulesResponse, "The nn.Module tree of one trace with host and device time."),
    ("/diff/overview", Q.PairParams, C.DiffOverviewResponse,
     "Every overview metric of baseline and experimental with delta and delta %."),
    ("/diff/explain", Q.PairParams, C.DiffExplainResponse,
     "Why the experimental run's step time differs: ranked contributors with significance, one sentence, a waterfall."),
    ("/diff/memory", Q.PairParams, C.DiffMemoryResponse,
     "Both runs' memory peaks per device, their growth, and the bytes alive at each peak by module and by "
     "operator (largest |delta| first), with each step's peak and the peak step's curve."),
    ("/diff/modules", Q.DiffModulesParams, C.DiffModulesResponse,
     "One node of the aligned piece tree and a page of its children, with accumulated trends."),
    ("/diff/operators", Q.DiffOperatorsParams, C.DiffOperatorsResponse,
     "Operators of both runs joined, filtered, sorted (largest |delta| first by default) and paged."),
    ("/diff/kernels", Q.DiffKernelsParams, C.DiffKernelsResponse,
     "GPU kernels of both runs joined, filtered, sorted (largest |delta| first by default) and paged."),
    ("/diff/timeline", Q.DiffTimelineParams, C.DiffTimelineResponse,
     "Both runs' events of one aligned piece as timelines: lanes per thread and stream, events matched through the "
     "piece alignment with their deltas, events too small to draw merged into declared aggregates."),
    ("/diagnostic", Q.DiagnosticParams, C.DiagnosticResponse,
     "Diagnostic-mode results of one run: per stage the verdict in words, best concurrency and the sweep curves."),
    ("/diff/diagnostic", Q.DiffDiagnosticParams, C.DiffDiagnosticResponse,
     "Diagnostic-mode results of two runs side by side, stages matched by name, with best-QPS ratios."),
    ("/pipeline", Q.PipelineParams, C.PipelineResponse,
     "One run's pipeline statistics: step split, input-bound verdict, throughput, stages, callbacks, host metrics "
     "(a run without statistics: the split from its trace's DataLoader annotations)."),
    ("/diff/pipeline", Q.PipelinePairParams, C.DiffPipelineResponse,
     "Both runs' pipeline reports with summary deltas, and stages and callbacks joined, largest |delta| first."),
    ("/profiler_link", Q.RunParams, C.ProfilerLinkResponse,
     "torch-tb-profiler's run, worker and span for one of our traces (its timeline link); never parses."),
    ("/distributed", Q.DistributedParams, C.DistributedResponse,
     "Every worker file (rank) of a run: step time split into computation, communication and idle, the "
     "slowest rank, and baseline vs experimental rank by rank. Loads all ranks in parallel."),
))

ERROR_STATUSES = {
    "400": "A missing or malformed parameter.",
    "404": "An unknown run, worker or span, or a run without the data the route reads.",
    "409": "The run is still loading (run_status: loading); retry later.",
    "422": "The run could not be read or analysed; the message says why.",
}
