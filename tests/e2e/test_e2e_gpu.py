"""End-to-end on a real GPU comparison: TensorBoard over the H200 AMP pair
(fp32 vs bf16 autocast, ../shared/traces/h200/amp), headless Debian chromium.

The Overview's explanation is on device time and names the GEMMs; the Module
diff opens on device time; the Kernels tab grouped by launching operator shows
the fp32 and bf16 GEMMs of one `aten::addmm` side by side, every figure the
route's (whose numbers tests/analysis/test_gpu_device_time.py checks against the JSON).
Saves docs/screenshots/kernels_by_operator.png.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from test_e2e_browser import (  # noqa: F401 - browser and page are fixtures
    ARTIFACTS, BUNDLE, CHROMIUM, _get, _open_tab, _pick, browser, page, runs_ready, serve_tensorboard,
)

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
    pytest.mark.skipif(not H200.is_dir(), reason=f"H200 traces not found at {H200}"),
]


@pytest.fixture(scope="module")
def tensorboard(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("e2e_gpu_logdir")
    for side in ("baseline", "experimental"):
        shutil.copytree(H200 / "amp" / side, logdir / f"amp_{side}")
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("amp_baseline", "amp_experimental")) as port:
        yield port


def test_a_gpu_pair_is_explained_and_compared_on_device_time(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "amp_baseline", "amp_experimental")
    frame.wait_for_selector("[data-testid=explanation-sentence]", timeout=120_000)
    explain = _get(port, "diff/explain", baseline="amp_baseline", experimental="amp_experimental")
    assert explain["clock"] == "device"
    assert frame.inner_text("[data-testid=explanation-sentence]") == explain["sentence"]
    assert frame.get_attribute("table.contributors", "data-clock") == "device"
    first = explain["contributors"][0]
    line = frame.inner_text("[data-testid=top-operator]")
    assert first["top_operator"]["name"] in line and "→" in line

    # The module diff opens on device time for device-bound runs.
    frame.click("[data-tab=modules]")
    frame.wait_for_selector("[data-time=device][aria-pressed=true]", timeout=120_000)

    # Kernels by launching operator: fp32 and bf16 GEMMs of aten::addmm in one row.
    frame.click("[data-tab=kernels]")
    frame.wait_for_selector("[data-testid=kernel-grouping]", timeout=120_000)
    frame.select_option("[data-testid=kernel-grouping]", "operator")
    frame.fill("input[type=search]", "aten::addmm")
    frame.wait_for_function(
        "() => [...document.querySelectorAll('table.vt tbody tr:not(.spacer) td.c-name')].some(td => td.textContent === 'aten::addmm')",
        timeout=120_000)
    rows = _get(port, "diff/kernels", baseline="amp_baseline", experimental="amp_experimental", group_by="operator",
                filter="aten::addmm")["rows"]
    head = next(r for r in rows if r["module"] == "LM_0/Linear_16")
    row = frame.locator("table.vt tbody tr:not(.spacer)", has_text="LM_0/Linear_16").first
    text = row.inner_text()
    # Each side's largest kernel: its short name in the cell, the full name on hover.
    cells = row.locator("td").evaluate_all("tds => tds.map(td => [td.textContent, td.title])")
    for kernel in (head["baseline_kernels"][0], head["experimental_kernels"][0]):
        assert [kernel["short_name"], kernel["name"]] in cells, (kernel, cells)
    assert "f32f32" in head["baseline_kernels"][0]["name"] and head["experimental_kernels"][0]["name"].startswith("nvjet")
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(250)
    page.screenshot(path=str(ARTIFACTS / "kernels_by_operator.png"))
    SCREENSHOTS.mkdir(exist_ok=True)
    shutil.copyfile(ARTIFACTS / "kernels_by_operator.png", SCREENSHOTS / "kernels_by_operator.png")
    assert not page.problems, page.problems
