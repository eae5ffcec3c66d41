"""The browser half of the end-to-end tests: Debian's chromium through Playwright (the `browser` and `page`
fixtures) and the steps every UI test takes in TensorBoard's page (open our tab, pick a pair, save a shot)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tb_pipeline_plugin" / "static" / "index.js"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]

@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = ctx.new_page()
    pg.problems = []  # page errors and dialogs: must stay empty
    pg.on("pageerror", lambda e: pg.problems.append(f"pageerror: {e}"))
    pg.on("dialog", lambda d: (pg.problems.append(f"dialog: {d.message}"), d.dismiss()))
    yield pg
    ctx.close()


def _plugin_frame(page):
    """The iframe TensorBoard made for our plugin (data/plugin_entry.html?name=tb_pipeline)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for f in page.frames:
            # After a reload the old frame can linger detached for a moment.
            if "plugin_entry.html" in f.url and "name=tb_pipeline" in f.url and not f.is_detached():
                return f
        page.wait_for_timeout(100)
    raise AssertionError(f"plugin iframe not found; frames: {[f.url for f in page.frames]}")


def _open_tab(page, port: int):
    page.goto(f"http://127.0.0.1:{port}/#tb_pipeline")
    frame = _plugin_frame(page)
    frame.wait_for_selector("form.picker", timeout=60_000)
    return frame


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(250)  # let charts settle after their ResizeObserver pass
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _pick(frame, baseline: str, experimental: str) -> None:
    frame.select_option("#pick-baseline-run", baseline)
    frame.select_option("#pick-experimental-run", experimental)
    assert frame.eval_on_selector("#pick-baseline-run", "e => e.value") == baseline
    assert frame.eval_on_selector("#pick-experimental-run", "e => e.value") == experimental


def _visible_names(frame) -> list[str]:
    return frame.eval_on_selector_all("table.vt tbody tr:not(.spacer) td.c-name", "tds => tds.map(td => td.textContent)")


def _selection(frame) -> dict:
    return {
        "baseline": frame.eval_on_selector("#pick-baseline-run", "e => e.value"),
        "experimental": frame.eval_on_selector("#pick-experimental-run", "e => e.value"),
        "b_worker": frame.eval_on_selector("#pick-baseline-worker", "e => e.value"),
        "b_span": frame.eval_on_selector("#pick-baseline-span", "e => e.value"),
        "e_worker": frame.eval_on_selector("#pick-experimental-worker", "e => e.value"),
        "e_span": frame.eval_on_selector("#pick-experimental-span", "e => e.value"),
    }
