"""`--format json`: the Report Struct (report/model.py) encoded, for dashboards.

Its shape is docs/report.schema.json (report/schema.py generates it from
the Struct). `decode` reads one back, strictly (an unknown field, a wrong
type or another `report_version` is refused), for `tb-pipeline report`.
"""
from __future__ import annotations

import msgspec

from .model import REPORT_VERSION, Report


def render(r: Report) -> str:
    return msgspec.json.format(msgspec.json.encode(r), indent=2).decode("utf-8") + "\n"


def decode(data: bytes) -> Report:
    """The Report in `data`; ValueError saying why it is not one."""
    try:
        head = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(head, dict) or head.get("report_version") != REPORT_VERSION:
        found = head.get("report_version") if isinstance(head, dict) else None
        raise ValueError(f"not a tb-pipeline report of version {REPORT_VERSION} (report_version: {found!r}); "
                         "write one with `tb-pipeline diff A B --format json`")
    try:
        return msgspec.json.decode(data, type=Report)
    except msgspec.ValidationError as exc:
        raise ValueError(f"not a tb-pipeline report: {exc}") from None
