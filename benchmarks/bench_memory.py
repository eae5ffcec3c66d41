"""Memory diff benchmark: the `diff/memory` answer on two ~200 MiB traces.

Target: warm (both traces loaded, the route asked once before) the answer
within 0.3 s. Also reported: the first answer (the per-run memory analyses,
`TraceProcessor.memory`, computed inside the timed call) and, as a baseline
measured in the same run, the warm `diff/overview` answer.

Pair: two runs recorded here with samples/record_samples.py (4 vs 5 blocks,
`profile_memory=True`, `with_stack=True`: module calls, `[memory]` events
with addresses), each grown in time with replicate.py, so every allocation,
free and operator is a real one (addresses repeat in each copy, as a real
allocator reuses them from step to step).

Measured in-process with `time.perf_counter` around what the route's
handler runs (`diff/impls/memory.py:diff_memory_impl` and the JSON encoder the routes
use); minimum and maximum over repeats, the target must hold for the maximum.

    .venv/bin/python benchmarks/bench_memory.py [--size-mb 200] [--repeat 5] [--keep] [--json out.json]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MIB = 1 << 20
WARM_MAX_S = 0.3

sys.path.insert(0, HERE)
sys.path.insert(0, REPO_ROOT)
from bench_diff import build_pair, timed  # noqa: E402  (records the cpu pair and grows it with replicate.py)



def measure(b_path: str, e_path: str, repeat: int) -> dict:
    from tb_pipeline_plugin.analysis.processor import TraceProcessor
    from tb_pipeline_plugin.diff.impls.memory import diff_memory_impl
    from tb_pipeline_plugin.diff.impls.overview import diff_overview_impl
    from tb_pipeline_plugin.diff.pair import pair_of
    from tb_pipeline_plugin.server.http import encode_json

    b, load_b = timed(lambda: TraceProcessor.load(b_path))
    e, load_e = timed(lambda: TraceProcessor.load(e_path))
    m = b.table.memory
    row = {"file_mb": [os.path.getsize(p) / MIB for p in (b_path, e_path)],
           "events": [len(b.table), len(e.table)],
           "memory_events": [len(b.table.memory.ts_us), len(e.table.memory.ts_us)],
           "with_addresses": bool((m.addr >= 0).all()) if len(m.addr) else False,
           "load_s": [load_b, load_e], "repeat": repeat}
    timings: dict[str, list[float]] = {}
    answer = b""
    for k in range(repeat):
        if k:
            b, e = TraceProcessor(b.table, b_path), TraceProcessor(e.table, e_path)
        gc.collect()
        pair = pair_of(b, e)
        answer, first = timed(lambda: encode_json(diff_memory_impl(pair)))
        timings.setdefault("memory_first_s", []).append(first)
        _, warm = timed(lambda: encode_json(diff_memory_impl(pair)))
        timings.setdefault("memory_warm_s", []).append(warm)
        encode_json(diff_overview_impl(pair))
        _, ov = timed(lambda: encode_json(diff_overview_impl(pair)))
        timings.setdefault("overview_warm_s", []).append(ov)
    out = json.loads(answer)
    shown = next(d for d in out["devices"] if d["device"] == out["device"])
    row.update({"answer_bytes": len(answer), "sentence": out["sentence"], "basis": shown["basis"],
                "rows": len(shown["by_module"]) + len(shown["by_operator"]),
                "live_blocks": [len(d.live_blocks) for d in (b.memory().main_device(), e.memory().main_device())]})
    for key, values in timings.items():
        row[key] = min(values)
        row[key + "_max"] = max(values)
        row[key + "_all"] = values
    row["passed"] = row["memory_warm_s_max"] < WARM_MAX_S
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=200.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="reuse traces built by an earlier run")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    b_path, e_path = build_pair("cpu", args.size_mb, args.keep)
    load = os.getloadavg()
    row = measure(b_path, e_path, args.repeat)
    row["loadavg_before"] = load
    row["loadavg_after"] = os.getloadavg()
    print(f"files {row['file_mb'][0]:.0f} + {row['file_mb'][1]:.0f} MiB, {row['memory_events']} memory events, "
          f"addresses: {row['with_addresses']}, basis {row['basis']}, live blocks at the peaks {row['live_blocks']}")
    print(f"diff/memory first {row['memory_first_s']:.3f} s (max {row['memory_first_s_max']:.3f}), "
          f"warm {row['memory_warm_s']:.3f} s (max {row['memory_warm_s_max']:.3f}, target < {WARM_MAX_S} s); "
          f"diff/overview warm {row['overview_warm_s']:.3f} s; answer {row['answer_bytes'] / 1e3:.0f} kB")
    print(f"sentence: {row['sentence']}")
    print(f"load average before {load}, after {row['loadavg_after']}; {'PASS' if row['passed'] else 'FAIL'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)
    return 0 if row["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
