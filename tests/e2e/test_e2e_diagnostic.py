"""End-to-end: the Diagnostic tab in real TensorBoard, on results the real
diagnose engine recorded this session (conftest's diagnostic_logdir), with
the built bundle and Debian chromium. Checks the verdicts, best concurrency,
GIL holders and a curve point on screen against the API, the one-sided and
empty cases, and saves screenshots to `test-artifacts/`."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from test_e2e_browser import (  # noqa: F401 - fixtures and helpers shared with the trace e2e test
    ARTIFACTS, BUNDLE, CHROMIUM, _get, runs_ready, serve_tensorboard, _open_tab, _pick, browser, page,
)

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]

TRACED = "traced_only"


@pytest.fixture(scope="module")
def tensorboard(diagnostic_logdir, recorded_logdir, tmp_path_factory):
    """`tensorboard --logdir` over the two diagnostic runs and one trace-only run; yields the port."""
    logdir = tmp_path_factory.mktemp("e2e_diag_logdir")
    shutil.copytree(diagnostic_logdir, logdir, dirs_exist_ok=True)
    shutil.copytree(recorded_logdir / "baseline", logdir / TRACED)
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_diag_log") / "tensorboard.log",
                           runs_ready("diag_baseline", "diag_experimental", TRACED)) as port:
        yield port


def _shot_view(page, frame, name: str) -> None:
    """The whole Diagnostic view: TensorBoard's iframe scrolls inside itself,
    so the window is made as tall as the view before the screenshot."""
    ARTIFACTS.mkdir(exist_ok=True)
    height = frame.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": 1280, "height": min(6000, height + 200)})
    page.wait_for_timeout(500)  # charts settle after their ResizeObserver pass
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_diagnostic_tab_shows_the_api_numbers(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "diag_baseline", "diag_experimental")
    frame.click("[data-tab=diagnostic]")
    frame.wait_for_selector("[data-view=diagnostic] .diag-stage", timeout=60_000)
    api = _get(port, "diff/diagnostic", baseline="diag_baseline", experimental="diag_experimental")

    for side in ("baseline", "experimental"):
        env = frame.locator(f".diag-run[data-side={side}] [data-testid=diagnostic-environment]").inner_text()
        assert f"{api[side + '_report']['environment']['cores']} core" in env and "levels 1, 2, 4" in env
        for stage in api[f"{side}_report"]["stages"]:
            card = frame.locator(f".diag-stage[data-stage='{stage['stage']}'][data-side={side}]")
            assert card.count() == 1, (side, stage["stage"])
            assert card.locator(".verdict").inner_text() == stage["label"]
            assert card.locator("[data-testid=verdict-reason]").inner_text() == stage["reason"]
            best = card.locator("[data-testid=best]").inner_text()
            assert f"{stage['best_thread_concurrency']} thread" in best
            assert f"{stage['best_process_concurrency']} process" in best
            # Three charts drawn (QPS, CPU %, memory), each a uPlot canvas.
            assert card.locator(".diag-chart canvas").count() == 3
            # A curve point: the thread QPS at 2 workers, as the API has it.
            point = next(p for c in stage["curves"] if c["executor"] == "thread" for p in c["points"] if p["concurrency"] == 2)
            card.locator("details summary").click()
            raw = card.locator("tr[data-point=thread-2] td[data-raw]").get_attribute("data-raw")
            assert float(raw) == pytest.approx(point["qps"], rel=1e-12)
            # Its intra-op threads (a dash: this pipeline never loads torch) and the cores a call kept busy.
            cells = card.locator("tr[data-point=thread-2] td")
            threads, cores = point["intra_op_threads"], point["cores_per_caller"]
            assert cells.nth(7).inner_text() == ("—" if threads is None else str(threads))
            assert cells.nth(8).inner_text() == ("—" if cores is None else f"{cores:.1f}")
            assert card.locator("[data-testid=skipped-levels] li").count() == len(stage["skipped_levels"])
            top = (stage["gil"] or {}).get("top") or []
            if top:
                assert card.locator("[data-testid=gil-holders] tbody tr").first.locator("td").first.inner_text() == top[0]["function"]
            else:
                assert card.locator("[data-testid=gil-holders]").count() == 0

    for row in api["stages"]:
        tr = frame.locator(f"[data-testid=diagnostic-summary] tr[data-stage='{row['stage']}']")
        raws = tr.locator("td[data-raw]").evaluate_all("tds => tds.map(td => td.getAttribute('data-raw'))")
        assert [float(r) for r in raws] == pytest.approx([row["best_thread_qps_ratio"], row["best_process_qps_ratio"]])
        # The change against noise, as the API judged it, with its reason in words.
        assert tr.locator("td.diag-change").get_attribute("data-change") == row["change"]
        assert tr.locator("[data-testid=change-reason]").inner_text() == row["change_reason"]
    # The baseline decode stage is a pure-Python loop: its GIL holder is named on screen.
    decode = next(s for s in api["baseline_report"]["stages"] if s["stage"] == "decode")
    if decode["gil"] and decode["gil"]["top"]:
        assert frame.locator(".diag-stage[data-stage=decode][data-side=baseline] [data-testid=gil-holders]").inner_text().count(
            "decode_python") == 1
    _shot_view(page, frame, "diagnostic_pair")
    assert page.problems == []


def test_one_sided_and_missing_results_are_explained(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "diag_baseline", TRACED)
    frame.click("[data-tab=diagnostic]")
    frame.locator(".msg", has_text=f"Run “{TRACED}” has no diagnostic results").wait_for(timeout=60_000)
    frame.wait_for_selector("[data-view=diagnostic] .diag-stage", timeout=60_000)
    assert frame.locator(".diag-stage[data-side=experimental]").count() == 0
    assert frame.locator(".diag-stage[data-side=baseline]").count() == len(_get(port, "diagnostic", run="diag_baseline")["stages"])

    _pick(frame, TRACED, TRACED)
    frame.locator(".msg", has_text="No diagnostic results in").wait_for(timeout=60_000)
    assert "TB_PIPELINE_DIAGNOSTIC_MODE=1" in frame.locator(".msg", has_text="No diagnostic results in").inner_text()
    assert page.problems == []
