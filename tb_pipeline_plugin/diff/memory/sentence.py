"""The memory diff in one sentence, in the explanation's style (diff/explain/sentence.py):
the growth of the peak, then the share of it that its largest mover holds.

"Experimental's peak is 32 MiB higher (+366 %); 100 % of it is Net_0/Head_0
(aten::empty, alive for 0.4 ms of each forward)."
"""
from __future__ import annotations

from ...analysis.memory.peak import BEFORE_WINDOW, HELD_AT_STEP_START
from ...byte_units import bytes_text as size
from ..explain.words import duration


def memory_sentence(d: dict) -> str:
    """`d`: one device of `diff_memory`."""
    b, e, where = d["baseline"], d["experimental"], d["device"]
    if b is None or e is None:
        only, peak = ("experimental", e) if b is None else ("baseline", b)
        return f"Only the {only} run has memory events on {where} (peak {size(peak['peak_bytes'])})."
    growth, pct = d["growth_bytes"], d["growth_pct"]
    if growth == 0:
        return f"Both runs' {where} peaks are {size(b['peak_bytes'])}."
    word = "higher" if growth > 0 else "lower"
    pct_text = f" ({pct:+.0f} %)" if pct is not None else ""
    head = f"Experimental's {where} peak is {size(abs(growth))} {word}{pct_text}"
    same_way = [r for r in d["by_module"] if r["delta_bytes"] * growth > 0]
    if not same_way:
        return head + "."
    top = same_way[0]
    share = 100.0 * top["delta_bytes"] / growth
    share_text = "under 1 %" if share < 0.5 else f"{min(share, 999):.0f} %"
    return f"{head}; {share_text} of it is {_phrase(top, d['basis'])}."


def _phrase(row: dict, basis: str) -> str:
    if row["key"] == BEFORE_WINDOW:
        return "memory allocated before the profiled window"
    if row["key"] == HELD_AT_STEP_START:
        return "memory already held when the peak's step began"
    details = [row["detail"]] if row["detail"] else []
    alive = row["median_alive_us"]
    if basis == "blocks" and alive is not None:
        of_each = f" of each {row['phase']}" if row["phase"] in ("forward", "backward") else ""
        details.append(f"alive for {duration(alive)}{of_each}")
    elif basis == "blocks":
        details.append("never freed in the trace")
    else:
        details.append("net of frees since the step began: the traces record no block addresses")
    phase = f" {row['phase']}" if row["phase"] and row["phase"] not in row["key"] and basis == "net" else ""
    return f"{row['key']}{phase} ({', '.join(details)})"
