"""Bytes as people read them, in one unit system everywhere: IEC binary
units (KiB = 1024 B, MiB = 2^20 B, ...), as PyTorch's memory summaries and
nvidia-smi print them, so a 32 MiB tensor reads "32 MiB" and not "33.55 MB".
The frontend's `formatBytes` (frontend/src/model/format.ts) prints the same
number and unit for the same bytes. A leaf: any layer may import it.
"""
from __future__ import annotations

BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def bytes_text(n: float, signed: bool = False) -> str:
    """1536 -> "1.5 KiB"; at most two decimals, trailing zeros dropped, the
    unit the largest one under which the number is at least 1."""
    v, i = abs(float(n)), 0
    while v >= 1024 and i < len(BYTE_UNITS) - 1:
        v /= 1024
        i += 1
    body = f"{v:,.2f}".rstrip("0").rstrip(".")
    sign = ("+" if n > 0 else "-" if n < 0 else "") if signed else ("-" if n < 0 else "")
    return f"{sign}{body} {BYTE_UNITS[i]}"
