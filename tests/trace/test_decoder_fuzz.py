"""A few hundred cases of the decoder fuzz (benchmarks/fuzz_decoder.py; the
full run is `--cases 10000`, see benchmarks/README.md): every mutated real
trace loads or fails with a clear reason, within time and memory limits."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO_ROOT


def test_decoder_fuzz_small_run(recorded_logdir, tmp_path):
    recorded = [str(p) for p in sorted(recorded_logdir.glob("*/*.pt.trace.json*"))]
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "fuzz_decoder.py"), "--cases", "300", "--workers", "2",
         "--seed", "9", "--no-record", "--recorded", *recorded, "--json", str(out),
         "--keep-dir", str(tmp_path / "bad"), "--timeout-s", "60"],
        capture_output=True, text=True, timeout=900,
    )
    summary = json.loads(out.read_text())
    assert proc.returncode == 0, json.dumps(summary["bad"], indent=1)[:4000]
    outcomes = summary["outcomes"]
    assert summary["cases"] == 300 and set(outcomes) <= {"loaded", "failed"}
    # The mutations do damage: some traces load with warnings, some are refused.
    assert summary["loaded_with_warnings"] > 30 and outcomes.get("failed", 0) > 0
    assert summary["seeds"] >= 10 + len(recorded)
