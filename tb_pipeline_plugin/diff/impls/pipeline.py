"""`diff/pipeline` and `diff/diagnostic`: two runs' recorded pipeline
statistics, or diagnostic results, compared. These read no trace: a
`StatisticsPair` (diff/pair.py), whose answers are memoised like a `Pair`'s
(each comparison bootstraps its stages: about 100 ms on the H200 pair)."""
from __future__ import annotations

from ... import contract as C
from ...analysis.diagnostic.answer import report_struct as diagnostic_struct
from ...analysis.statistics.answer import report_struct
from ..diagnostic.compare import compare_diagnostic
from ..pair import StatisticsPair
from ..statistics.compare import compare_pipeline
from . import UNNAMED, named


def diff_pipeline_impl(pair: StatisticsPair, refs: dict | None = None) -> C.DiffPipelineResponse:
    """Both runs' pipeline statistics (PipelineTables) compared (diff/statistics/compare.py)."""
    return named(pair.view(("diff/pipeline",), lambda: _compared(compare_pipeline(pair.b, pair.e, pair.noise))),
                 refs)


def _compared(c: dict) -> C.DiffPipelineResponse:
    return C.DiffPipelineResponse(
        baseline=UNNAMED, experimental=UNNAMED,
        baseline_report=report_struct(c["baseline_report"]), experimental_report=report_struct(c["experimental_report"]),
        summary=[C.PipelineSummaryRow(**{**s, "significance": C.significance_of(s["significance"])})
                 for s in c["summary"]],
        stages=[C.DiffPipelineStageRow(**{**s, "significance": C.significance_of(s["significance"])})
                for s in c["stages"]],
        callbacks=[C.DiffPipelineCallbackRow(**cb) for cb in c["callbacks"]],
        noise=C.ExplainNoise(**c["noise"]),
    )


def diff_diagnostic_impl(pair: StatisticsPair, refs: dict | None = None) -> C.DiffDiagnosticResponse:
    """Both runs' diagnostic results (DiagnosticRun) compared (diff/diagnostic/compare.py)."""
    return named(pair.view(("diff/diagnostic",), lambda: _diagnosed(compare_diagnostic(pair.b, pair.e))), refs)


def _diagnosed(c: dict) -> C.DiffDiagnosticResponse:
    return C.DiffDiagnosticResponse(
        baseline=UNNAMED, experimental=UNNAMED,
        baseline_report=diagnostic_struct(c["baseline_report"]),
        experimental_report=diagnostic_struct(c["experimental_report"]),
        interval_confidence=c["interval_confidence"],
        stages=[C.DiagnosticStageDiff(**s) for s in c["stages"]],
    )
