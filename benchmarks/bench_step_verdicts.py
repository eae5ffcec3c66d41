"""The step verdict on recordings with pipeline statistics: from the profiled
steps (the rule before issue 32) and from every recorded step (after), on the
same recordings, in one run.

    python benchmarks/bench_step_verdicts.py [--k 6] [--busy] [--keep] [--json out.json]

Recordings: an unmodified DataLoader script (tests/diff/test_step_verdicts.py's:
4 items a step, each sleeping DELAY, a small model), recorded as the README
says, `tb-pipeline record --profile wait=5,warmup=2,active=3`: ~30 steps of
statistics and 3 profiled steps each. K with the null delay and K with the
loader slower by `--effect-ms` per item, taken in turns (n1 s1 n2 s2 ...) so
that a drifting machine drifts over both alike. `--busy`: while another
process spins on a core.

Comparisons, every ordered pair:
* null: (null_i, null_j), i != j: a `significant` step verdict is a false alarm;
* slower: (null_i, slow_j): anything but `significant` and slower is a miss.
Each comparison is judged twice: `profiled` (compare() on the two traces
alone, the rule a trace-only run keeps) and `recorded` (compare() on the run
directories: the verdict from every recorded step, warm-up left out).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
OUT_DIR = HERE / "out" / "step_verdicts"
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests"))

from support.group_runs import busy_core  # noqa: E402
from test_step_verdicts import SCHEDULE, SCRIPT  # noqa: E402

NULL_DELAY_S = 0.001


def record(root: Path, k: int, effect_s: float, busy: bool, reuse: bool) -> tuple[dict[str, list[Path]], list[float]]:
    runs = {name: [root / name / f"r{i}" for i in range(1, k + 1)] for name in ("null", "slow")}
    if reuse and all(any(p.glob("*.pt.trace.json*")) for ps in runs.values() for p in ps):
        print(f"reusing the recordings in {root}")
        return runs, []
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    script = root / "train.py"
    script.write_text(SCRIPT)
    loads = []
    with busy_core() if busy else nullcontext():
        for i in range(k):
            for name, delay in (("null", NULL_DELAY_S), ("slow", NULL_DELAY_S + effect_s)):
                run = runs[name][i]
                cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", str(run.parent),
                       "--run", run.name, "--profile", SCHEDULE, "--", sys.executable, str(script), str(delay)]
                subprocess.run(cmd, check=True, capture_output=True, timeout=600)
                loads.append(os.getloadavg()[0])
            print(f"  recorded {i + 1}/{k} of each (load average {loads[-1]:.1f})", flush=True)
    return runs, loads


def judge(b: Path, e: Path, rule: str) -> tuple[str, float]:
    from tb_pipeline_plugin.compare import compare, load

    if rule == "profiled":
        ex = compare(load(b), load(e)).explanation  # loaded traces: no statistics joined
    else:
        ex = compare(b, e).explanation
        assert ex["step"]["source"] == "recorded"
    return ex["step"]["significance"]["verdict"], ex["step"]["delta_us"]


def rates(runs: dict[str, list[Path]]) -> list[dict]:
    from tb_pipeline_plugin.diff.significance.method import SIGNIFICANT

    k = len(runs["null"])
    null_pairs = [(runs["null"][i], runs["null"][j]) for i in range(k) for j in range(k) if i != j]
    slow_pairs = [(runs["null"][i], runs["slow"][j]) for i in range(k) for j in range(k)]
    rows = []
    for rule in ("profiled", "recorded"):
        t0 = time.perf_counter()
        null = [judge(b, e, rule) for b, e in null_pairs]
        slow = [judge(b, e, rule) for b, e in slow_pairs]
        rows.append({
            "rule": rule, "null_comparisons": len(null), "slower_comparisons": len(slow),
            "false_alarm": sum(v == SIGNIFICANT for v, _ in null) / len(null),
            "miss": sum(not (v == SIGNIFICANT and d > 0) for v, d in slow) / len(slow),
            "median_delta_ms": sorted(d for _, d in slow)[len(slow) // 2] / 1000,
            "seconds": time.perf_counter() - t0,
        })
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=6, help="recordings per configuration (default 6)")
    ap.add_argument("--effect-ms", type=float, default=1.0, help="extra sleep per item in the slower loader (ms)")
    ap.add_argument("--busy", action="store_true", help="record while another process spins on a core")
    ap.add_argument("--keep", action="store_true", help="reuse recordings from an earlier run")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    root = OUT_DIR / ("busy" if args.busy else "quiet")
    runs, loads = record(root, args.k, args.effect_ms / 1000, args.busy, args.keep)
    rows = rates(runs)
    print(f"\n{args.k} recordings a configuration, +{args.effect_ms:g} ms an item (4 a step), "
          f"{'busy' if args.busy else 'quiet'}; load average while recording: "
          f"{min(loads, default=float('nan')):.1f}-{max(loads, default=float('nan')):.1f}")
    print(f"{'step verdict from':18} {'null pairs':>10} {'false alarm':>12} {'slower pairs':>13} {'miss':>7} "
          f"{'median delta':>13}")
    for r in rows:
        print(f"{r['rule'] + ' steps':18} {r['null_comparisons']:10d} {100 * r['false_alarm']:11.1f} % "
              f"{r['slower_comparisons']:13d} {100 * r['miss']:6.1f} % {r['median_delta_ms']:10.2f} ms")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "loads": loads, "k": args.k, "effect_ms": args.effect_ms}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
