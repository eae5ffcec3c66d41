"""End-to-end, Pipeline tab: real TensorBoard over an SPDL pipeline pair
(samples/record_pipeline_samples.py: a real SPDL pipeline whose load stage
is too slow, and the same with its concurrency raised: stage and queue
statistics the demo's DataLoader has not), a trace pair, and a third
recorded run; headless Debian chromium drives the tab as a user
would and every number checked on screen is the API's."""
from __future__ import annotations

import math
import shutil
import sys
import time
from pathlib import Path

import pytest

from support.recordings import recording

from test_e2e_browser import (  # noqa: F401 - browser and page are fixtures
    BUNDLE, CHROMIUM, _get, runs_ready, serve_tensorboard, _open_tab, _pick, _plugin_frame, _shot, browser, page,
)

REPO = Path(__file__).resolve().parents[2]
BASELINE, EXPERIMENTAL, THIRD = "pipeline_baseline", "pipeline_experimental", "third"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]


def _record_third(logdir: Path) -> None:
    from tb_pipeline_plugin.record import Recorder

    def batches():
        for i in range(20):
            time.sleep(0.004)
            yield i

    with Recorder(str(logdir), THIRD, host_interval_s=0.05) as rec:
        for _ in rec.wrap(batches()):
            time.sleep(0.006)


@recording(sources=["samples/record_pipeline_samples.py"])
def recorded_pipelines(logdir: Path) -> None:
    """samples/record_pipeline_samples.py's SPDL pair and the third run, made once (support/recordings.py)."""
    sys.path.insert(0, str(REPO / "samples"))
    import record_pipeline_samples

    record_pipeline_samples.main(["--out", str(logdir)])
    _record_third(logdir)


@pytest.fixture(scope="module")
def tensorboard(recorded_logdir, tmp_path_factory):
    logdir = recorded_pipelines.copy_to(tmp_path_factory.mktemp("e2e_pipeline_logdir"))
    for run in ("baseline", "experimental"):  # a trace pair beside them
        shutil.copytree(recorded_logdir / run, logdir / run)
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready(BASELINE, EXPERIMENTAL, THIRD)) as port:
        yield port, logdir


def test_pipeline_tab(tensorboard, page):
    port, _ = tensorboard
    runs = {r["name"]: r for r in _get(port, "runs")["runs"]}
    assert runs[BASELINE]["kinds"] == ["pipeline"] and runs[BASELINE]["workers"] == []
    frame = _open_tab(page, port)
    _pick(frame, BASELINE, EXPERIMENTAL)  # runs with only pipeline statistics are pickable
    frame.click("[data-tab=pipeline]")
    frame.wait_for_selector("[data-view=pipeline] [data-testid=pipeline-verdict]", timeout=60_000)
    api = _get(port, "diff/pipeline", baseline=BASELINE, experimental=EXPERIMENTAL)

    # ---- Verdicts and next steps, in the server's words.
    for side in ("baseline", "experimental"):
        card = frame.locator(f"[data-testid=pipeline-verdict][data-side={side}]")
        verdict = api[f"{side}_report"]["input_bound"]
        assert card.get_attribute("data-verdict") == verdict["verdict"]
        assert card.locator("[data-testid=verdict-summary]").inner_text() == verdict["summary"]
        # `backticked` parts of the server's words are shown as code.
        assert verdict["next_step"].replace("`", "") in card.locator("[data-testid=next-step]").inner_text()
        if "`" in verdict["next_step"]:
            assert card.locator("[data-testid=next-step] code").count() == verdict["next_step"].count("`") // 2
    assert api["baseline_report"]["input_bound"]["verdict"] == "yes"  # the demo's slow load stage
    assert "Input-bound" in frame.locator("[data-testid=pipeline-verdict][data-side=baseline]").inner_text()
    assert "load" in frame.locator("[data-side=baseline] [data-testid=bottleneck]").inner_text()

    # ---- Split bars: each part's share is the API's.
    for side in ("baseline", "experimental"):
        for part in ("data_wait", "compute"):
            seg = frame.locator(f"[data-testid=split-bar][data-side={side}] [data-part={part}]")
            assert math.isclose(float(seg.get_attribute("data-pct")), api[f"{side}_report"]["split"][f"{part}_pct"], rel_tol=1e-9)
    wait_row = frame.locator("tr[data-metric='split.data_wait_pct'] td").nth(2)
    assert math.isclose(float(wait_row.get_attribute("data-raw")),
                        next(r["delta"] for r in api["summary"] if r["metric"] == "split.data_wait_pct"), rel_tol=1e-9)

    # ---- Stage and callback tables: the API's rows, largest |delta| first.
    stages = frame.locator("[data-testid=pipeline-stages]")
    shown = stages.evaluate("s => [...s.querySelectorAll('tbody tr:not(.spacer) td.c-name')].map(td => td.textContent)")
    assert shown == [r["stage_name"] for r in api["stages"]][: len(shown)] and len(shown) >= 3
    # A stage a side timed no task of (a queue-only stage) has no task time there: null, after the others.
    deltas = [abs(r["delta_task_mean_s"]) if r["delta_task_mean_s"] is not None else None for r in api["stages"]]
    timed = [d for d in deltas if d is not None]
    assert deltas == sorted(timed, reverse=True) + [None] * (len(deltas) - len(timed))
    for r in api["stages"]:
        if r["delta_task_mean_s"] is None:
            cell = stages.locator("tbody tr", has_text=r["stage_name"]).locator("td[title^='Task mean (ms), delta (']")
            assert cell.count() == 0 or "measure" in cell.first.get_attribute("title")
    callbacks = frame.locator("[data-testid=pipeline-callbacks]")
    shown_cb = callbacks.evaluate("s => [...s.querySelectorAll('tbody tr:not(.spacer) td.c-name')].map(td => td.textContent)")
    assert shown_cb == [r["name"] for r in api["callbacks"]][: len(shown_cb)] and shown_cb
    # A header click re-sorts locally (by the baseline column, largest first).
    stages.locator("th[data-key=baseline_task_mean_s]").click()
    resorted = stages.evaluate("s => [...s.querySelectorAll('tbody tr:not(.spacer) td.c-name')].map(td => td.textContent)")
    by_base = sorted(api["stages"], key=lambda r: (r["baseline_task_mean_s"] is None, -(r["baseline_task_mean_s"] or 0)))
    assert resorted[0] == by_base[0]["stage_name"]

    frame.evaluate("() => window.scrollTo(0, 0)")
    _shot(page, "pipeline")

    # ---- Trend plots: the pair, then a third run added by the user.
    legend = frame.locator("[data-view=pipeline] #pl-trends ~ ul.legend li")
    assert legend.count() == 2
    assert frame.locator("[data-view=pipeline] #pl-trends ~ .grid2 canvas").count() >= 2
    frame.select_option("[data-testid=extra-run-select]", THIRD)
    frame.click("[data-testid=extra-run-add]")
    frame.wait_for_function("() => document.querySelectorAll('[data-view=pipeline] #pl-trends ~ ul.legend li').length === 3",
                            timeout=30_000)
    assert THIRD in legend.nth(2).inner_text()
    # ---- GIL contention: a host plot of its own, and the run's mean in the summary table.
    assert any(p["gil_contention_pct"] is not None for p in api["baseline_report"]["host"]["series"])
    frame.select_option("select[aria-label='Host metric']", "gil_contention_pct")
    frame.wait_for_selector("[aria-label='GIL contention (%) over time of 3 runs']", timeout=30_000)
    gil_row = frame.locator("tr[data-metric='host.summary.gil_contention_pct_mean'] td").nth(0)
    row = next(r for r in api["summary"] if r["metric"] == "host.summary.gil_contention_pct_mean")
    assert math.isclose(float(gil_row.get_attribute("data-raw")), row["baseline"], rel_tol=1e-9)
    _shot(page, "pipeline_trends")
    stages.scroll_into_view_if_needed()
    _shot(page, "pipeline_tables")

    # ---- The added run is kept in the URL like every other choice: a reload plots it again, removing it forgets it.
    assert f"p.tb_pipeline.pl={THIRD}" in page.evaluate("() => location.hash")
    page.reload(wait_until="load")
    frame = _plugin_frame(page)
    frame.wait_for_function("() => document.querySelectorAll('[data-view=pipeline] #pl-trends ~ ul.legend li').length === 3",
                            timeout=60_000)
    legend = frame.locator("[data-view=pipeline] #pl-trends ~ ul.legend li")
    assert THIRD in legend.nth(2).inner_text()
    frame.click(f"[aria-label='Remove {THIRD} from the plots']")
    frame.wait_for_function("() => document.querySelectorAll('[data-view=pipeline] #pl-trends ~ ul.legend li').length === 2",
                            timeout=30_000)
    assert "p.tb_pipeline.pl=" not in page.evaluate("() => location.hash")
    assert not page.problems, page.problems
