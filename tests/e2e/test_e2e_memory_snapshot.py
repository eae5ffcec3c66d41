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
    # The chart: uPlot's canvas drawn with a size, the legend naming both runs' allocated and reserved lines.
    chart = frame.locator("[data-testid=snapshot-chart]")
    canvas = chart.locator("canvas")
    assert canvas.count() >= 1
    box = canvas.first.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 100, box
    legend = chart.locator(".legend li").all_inner_texts()
    assert [t.split(" (")[0] for t in legend] == ["baseline allocated", "baseline reserved",
                                                   "experimental allocated", "experimental reserved"], legend
    assert "9.14 GiB" in legend[0] and "9.89 GiB" in legend[1] and "7.02 GiB" in legend[2], legend
    # Something was drawn on it: not every pixel blank.
    inked = canvas.first.evaluate("c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                                  " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }")
    assert inked > 1000, inked
    # The largest segments: each run's, as the route gives them.
    segs = frame.locator("[data-testid=snapshot-segments] tbody tr")
    side = api["devices"][0]
    want = min(8, len(side["baseline"]["largest_segments"])) + min(8, len(side["experimental"]["largest_segments"]))
    assert want > 0 and segs.count() == want, (segs.count(), want)
    cells = segs.first.locator("td").all_inner_texts()
    assert cells[0] == "baseline" and cells[1] == hex(side["baseline"]["largest_segments"][0]["address"]), cells
    height = frame.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 1280, "height": min(3000, height + 200)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOT))
    assert not page.problems
