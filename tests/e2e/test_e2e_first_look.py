"""End-to-end, what a new user meets first (issue 47): real TensorBoard, on
a parse cache of its own, over the demo pair (samples/record_demo.py, the
pair `make demo` shows) and the H200 compile pair
(../shared/traces/h200/compile, recorded before the recorder wrote loop
ends), in Debian chromium.

- While a run's pipeline statistics and diagnostic results load (they are
  read on first use, after its trace), the browser's console holds no
  failed request: the page lets the server wait for the load from its
  first ask, so a load that ends within the wait is answered 200, not 409.
- A loop's end is no reading problem: no "could not be read" warning for
  it; the verdict's card says where its time went.
- What a run did not measure is "—" with the reason, never a 0: a
  DataLoader part has no queue, so no items/s and no workers' busy share.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.recorded import demo_pair
from test_e2e_browser import (  # noqa: F401 - browser and page are fixtures
    BUNDLE, CHROMIUM, _get, _open_tab, _pick, _shot, browser, page, runs_ready, serve_tensorboard,
)

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200" / "compile"
COMPILE = dict(baseline="compile_baseline", experimental="compile_experimental")
LOADER_PIPELINE_INDEX = -1  # a DataLoader's parts (analysis/statistics/stages.py)

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
    pytest.mark.skipif(not H200.is_dir(), reason=f"H200 traces not found at {H200}"),
]


@pytest.fixture(scope="module")
def tensorboard(tmp_path_factory):
    logdir = demo_pair.copy_to(tmp_path_factory.mktemp("first_look"))  # baseline, experimental
    for side in ("baseline", "experimental"):
        shutil.copytree(H200 / side, logdir / COMPILE[side])
    # Nothing parsed before: every load happens while the page asks, as on a first `make demo`.
    env = {**os.environ, "TB_PIPELINE_CACHE_DIR": str(tmp_path_factory.mktemp("parse_cache"))}
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("baseline", "experimental", *COMPILE.values()), env=env) as port:
        yield port


def test_the_console_holds_no_failed_request_while_runs_load(tensorboard, page):
    port = tensorboard
    errors, failed = [], []
    page.on("console", lambda m: m.type == "error" and errors.append(f"{m.text} ({m.location.get('url', '')})"))
    page.on("response", lambda r: "/data/plugin/tb_pipeline/" in r.url and r.status >= 400
            and failed.append(f"{r.status} {r.url}"))
    frame = _open_tab(page, port)
    _pick(frame, "baseline", "experimental")
    for tab, ready in (("overview", "[data-testid=explanation-sentence]"),
                       ("pipeline", "[data-view=pipeline] [data-testid=pipeline-verdict]"),
                       ("diagnostic", "[data-view=diagnostic] .diag-stage"),
                       ("memory", "[data-testid=memory-sentence]")):
        frame.click(f"[data-tab={tab}]")
        frame.wait_for_selector(ready, timeout=120_000)
    assert not failed and not errors and not page.problems, (failed, errors, page.problems)


def test_a_loops_end_is_no_reading_problem_and_what_was_not_measured_is_a_dash(tensorboard, page):
    port = tensorboard
    api = _get(port, "diff/pipeline", **COMPILE, wait_ms=10_000)  # the statistics load on first use
    experimental = api["experimental_report"]
    # Recorded before loop ends were: the last step held the loop's end, left out and said so, lost nothing.
    assert experimental["epilogue"]["from_last_step"] and experimental["warnings"] == []
    assert any("held the loop's epilogue" in n for n in experimental["split"]["notes"])
    loader = [r for r in api["stages"] if r["pipeline_index"] == LOADER_PIPELINE_INDEX]
    assert {r["stage_name"] for r in loader} == {"fetch", "collate_fn"}
    for r in loader:
        assert r["baseline_task_mean_s"] > 0 and r["experimental_task_mean_s"] > 0  # measured: timed per call
        for metric in ("qps", "busy_pct", "occupancy_pct"):  # a queue's: a DataLoader part has none
            assert [r[f"{k}_{metric}"] for k in ("baseline", "experimental", "delta")] == [None] * 3, r

    frame = _open_tab(page, port)
    _pick(frame, **COMPILE)
    frame.click("[data-tab=pipeline]")
    frame.wait_for_selector("[data-view=pipeline] [data-testid=pipeline-stages] table.vt tbody tr", timeout=120_000)
    assert "could not be read" not in frame.inner_text("[data-view=pipeline]")
    card = frame.locator("[data-testid=pipeline-verdict][data-side=experimental] [data-testid=epilogue]")
    assert experimental["epilogue"]["note"] in card.inner_text()

    for name in ("DataLoader · fetch", "DataLoader · collate_fn"):
        row = frame.locator("[data-testid=pipeline-stages] table.vt tbody tr", has_text=name)
        for label in ("Items/s", "Workers busy %"):
            for side in ("baseline", "experimental"):
                cell = row.locator(f"td[title^='{label}, {side}:']")
                assert cell.inner_text() == "—", (name, label, side)
                assert cell.get_attribute("title").endswith("not measured in this run"), (name, label, side)
            for delta in (row.locator(f"td[title^='{label}, delta (']"), row.locator(f"td[title^='{label}, delta %']")):
                assert delta.inner_text().startswith("—") and "neither run measured it" in delta.get_attribute("title")
        task = row.locator("td[title^='Task mean (ms), baseline:']")
        assert task.inner_text() not in ("—", "0", "0.00"), task.inner_text()
    note = frame.inner_text("[data-testid=pipeline-stages-note]")
    assert "Items/s" in note and "Workers busy %" in note and "no queue" in note, note
    _shot(page, "first_look_pipeline")
    assert not page.problems, page.problems


def test_the_comparison_card_says_which_steps_each_figure_is_of(tensorboard, page):
    """Issue 47, item 2: the step time (the recorded steps' steady state) and the traces' figures (3
    profiled steps, the breakdown) stand side by side; each says which steps it is of."""
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, COMPILE["baseline"], COMPILE["experimental"])
    frame.wait_for_selector("[data-testid=explanation-sentence]", timeout=120_000)
    answer = _get(port, "diff/overview", **COMPILE)
    sig = next(r for r in answer["rows"] if r["metric"] == "avg_step_time_us")["significance"]
    step = frame.locator("tr[data-metric=avg_step_time_us] th").inner_text()
    assert f"{sig['baseline_steps']} vs {sig['experimental_steps']} steady recorded steps" in step, step
    assert frame.locator("tr[data-metric=steps] th").inner_text().startswith("Profiled steps")
    assert "average per profiled step" in frame.inner_text("[data-view=overview]")
    notes = frame.locator("[data-chart^=breakdown-] .chart-note").all_inner_texts()
    assert notes and all(n.startswith("average profiled step") for n in notes), notes
    assert "steady state" in frame.inner_text("[data-testid=overview-note]")
