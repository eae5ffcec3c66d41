"""End-to-end: the Timeline view, in real TensorBoard and Debian chromium.

From the module diff's "Timeline" button on a step, the view draws both
runs' step on a canvas; hovering an event shows both runs' numbers (those of
the `diff/timeline` answer), the wheel zooms, a click selects an operator
and its "show in the operators table" button opens that table filtered to
it; an operator row's "Timeline" opens the view on its first occurrence;
the export downloads one Chrome trace with both runs as two processes.
Every request the page makes stays on TensorBoard's own origin.
Screenshots: test-artifacts/timeline_diff*.png.
"""
from __future__ import annotations

import json
import re
from urllib.parse import urlencode
import shutil
from pathlib import Path

import pytest

from support.tb_cli import runs_ready, serve_tensorboard
from test_e2e_browser import ARTIFACTS, BUNDLE, CHROMIUM, _get, _open_tab, _pick, _selection, browser  # noqa: F401

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]

AXIS_H, SIDE_HEAD, ROW_H, GUTTER = 24, 20, 16, 190  # components/timelineDraw.ts, model/timelineLayout.ts


@pytest.fixture(scope="module")
def tensorboard(recorded_logdir, tmp_path_factory):
    logdir = tmp_path_factory.mktemp("tl_logdir")
    for run in ("baseline", "experimental"):
        shutil.copytree(recorded_logdir / run, logdir / run)
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("baseline", "experimental")) as port:
        yield port


@pytest.fixture
def page(browser, tensorboard):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    pg = ctx.new_page()
    pg.problems = []
    pg.requests = []
    pg.on("pageerror", lambda e: pg.problems.append(f"pageerror: {e}"))
    pg.on("request", lambda r: pg.requests.append(r.url))
    yield pg
    ctx.close()


def _canvas_state(frame) -> dict:
    return frame.eval_on_selector("canvas.tl-canvas", """c => ({
        rects: Number(c.dataset.rects || 0), visited: Number(c.dataset.visited || 0),
        t0: Number(c.dataset.t0), t1: Number(c.dataset.t1), drawMs: Number(c.dataset.drawMs),
        box: (() => { const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })() })""")


def _frame_offset(page) -> tuple[float, float]:
    box = page.locator("iframe").first.bounding_box()
    return box["x"], box["y"]


def _read_tip(frame):
    # Read without waiting: a tip that is not there now is not one to wait for.
    return frame.evaluate("() => { const t = document.querySelector('[data-testid=timeline-tip]');"
                          " return t ? [t.querySelector('strong').innerText, t.innerText] : null; }")


def _aimed_points(st: dict, answer: dict | None, kind: str | None):
    """Points (canvas x, row y) at the middle of the baseline's first-lane events of `kind` in the
    answer, the widest on screen first: where a user would point. Each pointer step costs two round trips to
    the browser, so sweeping a row pixel by pixel took ~20 s a hover; these usually take one."""
    if answer is None:
        return []
    side, kinds = answer["baseline_side"], answer.get("kinds", [])
    ev = side["events"]
    left, _, width, _ = st["box"]
    span = st["t1"] - st["t0"]
    if span <= 0:
        return []
    px_per_us = (width - GUTTER) / span
    points = []
    for i in range(len(ev["ts_us"])):
        if ev["lane"][i] != 0 or ev["depth"][i] < 1 or (kind is not None and kinds[ev["kind"][i]] != kind):
            continue
        a, b = max(ev["ts_us"][i], st["t0"]), min(ev["ts_us"][i] + ev["dur_us"][i], st["t1"])
        if (b - a) * px_per_us >= 4:
            x = left + GUTTER + ((a + b) / 2 - st["t0"]) * px_per_us
            points.append(((b - a) * px_per_us, x, AXIS_H + SIDE_HEAD + ev["depth"][i] * ROW_H + ROW_H / 2))
    return [(x, y) for _, x, y in sorted(points, reverse=True)[:20]]


def _hover_until_tip(page, frame, kind: str | None = None, answer: dict | None = None) -> tuple[float, float, str, str]:
    """Points at the baseline's events of `kind` (from `answer`, the view's
    own route answer), else sweeps the pointer along the baseline's rows
    (under the step's own row), until the tooltip shows an event of `kind`;
    returns the page point and the event's name and the tip's text."""
    st = _canvas_state(frame)
    ox, oy = _frame_offset(page)
    left, top, width, _ = st["box"]
    sweep = ((x, AXIS_H + SIDE_HEAD + depth * ROW_H + ROW_H / 2)
             for depth in range(1, 25) for x in range(int(left + GUTTER + 2), int(left + width - 2), 4))
    for x, y in (*_aimed_points(st, answer, kind), *sweep):
        page.mouse.move(ox + x, oy + top + y)
        tip = _read_tip(frame)
        if tip and (kind is None or f"{kind}," in tip[1]):
            return ox + x, oy + top + y, tip[0], tip[1]
    raise AssertionError(f"no {kind or 'event'} under the pointer in the baseline's first rows")


def _ms(text: str, label: str) -> float:
    m = re.search(rf"{label}\s*([\d.,]+)\s*(ms|µs)", text)
    assert m, (label, text)
    value = float(m.group(1).replace(",", ""))
    return value * 1000 if m.group(2) == "ms" else value


def test_timeline_view_draws_hovers_zooms_and_leads_to_the_operator(tensorboard, page):
    port = tensorboard
    frame = _open_tab(page, port)
    _pick(frame, "baseline", "experimental")
    sel = _selection(frame)

    # From the module diff: the first step's "Timeline".
    frame.click("[data-tab=modules]")
    frame.wait_for_selector("tr[data-path='0']", timeout=60_000)
    frame.click("tr[data-path='0'] button:has-text('Timeline')")
    frame.wait_for_selector("[data-view=timeline] canvas.tl-canvas[data-rects]", timeout=60_000)
    assert "view=timeline" in frame.evaluate("location.hash") and "path=0" in frame.evaluate("location.hash")
    st = _canvas_state(frame)
    assert st["rects"] > 20 and st["visited"] >= st["rects"]
    api = _get(port, "diff/timeline", **sel, path="0", width_px=str(int(round((st["box"][2] - GUTTER) / 100) * 100)))
    summary = frame.inner_text("[data-testid=timeline-summary]")
    assert f"{len(api['baseline_side']['events']['ts_us']):,} events drawn of {api['baseline_side']['events_total']:,}" in summary
    assert f"{api['matched']:,} matched pairs" in summary
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "timeline_diff.png"))

    # Hover an operator of the baseline (the step's children are one row below the step).
    x, y, name, tip = _hover_until_tip(page, frame, "operator", api)
    side = api["baseline_side"]
    names = side["names"]
    ev = side["events"]
    candidates = [i for i in range(len(ev["ts_us"])) if names[ev["name"][i]] == name]
    assert candidates, name
    shown_b = _ms(tip, "Baseline")
    assert any(abs(ev["dur_us"][i] - shown_b) <= max(0.01 * ev["dur_us"][i], 0.6) for i in candidates), (tip, name)
    matched = [i for i in candidates if ev["match"][i] is not None]
    if "not matched" not in tip:
        shown_e = _ms(tip, "Experimental")
        assert any(abs(ev["dur_us"][i] + ev["delta_us"][i] - shown_e) <= max(0.01 * shown_e, 0.6) for i in matched), tip
    page.screenshot(path=str(ARTIFACTS / "timeline_diff_tooltip.png"))

    # Wheel zoom at the pointer narrows the visible range.
    before = _canvas_state(frame)
    page.mouse.wheel(0, -600)
    frame.wait_for_function("([t0, t1]) => { const c = document.querySelector('canvas.tl-canvas');"
                            " return Number(c.dataset.t1) - Number(c.dataset.t0) < (t1 - t0) * 0.8; }",
                            arg=[before["t0"], before["t1"]], timeout=10_000)
    after = _canvas_state(frame)
    assert after["t1"] - after["t0"] < before["t1"] - before["t0"]
    assert after["t0"] >= before["t0"] - 1e-6
    # Zoomed in, the view asks for the visible window in detail once the wheel settles: wait for it.
    page.wait_for_timeout(400)
    frame.wait_for_function("() => document.querySelector('[data-view=timeline]').dataset.detail !== 'loading'",
                            timeout=60_000)

    # Click an operator: selected, its match outlined, and its row one click away.
    x, y, name, tip = _hover_until_tip(page, frame, "operator", api)
    page.mouse.click(x, y)
    frame.wait_for_selector("[data-testid=timeline-selection]", timeout=10_000)
    assert name in frame.inner_text("[data-testid=timeline-selection]")
    page.screenshot(path=str(ARTIFACTS / "timeline_diff_selected.png"))
    frame.click("[data-testid=to-table]")
    frame.wait_for_selector("[data-view=operators] table.vt tbody tr:not(.spacer)", timeout=60_000)
    assert frame.input_value("input[type=search]") == name
    shown = frame.eval_on_selector_all("table.vt tbody tr:not(.spacer) td.c-name", "tds => tds.map(td => td.textContent)")
    assert name in shown

    # And back: the row's "Timeline" opens the first step on its first occurrence, selected.
    frame.click(f"table.vt tbody tr:not(.spacer) button[data-timeline-of='{name}']")
    frame.wait_for_selector("[data-testid=timeline-selection]", timeout=60_000)
    assert name in frame.inner_text("[data-testid=timeline-selection] h3")
    assert urlencode({"find": name}) in frame.evaluate("location.hash")  # as URLSearchParams writes it

    # Export: one Chrome trace, the two pieces as two processes, every event of the full-detail answer.
    with page.expect_download(timeout=60_000) as dl:
        frame.click("[data-testid=export-trace]")
    doc = json.loads(Path(dl.value.path()).read_text())
    full = _get(port, "diff/timeline", **sel, path="0", width_px="0")
    procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert sorted(procs) == [1, 2] and procs[1].startswith("baseline: baseline") and procs[2].startswith("experimental: experimental")
    for pid, which in ((1, "baseline_side"), (2, "experimental_side")):
        xs = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]
        assert len(xs) == len(full[which]["events"]["ts_us"]) and full[which]["merged_count"] == 0
    matched_b = {e["args"]["match"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 1 and "match" in e["args"]}
    matched_e = {e["args"]["match"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 2 and "match" in e["args"]}
    assert matched_b and matched_b == matched_e

    # A module piece: reached from its row in the module diff, its axis spans the piece (not its step).
    # (The module diff opens at the level the timeline showed: the first step's pieces.)
    frame.click("[data-tab=modules]")
    frame.wait_for_selector("tr[data-kind=module][data-status=matched]", timeout=60_000)
    module_path = frame.get_attribute("tr[data-kind=module][data-status=matched]", "data-path")
    frame.click(f"tr[data-path='{module_path}'] button:has-text('Timeline')")
    frame.wait_for_function("p => location.hash.includes('path=' + p) && document.querySelector('canvas.tl-canvas[data-rects]')",
                            arg=module_path, timeout=60_000)
    piece = _get(port, "diff/timeline", **sel, path=module_path)
    assert piece["kind"] == "module" and piece["matched"] > 0
    longest = max(s["events_end_us"] - s["start_us"] for s in (piece["baseline_side"], piece["experimental_side"]))
    st = _canvas_state(frame)
    assert st["t0"] == 0 and st["t1"] <= longest * 1.02 + 1e-6, (st, longest)
    page.screenshot(path=str(ARTIFACTS / "timeline_diff_module.png"))

    # Nothing left TensorBoard's origin.
    origin = f"http://127.0.0.1:{port}/"
    outside = [u for u in page.requests if not (u.startswith(origin) or u.startswith("data:") or u.startswith("blob:"))]
    assert outside == []
    assert page.problems == []
