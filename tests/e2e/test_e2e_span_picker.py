"""End-to-end (issue 36): the span picker and the Memory tab of a GPU pair,
in real TensorBoard and Debian chromium, on real traces.

Kineto's resnet50 sample (one worker, two spans) is listed by order, steps
and start time, never by the trace file's id, which stays in the tooltip and
the URL; a run with one trace of one process has no span picker, its trace
said in words (issue 47); the H200 amp pair (recorded with `tb-pipeline record --profile`,
no memory events) gets the Memory tab's empty state with the command that
records them. Screenshots: docs/screenshots/span_picker.png and
docs/screenshots/memory_empty.png (also in test-artifacts/).
"""
from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from support.tb_cli import runs_ready, serve_tensorboard
from test_e2e_browser import ARTIFACTS, BUNDLE, CHROMIUM, CHROMIUM_ARGS, _get, _open_tab, _pick, browser  # noqa: F401

SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"
KINETO = SHARED / "kineto" / "resnet50_num_workers_0"
H200 = SHARED / "h200" / "amp"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
    pytest.mark.skipif(not (KINETO.is_dir() and H200.is_dir()), reason="shared traces not found"),
]


@pytest.fixture(scope="module")
def tensorboard(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("e2e_spans")
    shutil.copytree(KINETO, logdir / "resnet")
    for side in ("baseline", "experimental"):
        shutil.copytree(H200 / side, logdir / f"amp_{side}")
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("resnet", "amp_baseline", "amp_experimental")) as port:
        yield port


@pytest.fixture
def page(browser):  # noqa: F811 - the module's browser fixture
    # UTC, so the labels' times are the ones computed here from the route's Unix seconds.
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, timezone_id="UTC")
    pg = ctx.new_page()
    pg.problems = []
    pg.on("pageerror", lambda e: pg.problems.append(f"pageerror: {e}"))
    yield pg
    ctx.close()


def _utc(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _read_runs(page, port: int) -> dict:
    """The `runs` answer once every span is read (the page polls it the same way)."""
    for _ in range(600):
        body = _get(port, "runs")
        if not body["loading"]:
            return {r["name"]: r for r in body["runs"]}
        page.wait_for_timeout(200)
    raise AssertionError(f"runs still loading: {body}")


def _shot_doc(page, name: str, clip: dict | None = None) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), clip=clip)
    SCREENSHOTS.mkdir(exist_ok=True)
    shutil.copyfile(ARTIFACTS / f"{name}.png", SCREENSHOTS / f"{name}.png")


def test_spans_are_listed_by_order_steps_and_start(tensorboard, page):
    port = tensorboard
    runs = _read_runs(page, port)
    [worker] = runs["resnet"]["workers"]
    infos = worker["span_info"]
    assert len(infos) == 2 and all(i["steps"] and i["start_unix_s"] for i in infos), infos

    frame = _open_tab(page, port)
    _pick(frame, "resnet", "amp_experimental")
    frame.wait_for_function("() => document.querySelectorAll('#pick-baseline-span option').length === 2",
                            timeout=60_000)
    options = frame.eval_on_selector_all(
        "#pick-baseline-span option", "os => os.map(o => ({value: o.value, text: o.textContent, title: o.title}))")
    for info, option in zip(infos, options):
        s = info["steps"]
        assert option["text"] == (f"{info['order']} of 2 · steps {s['first']}–{s['last']} · "
                                  f"started {_utc(info['start_unix_s'])}"), option
        assert info["span"] not in option["text"]
        # The id: the option's value (the URL's), and its tooltip.
        assert option["value"] == info["span"] and info["span"] in option["title"], option
    assert [o["text"].split(" · ")[1] for o in options] == ["steps 5–10", "steps 16–21"]

    # The default is the last span; picking the first puts its id in the URL.
    assert frame.eval_on_selector("#pick-baseline-span", "e => e.value") == infos[1]["span"]
    frame.select_option("#pick-baseline-span", infos[0]["span"])
    page.wait_for_function(f"() => location.hash.includes('{infos[0]['span']}')", timeout=10_000)
    assert infos[0]["span"] in frame.eval_on_selector("#pick-baseline-span", "e => e.title")

    # The GPU pair's single span: nothing to pick, so no span picker; its steps and start, read from the
    # trace, in words; the process that wrote it named as one.
    [gpu] = runs["amp_experimental"]["workers"]
    [info] = gpu["span_info"]
    assert frame.is_hidden("#pick-experimental-span") and frame.is_visible("#pick-baseline-span")
    shown = frame.inner_text("[data-testid=pick-experimental-trace] > span")
    assert shown == f"steps {info['steps']['first']}–{info['steps']['last']} · started {_utc(info['start_unix_s'])}"
    assert frame.eval_on_selector("#pick-experimental-span", "e => e.value") == info["span"]  # still the URL's
    assert frame.inner_text("label[for=pick-experimental-worker]").startswith("Process")
    assert frame.eval_on_selector("#pick-experimental-worker", "e => e.value") == gpu["name"]

    # The picture: the baseline's span list opened as a list box (a native drop-down is not in screenshots).
    frame.eval_on_selector("#pick-baseline-span", "e => { e.size = e.options.length; e.style.height = 'auto'; }")
    box = frame.locator("form.picker").bounding_box()  # in the page's coordinates, iframe included
    _shot_doc(page, "span_picker", clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"]})
    assert not page.problems


def test_a_gpu_pair_without_memory_events_says_how_to_record_them(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "amp_baseline", "amp_experimental")
    frame.click("[data-tab=memory]")
    frame.wait_for_selector("[data-testid=memory-message]", timeout=120_000)
    api = _get(port, "diff/memory", baseline="amp_baseline", experimental="amp_experimental")
    assert api["message"].startswith("Neither run's trace has memory events")
    text = frame.inner_text("[data-testid=memory-message]")
    assert api["message"].replace("`", "") in text
    assert frame.locator("[data-testid=memory-message] code").first.inner_text() == \
        "tb-pipeline record --profile memory=1 -- python train.py"
    _shot_doc(page, "memory_empty")
    assert not page.problems
