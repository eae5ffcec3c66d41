"""End-to-end: the Memory view in real TensorBoard and Debian chromium.

Over the pair of tests/support/memory_runs.py (the experimental head holds a 32 MiB
scratch tensor through its forward) and a run recorded without memory
events: the view's sentence and first rows are the route's, the module and
its operator lead, a click on a row shades its blocks' lifetimes, the
state is in the URL, and a run without memory events gets the message.
Screenshot: test-artifacts/memory_diff.png.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.memory_runs import record_pair
from support.tb_cli import runs_ready, serve_tensorboard
from test_e2e_browser import BUNDLE, CHROMIUM, _get, _open_tab, _pick, browser, page  # noqa: F401 - fixtures
from test_e2e_diagnostic import _shot_view

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]


@pytest.fixture(scope="module")
def tensorboard(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("e2e_memory")
    record_pair(logdir)
    (logdir / "no_memory").mkdir()
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0, "dur": 100.0},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 50.0}]
    (logdir / "no_memory" / "w.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("mem_base", "mem_scratch", "no_memory")) as port:
        yield port


def test_memory_view_names_the_scratch_buffer(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "mem_base", "mem_scratch")
    frame.click("[data-tab=memory]")
    frame.wait_for_selector("[data-view=memory] [data-testid=memory-sentence]", timeout=60_000)
    api = _get(port, "diff/memory", baseline="mem_base", experimental="mem_scratch")
    assert frame.inner_text("[data-testid=memory-sentence]").strip() == api["sentence"]
    assert "Head_0" in api["sentence"] and "aten::empty" in api["sentence"]
    assert "p.tb_pipeline.view=memory" in page.url

    first = frame.locator("[data-testid=memory-rows] tbody tr").first
    cells = first.locator("td").all_inner_texts()
    assert cells[0] == "Net_0/Head_0 · forward" and cells[1] == "aten::empty", cells
    assert cells[3].startswith("32") and cells[3].endswith(" MiB"), cells
    assert frame.locator("[data-testid=memory-chart] canvas").count() >= 1
    assert frame.locator("[data-testid=memory-steps] canvas").count() >= 1
    assert frame.locator("[data-testid=memory-highlight]").count() == 0

    # A row's click shades its blocks' lifetimes; a second click clears it.
    first.click()
    frame.wait_for_selector("[data-testid=memory-highlight]", timeout=10_000)
    assert "Net_0/Head_0" in frame.inner_text("[data-testid=memory-highlight]")
    assert first.get_attribute("aria-selected") == "true"
    _shot_view(page, frame, "memory_diff")
    page.set_viewport_size({"width": 1280, "height": 800})
    first.click()
    frame.wait_for_selector("[data-testid=memory-highlight]", state="detached", timeout=10_000)

    # By operator: the allocating operator leads, its part beside it.
    frame.click("[data-testid=memory-by-operator]")
    cells = frame.locator("[data-testid=memory-rows] tbody tr").first.locator("td").all_inner_texts()
    assert cells[0] == "aten::empty · forward" and cells[1] == "Net_0/Head_0", cells
    assert not page.problems


def test_memory_view_without_memory_events_says_why(tensorboard, page):
    frame = _open_tab(page, tensorboard)
    _pick(frame, "no_memory", "mem_scratch")
    frame.click("[data-tab=memory]")
    frame.wait_for_selector("[data-testid=memory-message]", timeout=60_000)
    api = _get(tensorboard, "diff/memory", baseline="no_memory", experimental="mem_scratch")
    text = frame.inner_text("[data-testid=memory-message]")
    assert text.startswith("No memory to compare") and api["message"].replace("`", "") in text, text
    # The command to run is shown as code, whole.
    codes = frame.locator("[data-testid=memory-message] code").all_inner_texts()
    assert codes[0] == "tb-pipeline record --profile memory=1 -- python train.py", codes
    _shot_view(page, frame, "memory_empty_cpu")
    assert not page.problems
