"""The explanation's words for numbers and verdicts that are not the
significance method's: durations as every sentence writes them (the
reports' too: report/words.py), and the input-bound verdicts of the
pipeline part in words (`INPUT_BOUND_WORDS`). Bytes are the byte_units
leaf's (tb_pipeline_plugin/byte_units.py); the significance verdicts' words
are `VERDICT_WORDS` of diff/significance/method.py, spelled there alone.
Imports nothing of ours.
"""
from __future__ import annotations

# analysis/statistics/report.py's input-bound verdicts, in words.
INPUT_BOUND_WORDS = {"yes": "input-bound", "partly": "partly input-bound", "no": "not input-bound",
                     "unknown": "of unknown input-boundness"}


def duration(us: float) -> str:
    """`412 µs`, `41 ms`, `1.2 ms`, `3.4 s`: two significant digits or more."""
    a = abs(us)
    if a >= 1e6:
        return f"{us / 1e6:.3g} s"
    if a >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def signed_duration(us: float) -> str:
    """`+1.2 ms`, `−412 µs`: a delta with its sign (a true minus), as every sentence shows one."""
    return ("+" if us >= 0 else "−") + duration(abs(us))

