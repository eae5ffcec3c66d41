"""The Memory tab's CUDA memory snapshot part (issue 46) in chromium: the amp pair with its snapshots;
the sentence and the peaks as the route gives them; a screenshot into docs/screenshots/memory_snapshot.png."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.snapshot_oracle import AMP, SNAPSHOTS
from support.tb_cli import runs_ready, serve_tensorboard
from test_e2e_browser import BUNDLE, CHROMIUM, _get, _open_tab, _pick, browser, page  # noqa: F401 - fixtures

SHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "memory_snapshot.png"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
    pytest.mark.skipif(not SNAPSHOTS.is_dir(), reason=f"no snapshots at {SNAPSHOTS}"),
]


@pytest.fixture(scope="module")
def tensorboard(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("e2e_snapshot")
    for run, snap in (("baseline", "fp32"), ("experimental", "bf16")):
        shutil.copytree(AMP / run, logdir / run)
        shutil.copy(SNAPSHOTS / f"{snap}.pickle", logdir / run / f"{snap}.pickle")
    for p in logdir.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("baseline", "experimental")) as port:
        yield port


def test_memory_tab_shows_the_snapshots(tensorboard, page):
    frame = _open_tab(page, tensorboard)
    _pick(frame, "baseline", "experimental")
    frame.click("[data-tab=memory]")
    frame.wait_for_selector("[data-testid=memory-snapshot] [data-testid=snapshot-sentence]", timeout=90_000)
    api = _get(tensorboard, "diff/memory", baseline="baseline", experimental="experimental")["snapshot"]
    assert frame.inner_text("[data-testid=snapshot-sentence]").strip() == api["sentence"]
    cells = frame.locator("[data-testid=snapshot-metrics] tbody tr").first.locator("td").all_inner_texts()
    assert cells[0] == "peak allocated" and cells[1].startswith("9.14") and cells[2].startswith("7.02"), cells
    first = frame.locator("[data-testid=snapshot-rows] tbody tr").first.locator("td").all_inner_texts()
    assert first[0] == api["devices"][0]["by_category"][0]["key"], first
    height = frame.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 1280, "height": min(3000, height + 200)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOT))
    assert not page.problems
