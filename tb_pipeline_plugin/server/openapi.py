"""Generates docs/openapi.json from the route table and the contract Structs.

    python -m tb_pipeline_plugin.server.openapi            # rewrite docs/openapi.json
    python -m tb_pipeline_plugin.server.openapi --check    # exit 1 when it is stale

The frontend's TypeScript types are generated from that file in turn
(`npm run gen:api` in frontend/); `make test` checks both are up to date.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import msgspec

from .contract import ErrorResponse
from .routes import ERROR_STATUSES, ROUTES

DEFAULT_OUT = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "openapi.json")
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


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.normpath(DEFAULT_OUT))
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from the generated document")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = None
        if current != text:
            print(f"{args.out} is stale: run `python -m tb_pipeline_plugin.server.openapi`", file=sys.stderr)
            return 1
        return 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
