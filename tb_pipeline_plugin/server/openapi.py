"""Generates docs/openapi.json from the route table and the contract Structs,
frontend/src/generated/tableRules.ts, the server's rules the frontend reads
(delta % fields, each diff table's sort keys and key columns, the row limit,
the breakdown categories and their labels), and
frontend/src/generated/sortCases.ts, diff/tables.py:sort_table's order of a
probe table, which the frontend's sort of rows it holds is tested against.

    python -m tb_pipeline_plugin.server.openapi            # rewrite both
    python -m tb_pipeline_plugin.server.openapi --check    # exit 1 when either is stale

The frontend's TypeScript types are generated from openapi.json in turn
(`npm run gen` in frontend/codegen/); `make test` checks all are up to date.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from typing import get_args

import msgspec
import pandas as pd

from ..analysis.operators import GroupBy
from ..analysis.overview import CATEGORIES
from ..diff import tables
from ..diff.delta import pct_name
from ..diff.launches import LAUNCH_COLUMNS, KernelGroupBy, launch_keys
from ..diff.overview import OVERVIEW_METRICS
from ..diff.table_view import KERNEL_KEYS, KERNEL_TIMES, LAUNCH_TIMES, OPERATOR_KEYS, OPERATOR_TIMES
from ..contract import ErrorResponse
from .routes import ERROR_STATUSES, ROUTES

_REPO = os.path.join(os.path.dirname(__file__), "..", "..")
DEFAULT_OUT = os.path.join(_REPO, "docs", "openapi.json")
TABLE_RULES_OUT = os.path.join(_REPO, "frontend", "src", "generated", "tableRules.ts")
SORT_CASES_OUT = os.path.join(_REPO, "frontend", "src", "generated", "sortCases.ts")
_REF = "#/components/schemas/{name}"


def document() -> dict:
    responses = [r.response for r in ROUTES] + [ErrorResponse]
    params = [r.params for r in ROUTES]
    _, components = msgspec.json.schema_components(responses + params, ref_template=_REF)
    paths = {}
    for route in ROUTES:
        param_schema = components.get(route.params.__name__) or {"properties": {}}
        required = set(param_schema.get("required", []))
        parameters = [
            {"name": name, "in": "query", "required": name in required, "schema": schema}
            for name, schema in param_schema.get("properties", {}).items()
        ]
        error = {"description": "", "content": {"application/json": {"schema": {"$ref": _REF.format(name="ErrorResponse")}}}}
        responses_doc = {
            "200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": _REF.format(name=route.response.__name__)}}}},
        }
        for status, why in ERROR_STATUSES.items():
            responses_doc[status] = {**error, "description": why}
        op_id = route.path.strip("/").replace("/", "_")
        paths[route.path] = {"get": {"operationId": op_id, "summary": route.summary,
                                     "parameters": parameters, "responses": responses_doc}}
    # Parameter Structs only describe query strings: not response schemas.
    for route in ROUTES:
        components.pop(route.params.__name__, None)
    return {
        "openapi": "3.1.0",
        "info": {"title": "tb_pipeline plugin HTTP API", "version": "1",
                 "description": "Routes under /data/plugin/tb_pipeline/. Prose guide: docs/http_api.md."},
        "servers": [{"url": "/data/plugin/tb_pipeline"}],
        "paths": paths,
        "components": {"schemas": dict(sorted(components.items()))},
    }


def delta_fields(doc: dict) -> dict[str, str]:
    """Every quantity a delta row of the contract carries (`baseline_X`,
    `delta_X` and its delta %), with its delta % field (diff/delta.py:pct_name)."""
    out = {}
    for schema in doc["components"]["schemas"].values():
        props = schema.get("properties", {})
        for name in props:
            metric = name.removeprefix("baseline_")
            if metric != name and f"delta_{metric}" in props and pct_name(metric) in props:
                out[metric] = pct_name(metric)
    return dict(sorted(out.items()))


def diff_table_keys() -> dict[str, tuple[list[str], list[str]]]:
    """Each diff table, as `<route>:<group_by>`, with its key columns and its
    statistics, as diff/table_view.py joins and queries it."""
    out = {f"operators:{g}": (list(OPERATOR_KEYS), list(tables.OPERATOR_COLUMNS)) for g in get_args(GroupBy)}
    for g in get_args(KernelGroupBy):
        out[f"kernels:{g}"] = (list(KERNEL_KEYS), list(tables.KERNEL_COLUMNS)) if g == "name" else (launch_keys(g), list(LAUNCH_COLUMNS))
    return out


def breakdown_labels() -> dict[str, str]:
    """Each step-time category's label, as the overview's rows name it
    (diff/overview.py:OVERVIEW_METRICS), less the "(per step)" the group says."""
    labels = {m.removeprefix("breakdown_us."): label for m, label, _ in OVERVIEW_METRICS if m.startswith("breakdown_us.")}
    missing = [c for c in CATEGORIES if c not in labels]
    if missing:
        raise ValueError(f"no overview row for the breakdown categories {missing}")
    return {c: labels[c].removesuffix(" (per step)") for c in CATEGORIES}


def _ts_list(values) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def render_table_rules(doc: dict) -> str:
    fields = delta_fields(doc)
    pct = ",\n".join(f"  {m}: {json.dumps(f)}" for m, f in fields.items())
    magnitude = ",\n".join(f"  {json.dumps('delta_' + m)}" for m in fields)
    keyed = diff_table_keys()
    keys = ",\n".join(f"  {json.dumps(t)}: {_ts_list(k)}" for t, (k, _) in keyed.items())
    sorts = ",\n".join(f"  {json.dumps(t)}: {_ts_list(tables.sort_keys(k, c))}" for t, (k, c) in keyed.items())
    labels = breakdown_labels()
    cats = ",\n".join(f"  {json.dumps(c)}" for c in labels)
    names = ",\n".join(f"  {c}: {json.dumps(label)}" for c, label in labels.items())
    return (
        "// Generated by `make api` (tb_pipeline_plugin/server/openapi.py) from the contract and diff/delta.py,\n"
        "// diff/tables.py, diff/table_view.py, analysis/overview.py, diff/overview.py: the one home of these rules. Do not edit.\n\n"
        "/** Each quantity's delta % field, as the server names it (diff/delta.py:pct_name). */\n"
        f"export const DELTA_PCT_FIELDS: Readonly<Record<string, string>> = {{\n{pct},\n}};\n\n"
        "/** The delta fields a table sorts by magnitude (diff/tables.py:sort_table): \"what changed most\". */\n"
        f"export const MAGNITUDE_SORTED: ReadonlySet<string> = new Set([\n{magnitude},\n]);\n\n"
        "/** The most rows one answer of a diff table holds (diff/tables.py:MAX_LIMIT, the routes' `limit` bound). */\n"
        f"export const MAX_TABLE_ROWS = {tables.MAX_LIMIT};\n\n"
        "/**\n"
        " * The key columns of each diff table, by `<route>:<group_by>` (diff/table_view.py): its text columns,\n"
        " * which sort by their lower-cased text, and the order ties fall back to (diff/tables.py:sort_table).\n"
        " */\n"
        f"export const TABLE_KEYS: Readonly<Record<string, readonly string[]>> = {{\n{keys},\n}};\n\n"
        "/** Every field a diff table's route sorts by, by `<route>:<group_by>` (diff/tables.py:sort_keys); any other is a 400. */\n"
        f"export const TABLE_SORT_KEYS: Readonly<Record<string, readonly string[]>> = {{\n{sorts},\n}};\n\n"
        "/**\n"
        " * The times a trace table's row sums over the run's profiled steps (or the piece), per sample (token) when\n"
        " * the runs' work per step differs (diff/table_view.py); the others (calls, a kernel's per-call mean, min,\n"
        " * max) are not sums.\n"
        " */\n"
        f"export const SUMMED_TIMES: ReadonlySet<string> = new Set({_ts_list(sorted(set(OPERATOR_TIMES + KERNEL_TIMES + LAUNCH_TIMES)))});\n\n"
        "/** The step-time categories, in the order the server assigns time to them (analysis/overview.py:CATEGORIES). */\n"
        f"export const BREAKDOWN_CATEGORIES = [\n{cats},\n] as const;\n\n"
        "/** Each category's label, as the overview's rows name it (diff/overview.py:OVERVIEW_METRICS, without \"(per step)\"). */\n"
        f"export const BREAKDOWN_LABELS: Readonly<Record<(typeof BREAKDOWN_CATEGORIES)[number], string>> = {{\n{names},\n}};\n"
    )


# A probe table for sort_table: case, ties, nulls and signs where its rule decides the order.
_PROBE_KEYS = ["name", "input_shape"]
_PROBE = {
    "name": ["b", "A", "a", "c", "B", "d"],
    "input_shape": ["[[2]]", None, "[[1]]", "[[1]]", "[[3]]", None],
    "baseline_calls": [3, 1, 3, 2, 0, 1],
    "delta_host_self_us": [-50.0, 20.0, 50.0, -5.0, 20.0, float("nan")],
    "delta_host_self_pct": [-10.0, None, 10.0, -80.0, None, 5.0],
}


def render_sort_cases() -> str:
    frame = pd.DataFrame(_PROBE)
    frame["delta_host_self_pct"] = frame["delta_host_self_pct"].astype(float)
    cases = []
    for key in ["name", "input_shape", "baseline_calls", "delta_host_self_us", "delta_host_self_pct"]:
        for order in ("asc", "desc"):
            ordered = tables.sort_table(frame, key, order, _PROBE_KEYS)
            cases.append(f"  {{ key: {json.dumps(key)}, dir: {json.dumps(order)}, order: {_ts_list(int(i) for i in ordered.index)} }}")
    rows = []
    for i in range(len(frame)):
        cells = []
        for c in frame.columns:
            v = frame[c].iloc[i]
            v = None if v is None or (isinstance(v, float) and v != v) else v.item() if hasattr(v, "item") else v
            cells.append(f"{c}: {json.dumps(v)}")
        rows.append("  { " + ", ".join(cells) + " }")
    return (
        "// Generated by `make api` (tb_pipeline_plugin/server/openapi.py): diff/tables.py:sort_table's order of a\n"
        "// probe table, for the frontend's test of its sort of rows it holds (frontend/test/tableModel.test.ts). Do not edit.\n\n"
        f"export const SORT_PROBE_KEYS = {_ts_list(_PROBE_KEYS)};\n\n"
        "export const SORT_PROBE: readonly Record<string, string | number | null>[] = [\n" + ",\n".join(rows) + ",\n];\n\n"
        "/** The server's order of SORT_PROBE (row indices) for each key and direction. */\n"
        "export const SORT_CASES: readonly { key: string; dir: \"asc\" | \"desc\"; order: readonly number[] }[] = [\n"
        + ",\n".join(cases) + ",\n];\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.normpath(DEFAULT_OUT))
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from the generated document")
    ap.add_argument("--rules-out", default=os.path.normpath(TABLE_RULES_OUT))
    ap.add_argument("--sort-cases-out", default=os.path.normpath(SORT_CASES_OUT))
    args = ap.parse_args(argv)
    doc = document()
    outputs = {args.out: json.dumps(doc, indent=2, sort_keys=False) + "\n", args.rules_out: render_table_rules(doc),
               args.sort_cases_out: render_sort_cases()}
    if args.check:
        stale = [path for path, text in outputs.items() if _read(path) != text]
        for path in stale:
            print(f"{path} is stale: run `make api`", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs.items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
