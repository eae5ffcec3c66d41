"""Reports of `tb-pipeline diff` that travel: text for a terminal, markdown
for a pull request or a CI job's summary, one HTML file, JSON for
dashboards, JUnit XML for CI test reports.

    model.py     the content, declared once (msgspec Structs; --format json is it)
    build.py     a Report from compare.py's Comparison (the routes' answers) and the gates
    gates.py     --fail-if: parsing, each gate's outcome, the exit status
    words.py     the headline, marks and number formats the human formats share
    text.py, markdown.py, html_page.py (+ svg.py, html_assets.py), json_format.py, junit.py: one format each
    schema.py    docs/report.schema.json from the model

Rendering reads only a Report: every format shows the same content, and a
saved JSON report renders into any other (`tb-pipeline report`).
"""
from __future__ import annotations

from importlib import import_module

from .model import Report

# --format value -> the module whose render(Report) -> str writes it.
FORMATS = {"text": "text", "markdown": "markdown", "html": "html_page", "json": "json_format", "junit": "junit"}


def render(report: Report, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of: {', '.join(FORMATS)}")
    return import_module(f"{__name__}.{FORMATS[fmt]}").render(report)
