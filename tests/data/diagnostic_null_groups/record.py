"""How the diagnostic recordings beside this file were made (tests/diff/test_diagnostic_group_noise.py reads them).

The real diagnose engine on samples/diagnostic_sample.py, each recording its own process, levels 1 and 2, as
tests/diff/test_group_diagnostic.py records its groups. On the shared 2-core development box (no GPU):

* baseline/: 9 of 24 recordings of the `baseline` variant made back to back (about 8.5 s each, 3 min 24 s in all;
  their numbers r1..r24 kept). The box's load average rose from 0.1 to 2.0 while they ran; other engineers'
  jobs took one core or both during some levels of r4, r5, r7, r15, r17 and r18 (their `machine_cpu_pct` is
  about 200 while the stage's own `cpu_pct` is about 100), which `crowded` reads;
* experimental/, gil_augment/: 3 of 6 recordings each of the `experimental` variant (decode with hashlib, fetch
  sleeping twice as long) and of `gil_augment` (augment a Python loop), interleaved, right after, with other
  engineers' tests running (load average 2.7-3.3).

    .venv/bin/python tests/data/diagnostic_null_groups/record.py OUT
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CODE = ("import sys; sys.path.insert(0, sys.argv[1]); import diagnostic_sample; "
        "r = diagnostic_sample.record_diagnostic(sys.argv[2], sys.argv[3], sys.argv[4], levels=(1, 2)); "
        "sys.exit(3 if r.cut_short else 0)")


def record(out: Path, run: str, variant: str) -> None:
    subprocess.run([sys.executable, "-c", CODE, str(REPO / "samples"), str(out), run, variant], check=True)


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for i in range(1, 25):
        record(out, f"baseline/r{i}", "baseline")
    for i in range(1, 7):
        for variant in ("experimental", "gil_augment"):
            record(out, f"{variant}/r{i}", variant)
