"""The diff impls called the way a route calls them, for the pure-function tests.

Each helper takes the query strings a client would send, parses them with
the server's own parameter parser (`server.params.parse`, so a bad value is
the same BadRequest a route answers 400 with) and calls the pure function
in `diff.pair_impls`: the tests exercise the real path minus TensorBoard.
"""
from __future__ import annotations

from tb_pipeline_plugin.diff import pair_impls
from tb_pipeline_plugin.diff.pair_impls import (  # noqa: F401 - re-exported for the tests
    KERNEL_KEYS, MODULES_DEFAULT_LIMIT, MODULES_MAX_LIMIT, OPERATOR_KEYS, kernel_table, operator_table,
)
from tb_pipeline_plugin.server import params as Q

_PAIR = {"baseline": "b", "experimental": "e"}


def piece_index(tp):
    return tp.pieces()


def diff_overview_impl(b, e) -> dict:
    return pair_impls.diff_overview_impl(b, e)


def diff_modules_impl(b, e, path: str | None = "", args: dict | None = None) -> dict:
    p = Q.parse(Q.DiffModulesParams, {**_PAIR, **(args or {}), "path": path or ""})
    return pair_impls.diff_modules_impl(b, e, p.path, p.offset, p.limit)


def diff_operators_impl(b, e, args: dict) -> dict:
    p = Q.parse(Q.DiffOperatorsParams, {**_PAIR, **args})
    return pair_impls.diff_operators_impl(b, e, p.table_query(), p.group_by, p.path)


def diff_kernels_impl(b, e, args: dict) -> dict:
    p = Q.parse(Q.DiffKernelsParams, {**_PAIR, **args})
    return pair_impls.diff_kernels_impl(b, e, p.table_query(), p.path)
