"""End-to-end: our "trace viewer" links and torch-tb-profiler, in real TensorBoard and Debian chromium.

Two TensorBoards over a copy of the recorded logdir, both started the way
the `tensorboard` command starts (tests/support/tb_launcher.py): one with every
installed plugin (ours and torch-tb-profiler), one without torch-tb-profiler.
With it, the run picker's trace viewer link opens our profiler page, which
loads torch-tb-profiler's trace_embedding.html and asks its `trace` route
for the same run and worker (its own names, from our `profiler_link` route),
answered 200. Whether the Catapult viewer then starts depends on the
network (trace_embedding.html takes a polyfill from a CDN): the page must
say which happened. Without it, no link anywhere.
"""
from __future__ import annotations

import shutil
import sys
import time
import urllib.error
import urllib.parse
from pathlib import Path

import pytest

from support.tb_cli import runs_ready, serve_tensorboard
from test_e2e_browser import ARTIFACTS, BUNDLE, CHROMIUM, _get, _open_tab, _pick, browser  # noqa: F401 - browser: the shared fixture

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "tests" / "support" / "tb_launcher.py"
TIMELINE_JS = REPO / "tb_pipeline_plugin" / "static" / "profiler.js"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists() or not TIMELINE_JS.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]


def _serve(logdir: Path, log_path: Path, without: list[str]):
    """TensorBoard as the `tensorboard` command starts it, minus the plugins in `without`."""
    def command(port: int) -> list[str]:
        cmd = [sys.executable, str(LAUNCHER)] + [a for w in without for a in ("--without", w)]
        return cmd + ["--", "--logdir", str(logdir), "--port", str(port), "--host", "127.0.0.1"]

    return serve_tensorboard(logdir, log_path, runs_ready("baseline", "experimental"),
                             env={"PYTHONPATH": str(REPO)}, command=command)


@pytest.fixture(scope="module")
def logdir(recorded_logdir, tmp_path_factory) -> Path:
    # The pair only: their plugin parses every run it finds before it lists any (a third run was ~6 s more of this module).
    out = tmp_path_factory.mktemp("timeline") / "logdir"
    for run in ("baseline", "experimental"):
        shutil.copytree(recorded_logdir / run, out / run)
    return out


@pytest.fixture(scope="module")
def tb_both(logdir, tmp_path_factory):
    pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler not installed (pip install .[profiler])")
    with _serve(logdir, tmp_path_factory.mktemp("tb_both") / "tensorboard.log", []) as port:
        yield port


@pytest.fixture(scope="module")
def tb_ours_only(logdir, tmp_path_factory):
    with _serve(logdir, tmp_path_factory.mktemp("tb_ours") / "tensorboard.log", ["pytorch_profiler"]) as port:
        yield port


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.problems = []
    ctx.on("page", lambda pg: pg.on("pageerror", lambda e: ctx.problems.append(f"{pg.url}: {e}")))
    yield ctx
    ctx.close()


def _plugins(port: int) -> dict:
    import json
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugins_listing", timeout=30) as r:
        return json.loads(r.read())


def test_timeline_link_opens_their_trace_view(tb_both, context):
    port = tb_both
    assert "pytorch_profiler" in _plugins(port)
    page = context.new_page()
    frame = _open_tab(page, port)
    _pick(frame, "baseline", "experimental")
    link = frame.locator("fieldset[data-side=baseline] a.profiler-link")
    link.wait_for(timeout=30_000)
    worker = frame.eval_on_selector("#pick-baseline-worker", "e => e.value")
    span = frame.eval_on_selector("#pick-baseline-span", "e => e.value")
    href = link.get_attribute("href")
    assert href.startswith("profiler.html?") and link.get_attribute("target") == "_blank"
    q = urllib.parse.parse_qs(href.split("?", 1)[1])
    assert q["run"] == ["baseline"] and q["worker"] == [worker] and q["span"] == [span]
    theirs = _get(port, "profiler_link", run="baseline", worker=worker, span=span)["profiler"]

    # Listened to on the context before the click: when their run is already listed the new page
    # fetches the trace within milliseconds, before a listener on the page itself could be attached
    # (a clean clone's CI run saw only the iframe's response that way).
    responses = []
    context.on("response", lambda r: responses.append(r))
    with context.expect_page() as new_page:
        link.click()
    tl = new_page.value
    # Their parse runs in background processes: the first TensorBoard start
    # on a busy box can take a while before their `runs` lists the run.
    deadline = time.monotonic() + 240
    trace_resp = None
    while trace_resp is None:
        trace_resp = next((r for r in responses if "/data/plugin/pytorch_profiler/trace?" in r.url), None)
        if trace_resp is None and time.monotonic() > deadline:
            status = tl.evaluate("() => document.getElementById('profiler-status')?.textContent ?? '(no status)'")
            seen = [(r.url, r.status) for r in responses]
            pytest.fail(f"no trace request in 240 s; the page says {status!r}; it got {seen[-10:]}")
        if trace_resp is None:
            tl.wait_for_timeout(200)
    seen = [(r.url, r.status) for r in responses]
    assert urllib.parse.urlparse(tl.url).path == "/data/plugin/tb_pipeline/profiler.html"
    assert trace_resp.status == 200
    asked = urllib.parse.parse_qs(urllib.parse.urlparse(trace_resp.url).query)
    assert asked == {"run": [theirs["run"]], "worker": [theirs["worker"]], "span": [theirs["span"]]}
    assert theirs["run"] == "baseline" and theirs["worker"] == worker
    body = trace_resp.body()
    assert b'"traceEvents"' in body[:100_000]

    # Their viewer page is embedded, same origin, and answered 200.
    embed = tl.frame_locator("iframe")
    assert embed is not None
    deadline = time.monotonic() + 30
    while not any(f.url.endswith("/data/plugin/pytorch_profiler/trace_embedding.html") for f in tl.frames):
        assert time.monotonic() < deadline, [f.url for f in tl.frames]
        tl.wait_for_timeout(200)
    seen = [(r.url, r.status) for r in responses]
    assert any(u.endswith("/pytorch_profiler/trace_embedding.html") and s == 200 for u, s in seen), seen

    # The page says what happened: the viewer got the trace, or (offline)
    # why it did not start and where the trace file is instead.
    tl.wait_for_function(
        "() => { const t = document.getElementById('profiler-status').textContent;"
        " return t.startsWith('Trace of') || t.includes('did not start'); }",
        timeout=60_000,
    )
    status = tl.inner_text("#profiler-status")
    if "did not start" in status:
        assert "cdnjs.cloudflare.com" in status
        assert tl.locator("#profiler-status a[download]").count() == 1
    ARTIFACTS.mkdir(exist_ok=True)
    tl.screenshot(path=str(ARTIFACTS / "timeline.png"))

    # Operator rows and a module piece carry links to both traces too.
    frame.click("[data-tab=operators]")
    frame.wait_for_selector("table.vt tbody tr:not(.spacer) td.c-extra a.profiler-link", timeout=60_000)
    row = frame.locator("table.vt tbody tr:not(.spacer)").first
    name = row.locator("td.c-name").inner_text()
    hrefs = [a.get_attribute("href") for a in row.locator("td.c-extra a.profiler-link").all()]
    runs = [urllib.parse.parse_qs(h.split("?", 1)[1]) for h in hrefs]
    assert [r["run"] for r in runs] == [["baseline"], ["experimental"]]
    assert all(r["find"] == [name] for r in runs)
    # Right after the name, so it is on screen without scrolling sideways.
    box = row.locator("td.c-extra").bounding_box()
    assert box and box["x"] + box["width"] <= 1280, box
    page.screenshot(path=str(ARTIFACTS / "timeline_operators.png"))
    assert not context.problems, context.problems


def test_no_link_without_their_plugin(tb_ours_only, context):
    port = tb_ours_only
    assert "pytorch_profiler" not in _plugins(port) and "tb_pipeline" in _plugins(port)
    page = context.new_page()
    frame = _open_tab(page, port)
    _pick(frame, "baseline", "experimental")
    frame.click("[data-tab=operators]")
    frame.wait_for_selector("table.vt tbody tr:not(.spacer)", timeout=60_000)
    # The listing answered long before the table did (it is one small request).
    frame.wait_for_timeout(500)
    assert frame.locator("a.profiler-link").count() == 0
    # Only our own Timeline view's button is beside each name.
    extras = frame.locator("table.vt tbody tr:not(.spacer) td.c-extra")
    assert extras.count() > 0
    assert {t.strip() for t in extras.all_inner_texts()} == {"Timeline"}
    # Our page still explains itself if someone opens it by hand.
    tl = context.new_page()
    tl.goto(f"http://127.0.0.1:{port}/data/plugin/tb_pipeline/profiler.html?run=baseline")
    tl.wait_for_function("() => document.getElementById('profiler-status').dataset.state === 'error'", timeout=30_000)
    assert "not loaded in this TensorBoard" in tl.inner_text("#profiler-status")
    assert not context.problems, context.problems
