"""Shared fixtures: real recorded traces and the real TensorBoard WSGI app.

Nothing here imitates a trace format or TensorBoard: runs are recorded with
`torch.profiler` (samples/record_samples.py) and requests go through
`TensorBoardWSGI`, the same dispatcher `tensorboard --logdir` serves.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from urllib.parse import quote
from pathlib import Path

import pytest

# Every route answer is decoded with its contract type (tb_pipeline_plugin/contract/):
# a response drifting from the declared shape fails the test that got it.
os.environ["TB_PIPELINE_VALIDATE_RESPONSES"] = "1"
# Parsed-trace cache of this test session only (the plugin's default is the
# user's cache directory); parse worker processes inherit it.
if "TB_PIPELINE_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["TB_PIPELINE_CACHE_DIR"] = tempfile.mkdtemp(prefix="tb_pipeline_test_cache_")

REPO_ROOT = Path(__file__).resolve().parent.parent
PLUGIN_PREFIX = "/data/plugin/tb_pipeline"

# `make test` runs every other module alone, one test at a time: they record
# and measure (step times, QPS, CPU shares, the GIL, latencies), and their
# verdicts are the product's. These modules assert nothing that another
# process's load moves (shapes, counts against the JSON, oracles from the
# same recording, CPU-time bounds, generous waits in the browser), so they
# run afterwards on two workers (pytest-xdist, whole files per worker).
# A module left out of this list is serial: the safe default.
PARALLEL_SAFE_MODULES = frozenset({
    "test_architecture", "test_concurrent_first_use", "test_contract", "test_cpu_oracle", "test_datapipes",
    "test_decode_parallel", "test_decode_scan", "test_nesting", "test_decoder_fuzz", "test_early_parse", "test_degenerate_traces", "test_diff_gpu_pair", "test_diff_timeline",
    # The demo's effects (an MLP four times wider, examples read from slow storage: 165 % slower per
    # step) are far above another worker's noise.
    "test_e2e_demo",
    # (test_e2e_report stays serial: its gates and JUnit cases assert the demo's direction, which a
    # recording beside another worker's pip build once turned round: baseline 25.7 s, experimental 13.5 s.)
    "test_e2e_distributed", "test_e2e_memory", "test_e2e_profiler_link", "test_e2e_timeline_diff", "test_gpu_traces",
    "test_import_hook", "test_install_hints", "test_layout_composer", "test_layout_frameworks", "test_logdir",
    "test_logdir_groups", "test_memory_diff", "test_pipeline_diagnostic_launch", "test_rank_rollup", "test_readme", "test_route_fuzz",
    "test_routes", "test_development_map",
    # Verdicts checked against oracles computed from the same recordings; the host-load check is an
    # iff against the recorded load, so another worker's load moves both sides of it.
    "test_comparability", "test_summarize", "test_tb_profiler_beside", "test_torch_agreement", "test_trace_processor",
    "test_trace_robustness",
    # Installs into a fresh venv and uses the plugin there: minutes of CPU, no timing asserted.
    "test_wheel_install",
    # Fixed traces (the H200 pairs, span files) against oracles from their JSON, the browser with generous
    # waits, and reports whose verdicts are read from the report itself: nothing another worker moves.
    "test_gpu_device_time", "test_e2e_gpu", "test_span_picker", "test_e2e_span_picker", "test_report",
})


def as_in_a_terminal() -> None:
    """`preexec_fn` of a child that a test interrupts with Ctrl-C: SIGINT as
    a terminal leaves it. A runner that starts the tests in the background
    (`nohup`, `cmd &` in a script) ignores SIGINT, every child inherits
    that, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pytest_configure(config):
    config.addinivalue_line("markers", "parallel_safe: asserts nothing another process's load moves (conftest.py)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in PARALLEL_SAFE_MODULES:
            item.add_marker(pytest.mark.parallel_safe)

# Run name -> record_run kwargs of the session logdir.
RECORDED_RUNS = {
    "baseline": dict(layers=4),
    "experimental": dict(layers=5),
    "slow_loader": dict(layers=4, loader_delay_s=0.02),
}


def _on_samples_path() -> None:
    samples = str(REPO_ROOT / "samples")
    if samples not in sys.path:
        sys.path.insert(0, samples)


def _record_samples():
    _on_samples_path()
    import record_samples

    return record_samples


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_traces(repo_root) -> Path:
    """HTA's real traces (A100/V100/MI250/NCCL/CPU), from ../shared beside the repo."""
    path = (repo_root.parent / "shared" / "traces" / "hta").resolve()
    if not path.is_dir():
        pytest.skip(f"shared traces not found at {path}")
    return path


@pytest.fixture(scope="session")
def _recorded(tmp_path_factory):
    record_samples = _record_samples()
    logdir = tmp_path_factory.mktemp("recorded_logdir")
    profiles = {
        name: record_samples.record_run(str(logdir / name), **kwargs)
        for name, kwargs in RECORDED_RUNS.items()
    }
    return logdir, profiles


@pytest.fixture(scope="session")
def recorded_logdir(_recorded) -> Path:
    """A logdir with runs `baseline`, `experimental` (one more block) and
    `slow_loader` (DataLoader 20 ms slower per batch: far above timing noise), each one Kineto trace. Session-wide:
    treat it as read-only (copy it to modify)."""
    return _recorded[0]


@pytest.fixture(scope="session")
def recorded_profiles(_recorded) -> dict:
    """Run name -> the `torch.profiler.profile` that wrote it, as an oracle
    (`prof.key_averages()`) independent of our trace parsing."""
    return _recorded[1]


# Diagnostic-mode runs of the session's diagnostic logdir -> variant of samples/diagnostic_sample.py.
DIAGNOSTIC_RUNS = {"diag_baseline": "baseline", "diag_experimental": "experimental"}


@pytest.fixture(scope="session")
def diagnostic_logdir(tmp_path_factory) -> Path:
    """A logdir with runs `diag_baseline` and `diag_experimental`, each only
    `diagnostic/diagnostic.jsonl`, swept by the real diagnose engine (levels
    1, 2, 4; threads and processes; py-spy GIL sampling) over the tiny
    3-stage pipeline of samples/diagnostic_sample.py. Read-only."""
    _on_samples_path()
    import diagnostic_sample

    logdir = tmp_path_factory.mktemp("diagnostic_logdir")
    for run, variant in DIAGNOSTIC_RUNS.items():
        result = diagnostic_sample.record_diagnostic(str(logdir), run, variant)
        assert not result.cut_short, result.reason
    return logdir


def build_tb_app(logdir, extra_plugins=()):
    """The real TensorBoard WSGI app serving our plugin (and instances of the
    plugin classes in `extra_plugins`, made with the same context, after it);
    returns (app, our plugin).

    Flags come from TensorBoard's own argument parser so the plugin sees the
    same `context.flags` it gets under `tensorboard --logdir`.
    """
    from tensorboard import program
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.core import core_plugin

    from tb_pipeline_plugin.server.plugin import PipelinePlugin

    tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader()])
    tb.configure(argv=["tensorboard", "--logdir", str(logdir)])
    flags = tb.flags
    plugin_name_to_instance: dict = {}
    context = base_plugin.TBContext(
        flags=flags,
        logdir=flags.logdir,
        plugin_name_to_instance=plugin_name_to_instance,
        sampling_hints=flags.samples_per_plugin,
        window_title=flags.window_title,
    )
    plugin = PipelinePlugin(context)
    plugins = [plugin] + [cls(context) for cls in extra_plugins]
    for p in plugins:
        plugin_name_to_instance[p.plugin_name] = p
    app = application.TensorBoardWSGI(plugins, flags.path_prefix)
    return app, plugin


@pytest.fixture
def make_tb_client():
    """Factory: `make_tb_client(logdir)` -> `werkzeug.test.Client` over the
    real TensorBoard app with our plugin; `client.plugin` is the instance.
    Plugins are closed (if they have `close()`) at teardown."""
    from werkzeug.test import Client

    plugins = []

    def make(logdir):
        app, plugin = build_tb_app(logdir)
        plugins.append(plugin)
        client = Client(app)
        client.plugin = plugin
        return client

    yield make
    for plugin in plugins:
        close = getattr(plugin, "close", None)
        if callable(close):
            close()


def wait_ready(client, run: str, timeout: float = 60) -> dict:
    """Poll `runs` until `run` is loaded; returns its `runs` entry (status
    "ready" or "failed"). A run the plugin did not prefetch ("unloaded") is
    asked for, as a user selecting it would. Fails the test on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        resp = client.get(f"{PLUGIN_PREFIX}/runs")
        assert resp.status_code == 200, resp.get_data(as_text=True)
        last = next((r for r in resp.get_json()["runs"] if r["name"] == run), None)
        if last is not None and last["status"] == "unloaded":
            client.get(f"{PLUGIN_PREFIX}/overview?run={quote(run)}")
        elif last is not None and last["status"] != "loading":
            return last
        if time.monotonic() > deadline:
            pytest.fail(f"run {run!r} not loaded after {timeout} s; last state: {last!r}")
        time.sleep(0.05)


def still_loading(resp) -> bool:
    """409, or an answer that holds what is ready and says it is not complete
    (`distributed` while ranks load)."""
    if resp.status_code == 409:
        return True
    return resp.status_code == 200 and resp.is_json and (resp.get_json() or {}).get("complete") is False


def get_when_ready(client, url: str, timeout: float = 120):
    """GET `PLUGIN_PREFIX/url`, asked again while it is still loading (`still_loading`)."""
    deadline = time.monotonic() + timeout
    while True:
        resp = client.get(f"{PLUGIN_PREFIX}/{url}")
        if not still_loading(resp):
            return resp
        if time.monotonic() > deadline:
            pytest.fail(f"{url} still loading after {timeout} s")
        time.sleep(0.05)


@pytest.fixture(name="wait_ready")
def _wait_ready_fixture():
    """`wait_ready` as a fixture, for tests that prefer not to import conftest."""
    return wait_ready
