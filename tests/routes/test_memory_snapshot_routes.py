"""`diff/memory` and `tb-pipeline diff` with CUDA memory snapshots in the amp runs' directories (issue 46):
both runs' peak allocated and reserved bytes within 1 % of the oracle, what changed at the peak; a hostile
pickle in a run's directory runs nothing, and no route answers 5xx."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import PLUGIN_PREFIX, wait_ready
from support.snapshot_oracle import AMP, SNAPSHOTS, hostile_pickle, oracle

if not SNAPSHOTS.is_dir():
    pytest.skip(f"no snapshots at {SNAPSHOTS}", allow_module_level=True)

PAIRS = {"baseline": "fp32", "experimental": "bf16"}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshots")
    for run, snap in PAIRS.items():
        shutil.copytree(AMP / run, root / run)
        shutil.copy(SNAPSHOTS / f"{snap}.pickle", root / run / f"{snap}.pickle")
    shutil.copytree(AMP / "baseline", root / "hostile")
    hostile_pickle(root / "hostile" / "snapshot.pickle", root / "ran")
    for p in root.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return root


@pytest.fixture(scope="module")
def client(logdir):
    from werkzeug.test import Client

    from conftest import build_tb_app

    app, plugin = build_tb_app(logdir)
    c = Client(app)
    for run in ("baseline", "experimental", "hostile"):
        assert wait_ready(c, run, timeout=180)["status"] == "ready"
    yield c
    plugin.close()


def _memory(client, b, e):
    resp = client.get(f"{PLUGIN_PREFIX}/diff/memory", query_string={"baseline": b, "experimental": e})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def test_peaks_and_reserved_within_one_percent_of_the_oracle(client):
    snap = _memory(client, "baseline", "experimental")["snapshot"]
    assert snap["baseline_file"] == "fp32.pickle" and snap["experimental_file"] == "bf16.pickle"
    (gpu,) = snap["devices"]
    for side, name in PAIRS.items():
        want = oracle(SNAPSHOTS / f"{name}.pickle")
        got = gpu[side]
        assert abs(got["peak_allocated_bytes"] - want["peak_allocated_bytes"]) <= 0.01 * want["peak_allocated_bytes"]
        assert abs(got["end_reserved_bytes"] - want["reserved_bytes"]) <= 0.01 * want["reserved_bytes"]
    rows = gpu["by_category"]
    assert [abs(r["delta_bytes"]) for r in rows] == sorted((abs(r["delta_bytes"]) for r in rows), reverse=True)
    assert "peak allocated is 2.12 GiB lower (9.14 GiB → 7.02 GiB" in snap["sentence"]
    assert "reserved 9.89 GiB → 8.12 GiB" in snap["sentence"] and "changed most" in snap["sentence"]


def test_a_hostile_pickle_runs_nothing_and_no_route_fails(client, logdir):
    answer = _memory(client, "baseline", "hostile")
    snap = answer["snapshot"]
    assert any("hostile" not in m and "refused" in m for m in snap["messages"]), snap["messages"]
    assert snap["devices"][0]["experimental"] is None
    for route, q in (("runs", {}), ("overview", {"run": "hostile"}),
                     ("diff/memory", {"baseline": "hostile", "experimental": "hostile"}),
                     ("diff/overview", {"baseline": "baseline", "experimental": "hostile"})):
        resp = client.get(f"{PLUGIN_PREFIX}/{route}", query_string=q)
        assert resp.status_code < 500, (route, resp.get_data(as_text=True))
    assert not (logdir / "ran").exists()


def test_the_cli_shows_both_peaks_and_a_hostile_pickle_runs_nothing(logdir):
    cli = [sys.executable, "-m", "tb_pipeline_plugin.cli", "diff"]
    out = subprocess.run(cli + [str(logdir / "baseline"), str(logdir / "experimental")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "9.14 GiB → 7.02 GiB" in out.stdout and "9.89 GiB → 8.12 GiB" in out.stdout
    out = subprocess.run(cli + [str(logdir / "baseline"), str(logdir / "hostile")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "refused" in out.stderr
    assert not (logdir / "ran").exists()
