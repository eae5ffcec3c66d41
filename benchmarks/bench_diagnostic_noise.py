"""How often does a diagnostic comparison of the SAME code read "changed"?

Records pairs of diagnostic runs of one variant of samples/diagnostic_sample.py
with the real engine (the demo's levels and durations), compares each pair
with diff/diagnostic/compare.py and counts, per stage, the pairs whose verdicts
differ and the pairs whose verdict reads changed beyond noise. Every stage
of such a pair is unchanged, so every "changed" is a false one.

    .venv/bin/python benchmarks/bench_diagnostic_noise.py [--pairs 8] [--busy none|both|second]
        [--variant baseline] [--against experimental] [--keep DIR] [--json out.json]

`--busy both`: a busy-loop process burns one core while both runs record;
`second`: only while the second run of each pair records (the machine
changes between the runs, not the code).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
sys.path[:0] = [REPO_ROOT, os.path.join(REPO_ROOT, "samples")]

import diagnostic_sample  # noqa: E402

from tb_pipeline_plugin.diff.diagnostic.compare import diff_diagnostic  # noqa: E402
from tb_pipeline_plugin.readers.diagnostic import read_diagnostic  # noqa: E402

BUSY_LOOP = "while True: pass"


def _record(logdir: str, run: str, variant: str, busy: bool):
    burner = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if busy else None
    try:
        result = diagnostic_sample.record_diagnostic(logdir, run, variant)
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
    return read_diagnostic(result.path).records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--busy", choices=("none", "both", "second"), default="none")
    ap.add_argument("--variant", default="baseline", choices=sorted(diagnostic_sample.VARIANTS))
    ap.add_argument("--against", choices=sorted(diagnostic_sample.VARIANTS),
                    help="the second run's variant (default: --variant); only stages whose function is the "
                         "same in both are null comparisons")
    ap.add_argument("--keep", help="record into this folder and keep it")
    ap.add_argument("--json", help="write every pair's stage rows here")
    args = ap.parse_args(argv)
    logdir = args.keep or tempfile.mkdtemp(prefix="diag_noise_")
    differ, changed, judged, rows = Counter(), Counter(), Counter(), []
    for i in range(args.pairs):
        base = _record(logdir, f"pair{i}_a", args.variant, args.busy == "both")
        exp = _record(logdir, f"pair{i}_b", args.against or args.variant, args.busy in ("both", "second"))
        frame = diff_diagnostic(base, exp)
        for row in frame.to_dict("records"):
            stage = row["stage"]
            differ[stage] += row["verdict_baseline"] != row["verdict_experimental"]
            changed[stage] += bool(row["verdict_changed"])
            judged[stage, row["change"]] += 1
            rows.append({"pair": i, **{k: (v if not isinstance(v, float) or v == v else None) for k, v in row.items()}})
            print(f"pair {i} {stage:8s} {row['verdict_baseline']:>13s} -> {row['verdict_experimental']:<13s} "
                  f"{row['change']}: {row['change_reason']}", flush=True)
    print(f"\n{args.pairs} pairs, busy={args.busy}, variant={args.variant} against {args.against or args.variant}")
    for stage in differ:
        kinds = ", ".join(f"{change} {n}" for (s, change), n in sorted(judged.items()) if s == stage)
        print(f"  {stage:8s} verdicts differ {differ[stage]}/{args.pairs}   read changed {changed[stage]}/{args.pairs}"
              f"   ({kinds})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
