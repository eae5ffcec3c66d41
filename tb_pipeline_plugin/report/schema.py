"""Generates docs/report.schema.json, the JSON Schema of `tb-pipeline diff
--format json`, from the Report Struct (report/model.py), as
server/openapi.py generates docs/openapi.json from the contract.

    python -m tb_pipeline_plugin.report.schema            # rewrite it
    python -m tb_pipeline_plugin.report.schema --check    # exit 1 when it is stale

`make api` runs it; tests/report/test_report.py fails when it is stale.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import msgspec

from .model import REPORT_VERSION, Report

DEFAULT_OUT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "report.schema.json"))


def document() -> dict:
    schema = msgspec.json.schema(Report)
    return {
        # An identifier of the dialect, never fetched.
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "tb-pipeline diff report",
        "description": (f"`tb-pipeline diff A B --format json`, report_version {REPORT_VERSION}. Prose: README.md "
                        "(Use it in CI) and docs/http_api.md (the routes each field comes from)."),
        **schema,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if --out differs from the generated schema")
    args = ap.parse_args(argv)
    text = json.dumps(document(), indent=2) + "\n"
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = None
        if current != text:
            print(f"{args.out} is stale: run `make api`", file=sys.stderr)
            return 1
        return 0
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
