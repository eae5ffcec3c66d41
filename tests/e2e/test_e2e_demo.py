"""End-to-end, the demo: `make demo`'s logdir recorded by the same function
(samples/record_demo.py: samples/train_demo.py through `tb-pipeline record
--profile` and diagnostic mode), real TensorBoard, headless Debian chromium.

The page opens on baseline vs experimental with nothing picked, and every
tab shows the demo's own data, checked against the API; one screenshot per
view goes to `docs/screenshots/*.png` (the pictures the README shows, kept
current by this test) and `test-artifacts/demo_*.png`, and the README's
quote of the explanation to the sentence the overview's picture shows."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support import readme_quote
from support.recorded import demo_pair
from test_e2e_browser import (  # noqa: F401 - browser and page are fixtures
    ARTIFACTS, BUNDLE, CHROMIUM, _get, _open_tab, _shot, browser, page, runs_ready, serve_tensorboard,
)

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "screenshots"
PAIR = dict(baseline="baseline", experimental="experimental")

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    logdir = demo_pair.copy_to(tmp_path_factory.mktemp("demo_runs"))  # recorded once (conftest.py)
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("baseline", "experimental")) as port:
        yield port, logdir


def test_the_demo_holds_one_pair_with_every_kind_of_data(demo):
    port, logdir = demo
    runs = {r["name"]: r for r in _get(port, "runs")["runs"]}
    assert sorted(runs) == ["baseline", "experimental"]
    for run in runs.values():
        assert sorted(run["kinds"]) == ["diagnostic", "pipeline", "trace"], run
        assert len(run["workers"]) == 1  # one trace: the launcher's profiler, nothing left over
    for side in ("baseline", "experimental"):
        [trace] = list((logdir / side).glob("*.pt.trace.json"))
        assert trace.stat().st_size < 8_000_000  # small enough to ship in a demo


def _doc_shot(page, name: str) -> None:
    """A view's picture for the README (docs/screenshots/NAME.png) and test-artifacts/demo_NAME.png."""
    _shot(page, f"demo_{name}")
    SCREENSHOTS.mkdir(exist_ok=True)
    shutil.copyfile(ARTIFACTS / f"demo_{name}.png", SCREENSHOTS / f"{name}.png")


def _tab(frame, name: str, ready: str) -> None:
    frame.click(f"[data-tab={name}]")
    frame.wait_for_selector(ready, timeout=120_000)


def test_every_tab_shows_the_demo_pair_when_the_page_opens(demo, page):
    port, _ = demo
    frame = _open_tab(page, port)
    # Nothing picked: the page opens on the pair.
    assert frame.eval_on_selector("#pick-baseline-run", "e => e.value") == "baseline"
    assert frame.eval_on_selector("#pick-experimental-run", "e => e.value") == "experimental"

    # ---- Overview and its explanation: the server's sentence, with the pipeline's part.
    _tab(frame, "overview", "[data-testid=explanation-pipeline]")
    explain = _get(port, "diff/explain", **PAIR)
    assert frame.inner_text("[data-testid=explanation-sentence]").strip() == explain["sentence"].strip()
    assert "slower" in explain["sentence"]  # the experimental's wider block and slower loading
    # record_demo profiles memory too: the memory rows have both sides' numbers.
    rows = {r["metric"]: r for r in _get(port, "diff/overview", **PAIR)["rows"]}
    for metric in ("memory.avg_bytes", "memory.peak_bytes"):
        assert rows[metric]["baseline"] and rows[metric]["experimental"], rows[metric]
        assert frame.locator(f"[data-view=overview] tr[data-metric='{metric}']").count() == 1
    frame.evaluate("() => window.scrollTo(0, 0)")
    _doc_shot(page, "overview")
    # The README quotes the sentence this picture shows (tests/support/readme_quote.py).
    readme_quote.write(explain["sentence"])

    # ---- Module diff: the traced steps, then down a step into the model's blocks, the widened one among them.
    _tab(frame, "modules", "[data-view=modules] table.pieces tbody tr")
    root = _get(port, "diff/modules", **PAIR, path="")
    assert frame.locator("table.pieces tbody tr").count() == len(root["children"]) == 5  # record_demo's active=5
    path = ""
    for depth, name in enumerate(("ProfilerStep#", "Classifier_0", "Sequential_0"), start=2):
        node = _get(port, "diff/modules", **PAIR, path=path)
        target = next(c for c in node["children"] if c["name"].startswith(name))
        frame.click(f"table.pieces tr[data-path='{target['path']}'] button:has-text('Zoom in')")
        frame.wait_for_selector(f"nav.crumbs li:nth-child({depth})", timeout=60_000)
        path = target["path"]
    model = _get(port, "diff/modules", **PAIR, path=path)
    names = [c["name"] for c in model["children"]]
    assert {"Block_0", "Block_1", "Block_2"} <= set(names), names
    widened = next(c for c in model["children"] if c["name"] == "Block_1")
    assert widened["delta_host_us"] == max(c["delta_host_us"] for c in model["children"]), model["children"]
    frame.wait_for_function(f"() => document.querySelectorAll('table.pieces tbody tr').length === {len(names)}",
                            timeout=60_000)
    _doc_shot(page, "modules")

    # ---- Timeline of the widened block, from its row: both runs' events of that one piece.
    frame.click(f"table.pieces tr[data-path='{widened['path']}'] button:has-text('Timeline')")
    frame.wait_for_selector("[data-view=timeline] canvas.tl-canvas[data-rects]", timeout=120_000)
    line = _get(port, "diff/timeline", **PAIR, path=widened["path"])
    assert line["matched"] > 0 and line["baseline_side"]["events_total"] > 0, line["matched"]
    assert f"{line['matched']:,} matched pairs" in frame.inner_text("[data-testid=timeline-summary]")
    _doc_shot(page, "timeline")

    # ---- Operators: the API's largest change first.
    _tab(frame, "operators", "[data-view=operators] table.vt tbody tr:not(.spacer)")
    ops = _get(port, "diff/operators", **PAIR, limit=5)
    first = frame.locator("[data-view=operators] table.vt tbody tr:not(.spacer) td.c-name").first.inner_text()
    assert first == ops["rows"][0]["name"]
    _doc_shot(page, "operators")

    # ---- Kernels: a CPU recording has none, and the tab says so (CUDA runs fill it).
    _tab(frame, "kernels", "[data-view=kernels]")
    kernels = _get(port, "diff/kernels", **PAIR)
    if not kernels["rows"]:
        assert frame.locator("[data-view=kernels] table.vt tbody tr:not(.spacer)").count() == 0
    _doc_shot(page, "kernels")

    # ---- Memory: the server's sentence over both runs' curves.
    _tab(frame, "memory", "[data-view=memory] [data-testid=memory-sentence]")
    memory = _get(port, "diff/memory", **PAIR)
    assert frame.inner_text("[data-testid=memory-sentence]").strip() == memory["sentence"].strip()
    _doc_shot(page, "memory")

    # ---- Pipeline: both verdicts, in the server's words; the experimental's data wait grew.
    _tab(frame, "pipeline", "[data-view=pipeline] [data-testid=pipeline-verdict]")
    pipe = _get(port, "diff/pipeline", **PAIR)
    for side in ("baseline", "experimental"):
        card = frame.locator(f"[data-testid=pipeline-verdict][data-side={side}]")
        assert card.get_attribute("data-verdict") == pipe[f"{side}_report"]["input_bound"]["verdict"]
    assert pipe["experimental_report"]["split"]["data_wait_s"] > pipe["baseline_report"]["split"]["data_wait_s"]
    frame.evaluate("() => window.scrollTo(0, 0)")
    _doc_shot(page, "pipeline")

    # ---- Diagnostic: each side's swept stages.
    _tab(frame, "diagnostic", "[data-view=diagnostic] .diag-stage")
    diag = _get(port, "diff/diagnostic", **PAIR)
    for side in ("baseline", "experimental"):
        for stage in diag[f"{side}_report"]["stages"]:
            assert frame.locator(f".diag-stage[data-stage='{stage['stage']}'][data-side={side}]").count() == 1
    _doc_shot(page, "diagnostic")
    assert not page.problems, page.problems
