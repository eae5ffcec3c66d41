"""The diff views called the way a route calls them, for the pure-function tests.

Each helper takes the query strings a client would send, parses them with
the server's own parameter parser (`server.params.parse`, so a bad value is
the same BadRequest a route answers 400 with) and calls the pure function
in `diff.views`: the tests exercise the real path minus TensorBoard.
"""
from __future__ import annotations

from tb_pipeline_plugin.diff import views
from tb_pipeline_plugin.diff.views import (  # noqa: F401 - re-exported for the tests
    KERNEL_KEYS, MODULES_DEFAULT_LIMIT, MODULES_MAX_LIMIT, OPERATOR_KEYS, kernel_table, operator_table,
)
from tb_pipeline_plugin.server import params as Q

_PAIR = {"baseline": "b", "experimental": "e"}


def piece_index(tp):
    return tp.pieces()


def diff_overview_impl(b, e) -> dict:
    return views.diff_overview(b, e)


def diff_modules_impl(b, e, path: str | None = "", args: dict | None = None) -> dict:
    p = Q.parse(Q.DiffModulesParams, {**_PAIR, **(args or {}), "path": path or ""})
    return views.diff_modules(b, e, p.path, p.offset, p.limit)


def diff_operators_impl(b, e, args: dict) -> dict:
    p = Q.parse(Q.DiffOperatorsParams, {**_PAIR, **args})
    return views.diff_operators(b, e, p.table_query(), p.group_by, p.path)


def diff_kernels_impl(b, e, args: dict) -> dict:
    p = Q.parse(Q.DiffKernelsParams, {**_PAIR, **args})
    return views.diff_kernels(b, e, p.table_query(), p.path)
