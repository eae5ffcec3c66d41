"""`diff/pipeline` and `diff/diagnostic`: two runs' recorded pipeline
statistics, or diagnostic results, compared. These read no trace: a
`StatisticsPair` (diff/pair.py), whose answers are memoised like a `Pair`'s
(each comparison bootstraps its stages: about 100 ms on the H200 pair)."""
from __future__ import annotations

from ..diagnostic.compare import compare_diagnostic
from ..pair import StatisticsPair
from ..statistics.compare import compare_pipeline


def diff_pipeline_impl(pair: StatisticsPair) -> dict:
    """Both runs' pipeline statistics (PipelineTables) compared (diff/statistics/compare.py)."""
    return pair.view(("diff/pipeline",), lambda: compare_pipeline(pair.b, pair.e, pair.noise))


def diff_diagnostic_impl(pair: StatisticsPair) -> dict:
    """Both runs' diagnostic results (DiagnosticRun) compared (diff/diagnostic/compare.py)."""
    return pair.view(("diff/diagnostic",), lambda: compare_diagnostic(pair.b, pair.e))
