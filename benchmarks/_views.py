"""Every first view of one trace and its diff against itself, as the routes
compute and encode them, and the memory a trace may cost (shared by the
decoder fuzz and bench_degenerate.py)."""
from __future__ import annotations

MIB = 1 << 20


def memory_bound_bytes(file_bytes: int) -> int:
    """Peak memory a trace may add to the process that loads it and computes
    its views (issue 23): 100x a file of a few MB (up to 512 MiB on that
    count), 3x a large file, and 300 MiB for any file (the allocator's and
    the lazily built views' fixed cost dwarfs a file of a few KB)."""
    return max(3 * file_bytes, min(100 * file_bytes, 512 * MIB), 300 * MIB)


def view_calls(path: str):
    """(load, per_run, diff): callables; `load()` returns the TraceProcessor
    the other two take. Imports happen here, not in the timed calls."""
    from tb_pipeline_plugin.analysis.processor import TraceProcessor
    from tb_pipeline_plugin.diff.impls.modules import diff_modules_impl
    from tb_pipeline_plugin.diff.impls.overview import diff_overview_impl
    from tb_pipeline_plugin.diff.impls.tables import diff_kernels_impl, diff_operators_impl
    from tb_pipeline_plugin.diff.pair import pair_of
    from tb_pipeline_plugin.server import params as Q
    from tb_pipeline_plugin.server import run_impls as views
    from tb_pipeline_plugin.server.http import encode_json
    pair = {"baseline": "r", "experimental": "r"}
    modules_q = Q.parse(Q.DiffModulesParams, pair)
    operators_q = Q.parse(Q.DiffOperatorsParams, pair)
    kernels_q = Q.parse(Q.DiffKernelsParams, pair)

    def load():
        return TraceProcessor.load(str(path))

    def per_run(tp) -> None:
        ref = {"run": "r", "worker": "", "span": ""}
        for v in (views.overview_impl(tp, ref), views.operators_impl(tp, "name", ref),
                  views.operators_impl(tp, "name_and_shape", ref), views.kernels_impl(tp, ref),
                  views.modules_impl(tp, ref)):
            encode_json(v)

    def diff(tp) -> None:
        pair = pair_of(tp, tp)
        for v in (diff_overview_impl(pair), diff_modules_impl(pair, modules_q.query()),
                  diff_operators_impl(pair, operators_q.query()), diff_kernels_impl(pair, kernels_q.query())):
            encode_json(v)

    return load, per_run, diff
