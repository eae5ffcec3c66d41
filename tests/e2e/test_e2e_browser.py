"""End-to-end: real TensorBoard, real recorded traces, the built bundle, Debian chromium.

Starts `tensorboard --logdir` on a free port over a copy of the session's
recorded logdir (runs recorded with torch.profiler) plus one small
hand-written Chrome trace whose operator is named like an HTML injection,
opens the plugin's tab, and drives the UI the way a user would: picks the
runs, checks the overview deltas against the API, sorts, filters, zooms
into a module piece and back, and saves a screenshot of each view to
`test-artifacts/` at the repo root.
"""
from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest

from support.browser import (  # noqa: F401 - browser and page are fixtures; all re-exported to the other e2e files
    ARTIFACTS, BUNDLE, CHROMIUM, CHROMIUM_ARGS, REPO, _open_tab, _pick, _plugin_frame, _selection, _shot,
    _visible_names, browser, page,
)
from support.tb_cli import get, runs_ready, serve_tensorboard  # noqa: F401 - re-exported to the other e2e files

XSS_NAME = "<img src=x onerror=alert(1)>"
XSS_RUN = "xss"
UNREADABLE_RUN = "unreadable"
# Parsed traces the server keeps (TB_PIPELINE_MAX_LOADED_TRACES): fewer than
# the runs, so some are listed `unloaded` and the page must load them when
# picked, as with a large logdir.
MAX_LOADED = 3
PIPELINE_RUNS = ("pipe_fast", "pipe_slow")

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]


def _write_xss_run(logdir: Path) -> None:
    """A one-step Chrome trace whose operator name is an HTML injection attempt."""
    run = logdir / XSS_RUN
    run.mkdir()
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0, "dur": 1000.0},
        {"ph": "X", "cat": "cpu_op", "name": XSS_NAME, "pid": 1, "tid": 1, "ts": 10.0, "dur": 500.0,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 600.0, "dur": 300.0,
         "args": {"External id": 2}},
    ]
    trace = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events}
    (run / "xssworker.1.pt.trace.json").write_text(json.dumps(trace))


_get = get  # the plugin's JSON routes


@pytest.fixture(scope="module")
def tensorboard(recorded_logdir, tmp_path_factory):
    """`tensorboard --logdir` (the real CLI) on a free port; yields (port, logdir)."""
    logdir = tmp_path_factory.mktemp("e2e_logdir")
    # The session logdir is shared and read-only: copy it, then add our run.
    shutil.copytree(recorded_logdir, logdir, dirs_exist_ok=True)
    _write_xss_run(logdir)
    # Trace + pipeline statistics in one run; the loading stage 30x slower in the second (recorded once,
    # support/pipeline_runs.py).
    from support.pipeline_runs import recorded_runs

    for run, recorded in zip(PIPELINE_RUNS, ("fast", "slow")):
        shutil.copytree(recorded_runs.path() / recorded, logdir / run)
    env = {"TB_PIPELINE_MAX_LOADED_TRACES": str(MAX_LOADED)}
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("baseline", "experimental", XSS_RUN), env=env) as port:
        yield port, logdir


def test_compare_runs_in_tensorboard(tensorboard, page):
    port, _ = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "baseline", "experimental")
    sel = _selection(frame)

    # ---- Overview: every numeric delta on screen is the API's.
    frame.click("[data-tab=overview]")
    frame.wait_for_selector("[data-view=overview] tr[data-metric=avg_step_time_us]", timeout=60_000)
    api = _get(port, "diff/overview", **sel)
    checked = 0
    for row in api["rows"]:
        tr = frame.locator(f"[data-view=overview] tr[data-metric='{row['metric']}']")
        assert tr.count() == 1, f"overview lacks a row for {row['metric']}"
        raw = tr.locator("td[data-col=delta]").get_attribute("data-raw")
        if row["delta"] is None:
            assert raw == ""
        else:
            assert math.isclose(float(raw), row["delta"], rel_tol=1e-9, abs_tol=1e-9), row
            checked += 1
    assert checked >= 5
    avg = next(r for r in api["rows"] if r["metric"] == "avg_step_time_us")
    shown = frame.inner_text("tr[data-metric=avg_step_time_us] td[data-col=delta]")
    sign = "+" if avg["delta"] > 0 else "−" if avg["delta"] < 0 else ""
    assert shown.startswith(sign) and "ms" in shown, shown
    assert frame.locator("[data-chart=breakdown-baseline] canvas").count() >= 1
    # Setup facts (step count, ...) carry no good/bad colour and no arrow.
    steps_delta = frame.locator("tr[data-metric=steps] td[data-col=delta] .delta")
    assert "worse" not in steps_delta.get_attribute("class") and "better" not in steps_delta.get_attribute("class")
    assert "▲" not in steps_delta.inner_text() and "▼" not in steps_delta.inner_text()
    # The comparison table stays inside its card at 1280 px.
    table_right, card_right = frame.eval_on_selector(
        "[data-view=overview] table.kv",
        "t => [t.getBoundingClientRect().right, t.closest('.card').getBoundingClientRect().right]",
    )
    assert table_right <= card_right, (table_right, card_right)
    # Same device on both sides: no mismatch warning.
    if next(r for r in api["rows"] if r["metric"] == "device")["baseline"] == next(r for r in api["rows"] if r["metric"] == "device")["experimental"]:
        assert frame.locator("[data-testid=device-mismatch]").count() == 0
    if api.get("note"):
        assert api["note"].replace("`", "") in frame.inner_text("[data-testid=overview-note]").replace("`", "")
    _shot(page, "overview")

    # ---- Operators: default order = largest absolute delta of the primary duration.
    frame.click("[data-tab=operators]")
    frame.wait_for_selector("table.vt tbody tr:not(.spacer)", timeout=60_000)
    ops = _get(port, "diff/operators", **sel, limit=10000)
    primary = ops["primary"]
    by_name = {r["name"]: r for r in ops["rows"]}
    biggest = max(abs(r[f"delta_{primary}"]) for r in ops["rows"])
    first = _visible_names(frame)[0]
    assert math.isclose(abs(by_name[first][f"delta_{primary}"]), biggest), (first, biggest)
    sorted_th = frame.locator(f"table.vt th[data-key='delta_{primary}']")
    assert sorted_th.get_attribute("aria-sort") == "descending"
    assert frame.inner_text("[data-testid=row-count]").startswith(f"{len(ops['rows']):,}")
    _shot(page, "operators")

    # Sort by name (a click), then by baseline calls (keyboard: focus + Enter).
    frame.click("table.vt th[data-key=name]")
    assert frame.get_attribute("table.vt th[data-key=name]", "aria-sort") == "ascending"
    assert sorted_th.get_attribute("aria-sort") == "none"
    names = _visible_names(frame)
    assert names == sorted(names, key=str.lower) and names[0].lower() == min(by_name, key=str.lower).lower()
    frame.focus("table.vt th[data-key=baseline_calls]")
    page.keyboard.press("Enter")
    assert frame.get_attribute("table.vt th[data-key=baseline_calls]", "aria-sort") == "descending"
    first = _visible_names(frame)[0]
    assert by_name[first]["baseline_calls"] == max(r["baseline_calls"] for r in ops["rows"])
    page.keyboard.press(" ")
    assert frame.get_attribute("table.vt th[data-key=baseline_calls]", "aria-sort") == "ascending"

    # Filter: case-insensitive substring; the count matches the server's filter.
    frame.fill("input[type=search]", "LINEAR")
    frame.wait_for_function("() => document.querySelector('[data-testid=row-count]').textContent.includes(' of ')")
    filtered = _get(port, "diff/operators", **sel, filter="linear", limit=10000)
    assert filtered["total"] > 0
    assert all("linear" in n.lower() for n in _visible_names(frame))
    assert frame.inner_text("[data-testid=row-count]").startswith(f"{filtered['total']:,} of")
    _shot(page, "operators_filtered")

    # Export: the table as shown (filtered, sorted) as a CSV download.
    with page.expect_download(timeout=30_000) as dl:
        frame.click("button:has-text('Export CSV')")
    with open(dl.value.path(), newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    assert table[0][0] == "Name"
    assert len(table) == filtered["total"] + 1
    shown_names = _visible_names(frame)
    assert [r[0] for r in table[1 : 1 + len(shown_names)]] == shown_names

    # ---- Module diff: zoom into a piece and come back.
    frame.click("[data-tab=modules]")
    frame.wait_for_selector("[data-view=modules] table.pieces tbody tr", timeout=60_000)
    root = _get(port, "diff/modules", **sel, path="")
    assert frame.locator("table.pieces tbody tr").count() == len(root["children"])
    assert frame.locator("[data-chart=execution-comparison] canvas").count() >= 1
    assert frame.locator("[data-chart=execution-difference] canvas").count() >= 1
    # Steps are numbered by their ProfilerStep number, as in the Overview.
    steps_shown = frame.eval_on_selector_all("table.pieces tbody td[data-col=step]", "tds => tds.map(td => td.textContent)")
    assert steps_shown == [c["name"].split("#")[-1] for c in root["children"]], steps_shown
    # A CPU-only pair has no device time: the toggle says so instead of drawing empty charts.
    assert frame.locator("button[data-time=device]").is_disabled() == (not root["device_present"])
    # The accumulated Δ column is the server's trend, as sent.
    acc_shown = frame.eval_on_selector_all("table.pieces tbody tr td:nth-child(8)", "tds => tds.map(td => td.textContent)")
    acc_ms = [float(t.rstrip("▲▼").replace("−", "-").replace(",", "")) for t in acc_shown]
    assert acc_ms == pytest.approx([v / 1000 for v in root["trend"]["delta_host_us"]], abs=6e-4), acc_shown
    assert "host time" in frame.inner_text("#md-pieces").lower()
    _shot(page, "modules")
    target = next(c for c in root["children"] if c.get("has_children"))
    frame.click(f"table.pieces tr[data-path='{target['path']}'] button:has-text('Zoom in')")
    frame.wait_for_selector("nav.crumbs li:nth-child(2)", timeout=60_000)
    zoomed = _get(port, "diff/modules", **sel, path=target["path"])
    frame.wait_for_function(
        "n => document.querySelectorAll('table.pieces tbody tr').length === n", arg=len(zoomed["children"]), timeout=30_000
    )
    # Keyboard focus lands on the new level's name, not on <body>.
    frame.wait_for_function("() => document.activeElement && document.activeElement.getAttribute('aria-current') === 'page'", timeout=10_000)
    # Device presence comes with every level's answer (no second request for the root).
    assert frame.locator("button[data-time=device]").is_disabled() == (not zoomed["device_present"])
    statuses = frame.eval_on_selector_all("table.pieces tbody tr", "trs => trs.map(t => t.dataset.status)")
    assert statuses == [c["status"] for c in zoomed["children"]]
    for c in zoomed["children"]:
        if c["status"] != "matched":
            badge = frame.locator(f"table.pieces tr[data-path='{c['path']}'] .badge")
            assert badge.count() == 1, f"one-sided piece {c['name']} is not marked"
    _check_passes(frame, zoomed)
    # The operator table below follows the selected piece.
    frame.wait_for_selector("#md-ops", timeout=30_000)
    assert target["name"] in frame.inner_text("#md-ops")
    in_piece = _get(port, "diff/operators", **sel, path=target["path"], limit=10000)
    frame.wait_for_function(
        "t => (document.querySelector('[data-view=modules] [data-testid=row-count]')?.textContent || '').startsWith(t)",
        arg=f"{in_piece['total']:,} ", timeout=30_000,
    )
    _shot(page, "modules_zoomed")
    frame.click("nav.crumbs button:has-text('All steps')")
    frame.wait_for_function("() => document.querySelectorAll('nav.crumbs li').length === 1", timeout=30_000)
    assert frame.locator("table.pieces tbody tr").count() == len(root["children"])

    # ---- Kernels: a CPU-only trace has none, and the page says so in words.
    frame.click("[data-tab=kernels]")
    frame.wait_for_selector("[data-view=kernels]", timeout=60_000)
    kernels = _get(port, "diff/kernels", **sel, limit=10000)
    if not kernels["rows"]:
        assert "No kernels" in frame.inner_text("[data-view=kernels]")
    _shot(page, "kernels")

    # ---- The selection survives a reload (kept in the URL).
    frame.click("[data-tab=operators]")
    frame.wait_for_selector("[data-tab=operators][aria-selected=true]")
    frame.wait_for_selector("table.vt tbody tr:not(.spacer)", timeout=60_000)
    page.reload(wait_until="load")
    frame = _plugin_frame(page)
    try:
        frame.wait_for_selector("table.vt tbody tr:not(.spacer)", timeout=60_000)
    finally:
        _shot(page, "after_reload")
    assert _selection(frame)["experimental"] == "experimental"
    assert frame.get_attribute("[data-tab=operators]", "aria-selected") == "true"

    # ---- TensorBoard's reload button makes the plugin refetch its runs.
    with page.expect_request(lambda r: r.url.endswith("/data/plugin/tb_pipeline/runs"), timeout=30_000):
        page.click("button.reload-button")

    assert page.problems == []


def _ms(text: str) -> float:
    return float(text.strip().rstrip("▲▼").replace("−", "-").replace(",", ""))


def _cell_ms(frame, path: str, col: str) -> float | None:
    cell = frame.locator(f"table.pieces tr[data-path='{path}'] td[data-col={col}]")
    delta = cell.locator(".delta")
    return _ms(delta.inner_text()) if delta.count() else None


def _cell_verdict(frame, path: str, col: str) -> str | None:
    mark = frame.locator(f"table.pieces tr[data-path='{path}'] td[data-col={col}] .sigmark")
    return mark.get_attribute("data-verdict") if mark.count() else None


def _check_passes(frame, level: dict) -> None:
    """A step's pieces with backward moved to the modules (the default where
    modules have backward): each module's forward, backward and total deltas
    and their marks are the route's; the backward piece is the unattributed
    rest; "Forward only" shows the host deltas."""
    modules = [c for c in level["children"] if c["kind"] == "module"]
    assert any((c["baseline_backward_us"] or 0) > 0 for c in modules), "no backward attributed in this step"
    frame.wait_for_selector("table.pieces[data-split=passes]", timeout=30_000)
    assert frame.get_attribute("button[data-pass=both]", "aria-pressed") == "true"
    for c in level["children"]:
        if c["kind"] == "module":
            expected = {"fwd-d": (c["delta_host_us"], c["forward_significance"]),
                        "bwd-d": (c["delta_backward_us"], c["backward_significance"]),
                        "d": (c["delta_with_backward_us"], c["significance"])}
            for col, (us, sig) in expected.items():
                assert _cell_ms(frame, c["path"], col) == pytest.approx(us / 1000, abs=6e-4), (c["name"], col)
                assert _cell_verdict(frame, c["path"], col) == sig["verdict"], (c["name"], col)
        elif c["kind"] == "backward":
            name = frame.inner_text(f"table.pieces tr[data-path='{c['path']}'] td.name")
            assert "backward (unattributed)" in name
            assert _cell_ms(frame, c["path"], "bwd-d") == pytest.approx(c["delta_with_backward_us"] / 1000, abs=6e-4)
            assert _cell_ms(frame, c["path"], "d") == pytest.approx(c["delta_with_backward_us"] / 1000, abs=6e-4)
        else:
            assert _cell_ms(frame, c["path"], "d") == pytest.approx(c["delta_with_backward_us"] / 1000, abs=6e-4)
            assert _cell_verdict(frame, c["path"], "d") is None
    _shot(frame.page, "modules_forward_backward")
    frame.click("button[data-pass=forward]")
    frame.wait_for_selector("table.pieces[data-split=none]", timeout=30_000)
    for c in level["children"]:
        assert _cell_ms(frame, c["path"], "d") == pytest.approx(c["delta_host_us"] / 1000, abs=6e-4), c["name"]
    bwd = next(c for c in level["children"] if c["kind"] == "backward")
    assert "unattributed" not in frame.inner_text(f"table.pieces tr[data-path='{bwd['path']}'] td.name")
    frame.click("button[data-pass=both]")
    frame.wait_for_selector("table.pieces[data-split=passes]", timeout=30_000)


def test_trace_names_are_text_not_html(tensorboard, page):
    port, _ = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "baseline", XSS_RUN)
    frame.click("[data-tab=operators]")
    frame.wait_for_selector("table.vt tbody tr:not(.spacer)", timeout=60_000)
    frame.fill("input[type=search]", "onerror")
    frame.wait_for_function(
        "name => [...document.querySelectorAll('table.vt td.c-name')].some(td => td.textContent === name)", arg=XSS_NAME,
        timeout=30_000,
    )
    assert frame.locator("table.vt img").count() == 0
    assert frame.locator("img[src=x]").count() == 0
    _shot(page, "xss_name_as_text")
    assert page.problems == []


def test_failed_run_is_explained(tensorboard, page):
    """A run that can never be parsed shows the server's reason instead of a
    spinner. The server keeps only 3 parsed traces here, so `runs` does not
    prefetch this run (`unloaded`): picking it must make the page load it."""
    port, logdir = tensorboard
    broken = logdir / UNREADABLE_RUN
    broken.mkdir(exist_ok=True)
    # Not JSON at all: no decoder can salvage anything from it.
    (broken / "w.1.pt.trace.json").write_bytes(b"hello")
    frame = _open_tab(page, port)
    entry = next(r for r in _get(port, "runs")["runs"] if r["name"] == UNREADABLE_RUN)
    assert entry["status"] in ("unloaded", "failed"), entry  # not prefetched (or already asked for)
    frame.select_option("#pick-experimental-run", UNREADABLE_RUN)
    msg = frame.locator(".msg.error", has_text=UNREADABLE_RUN)
    msg.wait_for(timeout=60_000)
    entry = next(r for r in _get(port, "runs")["runs"] if r["name"] == UNREADABLE_RUN)
    assert entry["status"] == "failed" and entry["error"], entry
    assert "not a trace" in entry["error"]
    assert entry["error"] in msg.inner_text()
    assert frame.locator("[data-view]").count() == 0  # no view spinning for the failed run
    _shot(page, "failed_run")
    assert page.problems == []


def test_explanation_carries_the_pipeline_statistics(tensorboard, page):
    """Both runs have recorded pipeline statistics: the Overview's explanation
    shows the route's sentence (with its pipeline clause) and the pipeline
    block with the data-wait mark the route judged; a pair without
    statistics shows no such block."""
    port, _ = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, *PIPELINE_RUNS)
    sel = _selection(frame)
    frame.click("[data-tab=overview]")
    frame.wait_for_selector("[data-testid=explanation-pipeline]", timeout=120_000)
    api = _get(port, "diff/explain", **sel)
    part = api["pipeline"]
    assert part is not None and part["clause"] in api["sentence"]
    assert frame.inner_text("[data-testid=explanation-sentence]").strip() == api["sentence"]
    assert f"±{api['between_run_pct']:g} %" in frame.inner_text("[data-testid=explanation-noise]")
    row = frame.locator("[data-testid=explanation-pipeline] tr[data-row=data-wait]")
    assert row.locator(".sigmark").get_attribute("data-verdict") == part["data_wait"]["significance"]["verdict"]
    shown = row.locator(".delta").inner_text()
    assert _ms(shown) == pytest.approx(part["data_wait"]["delta_us"] / 1000, abs=6e-4), shown
    if part["input_bound"]["changed"]:
        assert frame.locator("[data-testid=explanation-pipeline] tr[data-row=input-bound] .badge.changed").count() == 1
    if part["stage"] is not None:
        assert part["stage"]["stage"] in frame.inner_text("[data-testid=explanation-pipeline] tr[data-row=stage]")
    _shot(page, "explanation_pipeline")

    _pick(frame, "baseline", "experimental")
    frame.wait_for_function(
        "() => !document.querySelector('[data-testid=explanation-pipeline]')"
        " && !!document.querySelector('[data-testid=explanation-sentence]')", timeout=120_000)
    other = _get(port, "diff/explain", **_selection(frame))
    assert other["pipeline"] is None
    assert frame.inner_text("[data-testid=explanation-sentence]").strip() == other["sentence"]
    assert page.problems == []
