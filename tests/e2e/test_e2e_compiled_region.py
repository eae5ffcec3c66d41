"""End-to-end, issue 45 parts 3 and 4 on the H200 compile pair (../shared/traces/h200/compile: eager
against `torch.compile(model)`): real TensorBoard and Debian chromium.

- Modules: inside LM_0 the compiled graph is one piece against the eager modules it replaced, a
  comparison (both runs' times, no one-sided badge), named by its module with the graph's hash on hover,
  and its kernels by fused-op family below the table.
- Kernels: every row shows its short name, the full name on hover.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from test_e2e_browser import (  # noqa: F401 - browser and page are fixtures
    BUNDLE, CHROMIUM, _get, _open_tab, _pick, _shot, browser, page, runs_ready, serve_tensorboard,
)

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200" / "compile"
SEL = dict(baseline="eager", experimental="compiled")

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
    pytest.mark.skipif(not H200.is_dir(), reason=f"H200 traces not found at {H200}"),
]


@pytest.fixture(scope="module")
def tensorboard(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("compiled_region")
    shutil.copytree(H200 / "baseline", logdir / SEL["baseline"])
    shutil.copytree(H200 / "experimental", logdir / SEL["experimental"])
    env = {**os.environ, "TB_PIPELINE_CACHE_DIR": str(tmp_path_factory.mktemp("parse_cache"))}
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready(*SEL.values()), env=env) as port:
        yield port


def _zoom(frame, path: str, crumbs: int) -> None:
    frame.click(f"table.pieces tr[data-path='{path}'] button:has-text('Zoom in')")
    frame.wait_for_function("n => document.querySelectorAll('nav.crumbs li').length === n", arg=crumbs, timeout=60_000)


def test_the_compiled_region_is_drawn_as_a_comparison(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, **SEL)
    frame.click("[data-tab=modules]")
    frame.wait_for_selector("[data-view=modules] table.pieces tbody tr", timeout=120_000)
    _zoom(frame, "1", 2)
    step = _get(port, "diff/modules", **SEL, path="1")
    lm = next(c for c in step["children"] if c["name"] == "LM_0")
    _zoom(frame, lm["path"], 3)
    level = _get(port, "diff/modules", **SEL, path=lm["path"])
    region = next(c for c in level["children"] if c["kind"] == "compiled_region")
    frame.wait_for_selector(f"table.pieces tr[data-path='{region['path']}']", timeout=30_000)
    row = frame.locator(f"table.pieces tr[data-path='{region['path']}']")
    assert row.get_attribute("data-status") == "matched" and row.get_attribute("data-kind") == "compiled_region"
    name = row.locator("td.name")
    assert name.inner_text().startswith("LM_0 (compiled graph)")
    assert region["compiled_region"]["graph_ids"][0] in name.get_attribute("title")  # the hash on hover
    assert "Embedding_0" in name.get_attribute("title")
    # A comparison: both runs' times, no one-sided badge.
    assert row.locator(".badge.baseline_only, .badge.experimental_only, .badge.inside_compiled").count() == 0
    for col in ("b", "e"):
        assert row.locator(f"td[data-col={col}]").inner_text() not in ("—", "0.000")
    # No other piece of the level is one-sided.
    statuses = frame.eval_on_selector_all("table.pieces tbody tr", "trs => trs.map(t => t.dataset.status)")
    assert statuses == ["matched"] * len(level["children"]), statuses
    # Its kernels by fused-op family, both runs.
    section = frame.locator(f"[data-testid=compiled-region][data-path='{region['path']}']")
    section.wait_for(timeout=30_000)
    poi = section.locator("tr[data-family=triton_poi]")
    assert "triton_poi (fused pointwise)" in poi.inner_text()
    families = {f["family"]: f for f in region["compiled_region"]["kernel_families"]}
    assert f"0 → {families['triton_poi']['experimental_kernels']}" in poi.inner_text()
    assert section.locator("tr[data-family=gemm]").count() == 1
    _shot(page, "modules_compiled_region")
    assert not page.problems, page.problems


def test_kernel_rows_show_short_names_with_the_full_name_on_hover(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, **SEL)
    frame.click("[data-tab=kernels]")
    frame.wait_for_selector("[data-view=kernels] table.vt tbody tr:not(.spacer) td.c-name", timeout=120_000)
    api = _get(port, "diff/kernels", **SEL, limit=10000)
    by_full = {r["name"]: r["short_name"] for r in api["rows"]}
    cells = frame.eval_on_selector_all(
        "table.vt tbody tr:not(.spacer) td.c-name", "tds => tds.map(td => [td.textContent, td.title])")
    assert cells
    for text, title in cells:
        assert title in by_full, title  # the full name on hover
        assert text == by_full[title]
    assert any(text != title for text, title in cells)  # something was folded
    # The filter still matches the full name: a part only the full signature has.
    frame.fill("[data-view=kernels] input[type=search]", "::Params")
    frame.wait_for_function(
        "() => [...document.querySelectorAll('table.vt tbody tr:not(.spacer) td.c-name')].every("
        "td => td.title.includes('::Params')) && document.querySelectorAll('table.vt tbody tr:not(.spacer)').length > 0",
        timeout=30_000)
    _shot(page, "kernels_short_names")
    assert not page.problems, page.problems
