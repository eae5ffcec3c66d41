"""A small run of the schema-driven route fuzz (benchmarks/fuzz_routes.py;
the full run is `--examples 300`, see benchmarks/README.md): requests drawn
from docs/openapi.json for every route, through the real TensorBoard app over
real and hostile traces, never answer 5xx."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO_ROOT


def test_route_fuzz_small_run(recorded_logdir, tmp_path):
    recorded = [str(p) for p in sorted(recorded_logdir.glob("*/*.pt.trace.json*"))][:1]
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "fuzz_routes.py"), "--examples", "15",
         "--recorded", *recorded, "--json", str(out)],
        capture_output=True, text=True, timeout=900,
    )
    assert out.exists(), proc.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert proc.returncode == 0, json.dumps(summary["server_errors"], indent=1)[:4000]
    operations = json.loads((REPO_ROOT / "docs" / "openapi.json").read_text())["paths"]
    assert {op.split(" ", 1)[1] for op in summary["status"]} == set(operations)
    # The draws reach the analyses, not only parameter checks.
    assert sum(c.get("200", 0) for c in summary["status"].values()) > len(operations)
