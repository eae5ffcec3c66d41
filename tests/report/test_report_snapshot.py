"""Every report format carries both runs' CUDA memory snapshots (issue 46):
the JSON report's snapshot rows are `diff/memory`'s snapshot metrics and
live-at-the-peak categories, and the text, markdown, HTML and JUnit reports
print them, through the CLI as a user runs it, on the H200 amp pair with
each run's snapshot in its directory."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_pipeline_plugin.compare import compare

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200"
pytestmark = pytest.mark.skipif(not (H200 / "snapshots").is_dir(), reason=f"H200 snapshots not found at {H200}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    out = {}
    for side, pickle in (("baseline", "fp32.pickle"), ("experimental", "bf16.pickle")):
        run = tmp_path_factory.mktemp("snap") / side
        shutil.copytree(H200 / "amp" / side, run)
        shutil.copy(H200 / "snapshots" / pickle, run / pickle)
        out[side] = run
    return out


def _cli(runs: dict, fmt: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.cli", "diff", str(runs["baseline"]),
                           str(runs["experimental"]), "--format", fmt], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_every_format_carries_the_snapshots(runs):
    snapshot = compare(runs["baseline"], runs["experimental"]).memory["snapshot"]
    [device] = snapshot["devices"]
    report = json.loads(_cli(runs, "json"))
    rows = {r["name"]: r for r in report["memory"]["snapshot_rows"]}
    for m in device["metrics"]:
        row = rows[f"snapshot.{device['device']}.{m['metric']}"]
        assert (row["baseline"], row["experimental"], row["delta"]) == (
            m["baseline_bytes"], m["experimental_bytes"], m["delta_bytes"])
    peak = next(m for m in device["metrics"] if m["metric"] == "peak allocated")
    assert peak["delta_bytes"] < 0  # bf16's peak is lower
    text, markdown, html = _cli(runs, "text"), _cli(runs, "markdown"), _cli(runs, "html")
    assert "CUDA memory snapshots (bytes)" in text and str(peak["baseline_bytes"]) in text
    assert "| GPU 0 · peak allocated |" in markdown
    assert 'id="snapshot-table"' in html
    junit = _cli(runs, "junit")
    assert f'value="{peak["baseline_bytes"]} {peak["experimental_bytes"]} {peak["delta_bytes"]}"' in junit


class _Touch:
    """Unpickled, runs a command: what a hostile snapshot would hold."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_two_snapshots_compare_on_their_own_and_a_hostile_one_runs_nothing(runs, tmp_path):
    fp32, bf16 = H200 / "snapshots" / "fp32.pickle", H200 / "snapshots" / "bf16.pickle"
    done = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.cli", "diff", str(fp32), str(bf16), "--format",
                           "json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    alone = json.loads(done.stdout)
    beside = compare(runs["baseline"], runs["experimental"]).memory["snapshot"]
    assert alone["devices"][0]["metrics"] == beside["devices"][0]["metrics"]
    assert alone["sentence"] == beside["sentence"]
    import pickle

    marker = tmp_path / "ran"
    hostile = tmp_path / "hostile.pickle"
    hostile.write_bytes(pickle.dumps(_Touch(marker)))
    done = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.cli", "diff", str(fp32), str(hostile)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "hostile.pickle" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not marker.exists()
