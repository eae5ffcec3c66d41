"""Shared fixtures: real recorded traces and the real TensorBoard WSGI app.

Nothing here imitates a trace format or TensorBoard: runs are recorded with
`torch.profiler` (samples/record_samples.py) and requests go through
`TensorBoardWSGI`, the same dispatcher `tensorboard --logdir` serves.
"""
from __future__ import annotations

import os
import signal
import time
from urllib.parse import quote
from pathlib import Path

import pytest

from support.recorded import RecordedProfile, diagnostic_runs, recorded_runs
from support.recorded import _on_samples_path  # noqa: F401 - tests import it from here

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

# Parallel by default: `make test-py` runs the modules marked `timing` alone, one test at a time (they
# measure wall-clock time or CPU shares while the test runs, and another process's load moves what they
# assert), then every other module on two workers (pytest-xdist, whole files per worker). A timing module
# says why in its marker: `pytestmark = pytest.mark.timing("what it measures")`. Recordings that tests
# only read are made once, alone, before both halves (tests/support/recordings.py), so reading one is
# not timing-sensitive.
TIMING_MARKER = "timing"

# The parallel half hands out whole modules (`--dist loadfile --no-loadscope-reorder`) in collection order: these,
# the slowest, go first, so that no worker is left with a long module while the other is idle at the end (xdist's
# default order, most tests first, handed the 3-test wheel module out among the last). Seconds per module (setup,
# call, teardown) of the parallel half on this 2-core machine (the wheel module 100-165, as the load varies). A
# fixed list, not the last run's times: every worker must collect the same order. A longer list (record_repeat,
# memory_diff, span_picker, rank_rollup, ... moved ahead too) failed 10 tests of tests/sources (rank_rollup,
# early_parse, summarize) on 2026-12-07 that pass alone and as a folder: an order dependence not yet found
# (docs/development.md, "Test speed"); lengthen it only with a full run of the parallel half.
HEAVIEST_FIRST = {
    "tests/package/test_wheel_install.py": 100,
    "tests/trace/test_decoder_fuzz.py": 26,
    "tests/routes/test_route_snapshot.py": 25,
    "tests/e2e/test_e2e_profiler_link.py": 13,
}


def as_in_a_terminal() -> None:
    """`preexec_fn` of a child that a test interrupts with Ctrl-C: SIGINT as
    a terminal leaves it. A runner that starts the tests in the background
    (`nohup`, `cmd &` in a script) ignores SIGINT, every child inherits
    that, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pytest_addoption(parser):
    parser.addoption("--build-recordings", action="store_true",
                     help="build every recording of tests/support/recordings.py's cache after collection, "
                          "before the first test (alone, one after another; with --collect-only, nothing else "
                          "runs); a recording that fails fails the session, its tests still run")


def pytest_configure(config):
    config.addinivalue_line("markers", f"{TIMING_MARKER}(why): measures wall-clock time or CPU shares while it runs; "
                                       "`make test-py` runs it alone (tests/conftest.py)")


def pytest_collection_modifyitems(config, items):
    # Stable: each module's tests keep their order, and the modules not listed theirs.
    items.sort(key=lambda item: -HEAVIEST_FIRST.get(item.nodeid.split("::", 1)[0], 0))
    for item in items:
        for mark in item.iter_markers(TIMING_MARKER):
            why = mark.args[0] if mark.args else mark.kwargs.get("why")
            if not isinstance(why, str) or len(why.split()) < 3:
                raise pytest.UsageError(f"{item.nodeid}: a `timing` marker says why, "
                                        "pytest.mark.timing(\"what it measures\")")


def pytest_collection_finish(session):
    # `make test-py` builds the recordings in the serial half's own process (one collection fewer than a
    # `--collect-only` run of its own): after collection, before any test, so each is still made alone.
    if session.config.getoption("build_recordings"):
        from support import recordings

        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        failed = recordings.build_all(lambda line: reporter.write_line(line, flush=True))
        if failed and session.config.getoption("collectonly"):
            raise pytest.UsageError(f"recordings failed: {', '.join(failed)}")
        # Tests run on: each one reading a failed recording builds it again and fails with its error.
        session.config.stash[_FAILED_RECORDINGS] = failed


_FAILED_RECORDINGS = pytest.StashKey[list]()


def _module_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    from support import recordings

    recordings.reading_for(_module_of(item))  # before its fixtures read any


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.failed and call.when in ("setup", "call"):
        from support import recordings

        doubted = recordings.doubt(_module_of(item))
        if doubted:
            report.sections.append(("recordings", f"read by {_module_of(item)}, recorded again by the next "
                                                  f"`make test`: {', '.join(doubted)}"))


def pytest_sessionfinish(session, exitstatus):
    failed = session.config.stash.get(_FAILED_RECORDINGS, [])
    if failed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        reporter.write_line(f"recordings failed: {', '.join(failed)}", red=True)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
    got = recorded_runs.copy_to(tmp_path_factory.mktemp("recorded_logdir"))
    return got["logdir"], {name: RecordedProfile(rows) for name, rows in got["key_averages"].items()}


@pytest.fixture(scope="session")
def recorded_logdir(_recorded) -> Path:
    """A logdir with runs `baseline`, `experimental` (one more block) and
    `slow_loader` (DataLoader 20 ms slower per batch: far above timing noise), each one Kineto trace;
    this process's copy of the one recording (tests/support/recordings.py). Session-wide:
    treat it as read-only (copy it to modify)."""
    return _recorded[0]


@pytest.fixture(scope="session")
def recorded_profiles(_recorded) -> dict:
    """Run name -> what the `torch.profiler.profile` that wrote it said (`prof.key_averages()`, kept
    when it recorded), as an oracle independent of our trace parsing."""
    return _recorded[1]


@pytest.fixture(scope="session")
def diagnostic_logdir(tmp_path_factory) -> Path:
    """A logdir with runs `diag_baseline` and `diag_experimental`, each only
    `diagnostic/diagnostic.jsonl`, swept by the real diagnose engine (levels
    1, 2, 4; threads and processes; py-spy GIL sampling) over the tiny
    3-stage pipeline of samples/diagnostic_sample.py; this process's copy of the one recording.
    Read-only."""
    return diagnostic_runs.copy_to(tmp_path_factory.mktemp("diagnostic_logdir"))


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
