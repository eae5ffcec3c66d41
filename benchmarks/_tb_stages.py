"""Prints the stage timeline `_tb_user.py --stages FILE` recorded.

    python _tb_stages.py FILE START_WALL

Times are seconds from START_WALL (the TensorBoard process's start, as
`_tb_user.py` reports it); one line per stage, in start order, with the
process that ran it (the server, a parse worker, a decoding fork).
"""
from __future__ import annotations

import json
import sys


def timeline(path: str, start_wall: float) -> list[dict]:
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    server = min((r for r in rows if r["stage"] == "interpreter up"), key=lambda r: r["t0"])["pid"]
    pids = {server: "server"}
    for r in sorted(rows, key=lambda r: r["t0"]):
        if r["pid"] not in pids:
            pids[r["pid"]] = f"proc {len(pids)}"
    return [dict(r, who=pids[r["pid"]], start_s=r["t0"] - start_wall, end_s=r["t1"] - start_wall)
            for r in sorted(rows, key=lambda r: (r["t0"], r["t1"]))]


def main() -> None:
    for r in timeline(sys.argv[1], float(sys.argv[2])):
        print(f"{r['start_s']:7.3f} {r['end_s']:7.3f} {r['end_s'] - r['start_s']:6.3f}  {r['who']:<8} {r['stage']}")


if __name__ == "__main__":
    main()
