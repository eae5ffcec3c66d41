"""The diff impls called the way a route calls them, for the pure-function tests.

Each helper takes the query strings a client would send, parses them with
the server's own parameter parser (`server.params.parse`, so a bad value is
the same BadRequest a route answers 400 with) and calls the pure function
in `diff/impls/` on the runs' `Pair` (diff/pair.py): the tests exercise the
real path minus TensorBoard. An answer that is its contract Struct comes
back as builtins (`diff.impls.plain`: dicts, without the runs' references).
"""
from __future__ import annotations

from tb_pipeline_plugin.diff.impls import plain
from tb_pipeline_plugin.diff.impls.modules import diff_modules_impl as _modules
from tb_pipeline_plugin.diff.impls.overview import diff_overview_impl as _overview
from tb_pipeline_plugin.diff.impls.tables import diff_kernels_impl as _kernels
from tb_pipeline_plugin.diff.impls.tables import diff_operators_impl as _operators
from tb_pipeline_plugin.diff.pair import pair_of
from tb_pipeline_plugin.diff.table_view import KERNEL_KEYS, OPERATOR_KEYS  # noqa: F401 - re-exported for the tests
from tb_pipeline_plugin.diff.table_view import kernel_table as _kernel_table
from tb_pipeline_plugin.diff.table_view import operator_table as _operator_table
from tb_pipeline_plugin.diff.tree import MODULES_DEFAULT_LIMIT, MODULES_MAX_LIMIT  # noqa: F401 - re-exported
from tb_pipeline_plugin.server import params as Q

_PAIR = {"baseline": "b", "experimental": "e"}


def piece_index(tp):
    return tp.pieces()


def diff_overview_impl(b, e) -> dict:
    return plain(_overview(pair_of(b, e)))


def diff_modules_impl(b, e, path: str | None = "", args: dict | None = None) -> dict:
    p = Q.parse(Q.DiffModulesParams, {**_PAIR, **(args or {}), "path": path or ""})
    return plain(_modules(pair_of(b, e), p.query()))


def diff_operators_impl(b, e, args: dict) -> dict:
    p = Q.parse(Q.DiffOperatorsParams, {**_PAIR, **args})
    return plain(_operators(pair_of(b, e), p.query()))


def diff_kernels_impl(b, e, args: dict) -> dict:
    p = Q.parse(Q.DiffKernelsParams, {**_PAIR, **args})
    return plain(_kernels(pair_of(b, e), p.query()))


def operator_table(b, e, group_by: str = "name", path: str = ""):
    return _operator_table(pair_of(b, e), group_by, path)


def kernel_table(b, e, path: str = ""):
    return _kernel_table(pair_of(b, e), path)
