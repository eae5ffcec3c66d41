"""`diff/pipeline` and `diff/diagnostic`: two runs' recorded pipeline
statistics, or diagnostic results, compared. These read no trace: a pair of
statistics (results), not a `Pair` of loaded runs."""
from __future__ import annotations

from ..diagnostic.compare import compare_diagnostic
from ..significance.method import NoisePolicy
from ..statistics.compare import compare_pipeline


def diff_pipeline_impl(b_statistics, e_statistics, noise: NoisePolicy) -> dict:
    """Both runs' pipeline statistics (PipelineTables) compared (diff/statistics/compare.py)."""
    return compare_pipeline(b_statistics, e_statistics, noise)


def diff_diagnostic_impl(b_results, e_results) -> dict:
    """Both runs' diagnostic results (DiagnosticRun) compared (diff/diagnostic/compare.py)."""
    return compare_diagnostic(b_results, e_results)
