"""Groups of recordings for the significance tests: each recording of a
configuration (tests/support/explain_runs.py's small Blocks model) in its own Python
process, as `tb-pipeline record --repeat N` records them, optionally while
another process keeps a core busy."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = 12
N = 3
WIDE = {"wide_block": 1}


def record_one(out_dir: Path, steps: int = STEPS, **knobs) -> Path:
    """One recording, in a fresh process; returns its trace file."""
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import explain_runs; "
            "explain_runs.record(sys.argv[2], steps=int(sys.argv[3]), **json.loads(sys.argv[4]))")
    import json
    subprocess.run([sys.executable, "-c", code, str(HERE), str(out_dir), str(steps), json.dumps(knobs)],
                   check=True, capture_output=True, timeout=300)
    return Path(glob.glob(str(out_dir / "*.pt.trace.json*"))[0])


def record_group(root: Path, n: int, **knobs) -> list[Path]:
    """`n` recordings of one configuration into root/r1 ... root/rN."""
    return [record_one(root / f"r{i}", **knobs) for i in range(1, n + 1)]


def record_interleaved(roots: dict[str, tuple[Path, dict]], n: int) -> dict[str, list[Path]]:
    """`n` recordings of each configuration, taken in turns (b1 e1 b2 e2 ...):
    a drifting machine then drifts over both groups alike."""
    out: dict[str, list[Path]] = {name: [] for name in roots}
    for i in range(1, n + 1):
        for name, (root, knobs) in roots.items():
            out[name].append(record_one(root / f"r{i}", **knobs))
    return out


@contextmanager
def busy_core():
    """Another process spinning on one core for the duration."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _recorded_groups(root: Path) -> dict:
    """5 groups of N recordings (3 configurations, then 2 beside a busy core), made once (support/recordings.py):
    tests/diff/test_groups.py reads all five, tests/report/test_report.py `base` and `wide`."""
    from tb_pipeline_plugin.formats.group import GROUP_VERSION, MANIFEST_FILE, GroupManifest, encode_manifest

    quiet = record_interleaved({"base": (root / "base", {}), "same": (root / "same", {}),
                                "wide": (root / "wide", WIDE)}, N)
    with busy_core():
        busy = record_interleaved({"base_busy": (root / "base_busy", {}), "same_busy": (root / "same_busy", {})}, N)
    out = {**quiet, **busy}
    for name, paths in out.items():  # as `tb-pipeline record --repeat` leaves them
        manifest = GroupManifest(version=GROUP_VERSION, recordings=[p.parent.name for p in paths])
        (root / name / MANIFEST_FILE).write_bytes(encode_manifest(manifest))
    out["_logdir"] = root
    return out


def load_group(paths: list[Path]):
    from tb_pipeline_plugin.analysis.group import RecordingGroup
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    return RecordingGroup([TraceProcessor.load(str(p)) for p in paths], [p.parent.name for p in paths])


def traces_in(run_dir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(run_dir, "*.pt.trace.json*")))


def get_ready(client, route: str, timeout_s: float = 120, **args) -> dict:
    """GET a plugin route of a test client, again while it answers 409 (a
    group's recordings loading, or one the store evicted for another loaded
    again); fails the test on anything but 200."""
    import time
    from urllib.parse import urlencode

    from conftest import PLUGIN_PREFIX

    deadline = time.monotonic() + timeout_s
    while True:
        resp = client.get(f"{PLUGIN_PREFIX}/{route}?{urlencode(args)}")
        if resp.status_code != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


@contextmanager
def groups_in_the_browser(page, logdir: Path, log_path: Path, baseline: str, experimental: str, tab: str):
    """TensorBoard over `logdir`, the plugin open in `page` with the two runs
    picked and `tab` clicked: yields (the plugin's frame, the port). Skips
    without Debian's chromium or the frontend bundle."""
    import pytest
    from support.browser import BUNDLE, CHROMIUM, _open_tab, _pick
    from .tb_cli import serve_tensorboard

    if not Path(CHROMIUM).exists() or not BUNDLE.exists():
        pytest.skip("Debian chromium or the frontend bundle is missing (make chromium; make setup)")

    def loaded(runs: dict) -> bool:
        return {baseline, experimental} <= {r["name"] for r in runs["runs"]}

    with serve_tensorboard(logdir, log_path, loaded) as port:
        frame = _open_tab(page, port)
        _pick(frame, baseline, experimental)
        frame.click(f"[data-tab={tab}]")
        yield frame, port


@contextmanager
def tb_client(logdir: Path):
    """A `werkzeug.test.Client` over the real TensorBoard app with our plugin
    (conftest.build_tb_app), for a module's tests to share; closed after."""
    from werkzeug.test import Client

    from conftest import build_tb_app

    app, plugin = build_tb_app(logdir)
    try:
        yield Client(app)
    finally:
        plugin.close()


# Registered last: the recording's key hashes this file (support/recordings.py), and its name is the one it had
# when tests/diff/test_groups.py defined it.
from support.recordings import recording  # noqa: E402

recorded_groups = recording(name="test_groups.recorded_groups", sources=["tests/support/explain_runs.py"])(
    _recorded_groups)
