"""The demo pair's reports (samples/record_demo.py: the pair `make demo`
shows): every format written by `tb-pipeline diff`, its numbers equal to
the routes' answers for the same pair (the real TensorBoard app), and the
HTML file opened in Debian's chromium with nothing fetched from anywhere.

Leaves test-artifacts/report_demo.{md,html,json,xml,txt,png} and
docs/screenshots/report.png (the README's picture)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from conftest import build_tb_app
from support.recorded import demo_pair
from support.group_runs import get_ready
from support.report_parsing import html_tables, junit_cases, markdown_tables
from test_e2e_browser import ARTIFACTS, CHROMIUM, browser, page  # noqa: F401 - browser and page are fixtures
from tb_pipeline_plugin import cli
from tb_pipeline_plugin.diff.delta import pct_name
from tb_pipeline_plugin.report.json_format import decode
from tb_pipeline_plugin.report.text import _cell
from tb_pipeline_plugin.report.words import headline, share, signed, signed_pct, value

REPO = Path(__file__).resolve().parents[2]
PAIR = dict(baseline="baseline", experimental="experimental")
TOP = 10
SUFFIX = {"text": "txt", "markdown": "md", "html": "html", "json": "json", "junit": "xml"}
# The HTML a reviewer downloads from a CI artifact: the budget for the demo pair.
HTML_BUDGET_BYTES = 300_000


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo logdir and every format of its report, written with --output."""
    logdir = demo_pair.copy_to(tmp_path_factory.mktemp("demo_runs"))  # recorded once (conftest.py)
    ARTIFACTS.mkdir(exist_ok=True)
    files, codes = {}, set()
    for fmt, suffix in SUFFIX.items():
        files[fmt] = ARTIFACTS / f"report_demo.{suffix}"
        codes.add(cli.main(["diff", str(logdir / "baseline"), str(logdir / "experimental"), "--top", str(TOP),
                            "--fail-if", "avg_step_time_us>5", "--fail-if", "memory.peak_bytes>1000",
                            "--format", fmt, "--output", str(files[fmt])]))
    return logdir, files, codes


@pytest.fixture(scope="module")
def routes(demo):
    """What TensorBoard answers for the same pair."""
    from werkzeug.test import Client

    app, plugin = build_tb_app(demo[0])
    client = Client(app)
    try:
        yield {
            "explain": get_ready(client, "diff/explain", **PAIR),
            "overview": get_ready(client, "diff/overview", **PAIR),
            "operators": get_ready(client, "diff/operators", **PAIR, limit=TOP),
            "kernels": get_ready(client, "diff/kernels", **PAIR, limit=TOP),
            "memory": get_ready(client, "diff/memory", **PAIR),
            "baseline": get_ready(client, "overview", run="baseline"),
            "experimental": get_ready(client, "overview", run="experimental"),
        }
    finally:
        plugin.close()


def test_numbers_in_every_format_are_the_routes(demo, routes):
    _, files, codes = demo
    assert codes == {cli.EXIT_REGRESSION}  # the demo's step is far more than 5 % slower: the same in every format
    ex, ov, ops, mem = routes["explain"], routes["overview"], routes["operators"], routes["memory"]
    text = {fmt: path.read_text(encoding="utf-8") for fmt, path in files.items()}

    # ---- JSON: the routes' values themselves.
    report = decode(text["json"].encode())
    j = msgspec.to_builtins(report)
    assert j["sentence"] == ex["sentence"] and "slower" in ex["sentence"]
    assert {k: v for k, v in j["step"].items() if k != "direction"} == {k: v for k, v in ex["step"].items()
                                                                          if k not in ("profiled", "units")}
    assert j["step"]["source"] == "recorded"  # both runs have pipeline statistics: every recorded step judges
    assert j["clock"] == ex["clock"] == "host"
    assert j["noise"] == {**ex["noise"], "between_run_pct": ex["between_run_pct"]}
    contributor_fields = ("kind", "key", "name", "status", "baseline_us", "experimental_us", "delta_us", "share_pct",
                          "significance")
    assert [{k: v for k, v in c.items() if k != "delta_pct"} for c in j["contributors"]] == [
        {k: c[k] for k in contributor_fields} for c in ex["contributors"][:TOP]]
    assert [c["delta_pct"] for c in j["contributors"]] == [
        None if not c["baseline_us"] else round(100 * c["delta_us"] / c["baseline_us"], 2)
        for c in ex["contributors"][:TOP]]
    assert j["waterfall"] == [{k: b[k] for k in ("label", "kind", "start_us", "end_us", "verdict", "verdict_label")}
                              for b in ex["waterfall"]]
    assert j["overview"] == [{"name": r["metric"], "label": r["label"], "unit": r["unit"], "baseline": r["baseline"],
                              "experimental": r["experimental"], "delta": r["delta"], "delta_pct": r["delta_pct"],
                              "significance": r["significance"]} for r in ov["rows"]]
    wait = ex["pipeline"]["data_wait"]
    assert j["pipeline"]["clause"] == ex["pipeline"]["clause"]
    assert j["pipeline"]["rows"][0] == {"name": "data_wait_us", "label": "Data wait per step", "unit": "us",
                                        "baseline": wait["baseline_us"], "experimental": wait["experimental_us"],
                                        "delta": wait["delta_us"], "delta_pct": wait["delta_pct"],
                                        "significance": wait["significance"]}
    p = ops["primary"]
    operators = [(r["name"], r["baseline_calls"], r["experimental_calls"], r[f"baseline_{p}"], r[f"experimental_{p}"],
                  r[f"delta_{p}"], r[pct_name(p)], r["significance"]) for r in ops["rows"]]
    assert j["operators"]["measure"] == p and j["operators"]["total"] == ops["total"]
    assert [tuple(r[k] for k in ("name", "baseline_calls", "experimental_calls", "baseline_us", "experimental_us",
                                 "delta_us", "delta_pct", "significance")) for r in j["operators"]["rows"]] == operators
    assert j["kernels"]["total"] == routes["kernels"]["total"] == 0  # CPU runs
    device = next(d for d in mem["devices"] if d["device"] == mem["device"])
    memory = [(r["baseline_bytes"], r["experimental_bytes"], r["delta_bytes"], r["delta_pct"])
              for r in device["by_module"][:TOP]]
    assert (j["memory"]["sentence"], j["memory"]["growth_bytes"], j["memory"]["growth_pct"]) == (
        mem["sentence"], device["growth_bytes"], device["growth_pct"])
    assert (j["memory"]["baseline_peak_bytes"], j["memory"]["experimental_peak_bytes"]) == (
        device["baseline"]["peak_bytes"], device["experimental"]["peak_bytes"])
    assert [(r["baseline"], r["experimental"], r["delta"], r["delta_pct"]) for r in j["memory"]["rows"]] == memory
    for side in ("baseline", "experimental"):
        assert j["step_times"][f"{side}_us"] == [s["duration_us"] for s in routes[side]["steps"]]
    rows = {r["metric"]: r for r in ov["rows"]}
    for g in j["gates"]:
        assert {k: g[k] for k in ("baseline", "experimental", "delta", "delta_pct", "significance")} == {
            k: rows[g["name"]][k] for k in ("baseline", "experimental", "delta", "delta_pct", "significance")}

    # The advice's samples are the verdict's own (every recorded step here): judged again, the same verdict.
    from tb_pipeline_plugin.compare import compare
    from tb_pipeline_plugin.diff.significance import method as S

    (b, b_rec), (e, e_rec) = compare(demo[0] / "baseline", demo[0] / "experimental").step_samples_us
    assert S.step_time(b, e, (b_rec, e_rec), noise=S.NoisePolicy()) == ex["step"]["significance"]

    # ---- JUnit: each gate's numbers as properties, exactly.
    _, (verdict, *cases) = junit_cases(text["junit"])
    for k in ("baseline", "experimental", "delta", "delta_pct"):
        assert float(verdict["properties"][k]) == j["step"][f"{k}_us" if k != "delta_pct" else k]
    for case, g in zip(cases, j["gates"], strict=True):
        for k in ("baseline", "experimental", "delta", "delta_pct"):
            assert float(case["properties"][k]) == g[k]
    assert [c["failure"] is not None for c in cases] == [True, False]  # +70 % > 5 %; a peak under +1000 %

    # ---- HTML: the exact value of each cell in its data-value.
    tables, ids = html_tables(text["html"])
    assert ids["sentence"] == ex["sentence"]

    def values(table: str, first: int, last: int) -> list[list[float | None]]:
        return [[None if c["value"] is None else float(c["value"]) for c in row[first:last]]
                for row in tables[table][1:]]  # row 0: the header

    assert values("contributors-table", 1, 6)[1:] == [
        [c["baseline_us"], c["experimental_us"], c["delta_us"], jc["delta_pct"], c["share_pct"]]
        for c, jc in zip(ex["contributors"][:TOP], j["contributors"], strict=True)]
    assert values("contributors-table", 1, 6)[0] == [ex["step"][k] for k in ("baseline_us", "experimental_us",
                                                                             "delta_us", "delta_pct")] + [None]
    numeric = [r for r in ov["rows"] if r["unit"] is not None]
    assert [v for v, r in zip(values("overview-table", 1, 5), ov["rows"]) if r["unit"] is not None] == [
        [r["baseline"], r["experimental"], r["delta"], r["delta_pct"]] for r in numeric]
    assert values("operators-table", 1, 7) == [[float(o[1]), float(o[2]), o[3], o[4], o[5], o[6]] for o in operators]
    assert values("memory-table", 1, 5) == [list(m) for m in memory]
    assert values("gates-table", 2, 6) == [[g["baseline"], g["experimental"], g["delta"], g["delta_pct"]]
                                           for g in j["gates"]]

    # ---- Markdown: the same numbers, as the report writes them in each table a parser reads.
    md = {t["title"] or t["header"][0]: t for t in markdown_tables(text["markdown"])}
    contributors = next(t for t in md.values() if t["rows"][0][0] == "Step time")
    assert [r[:6] for r in contributors["rows"][1:]] == [
        [c["name"], value(c["baseline_us"], "us"), value(c["experimental_us"], "us"), signed(c["delta_us"], "us"),
         signed_pct(jc["delta_pct"]), share(c["share_pct"])]
        for c, jc in zip(ex["contributors"][:TOP], j["contributors"], strict=True)]
    overview = next(t for title, t in md.items() if title.startswith("Overview"))
    assert [r[:5] for r in overview["rows"]] == [
        [r["label"], value(r["baseline"], r["unit"]), value(r["experimental"], r["unit"]), signed(r["delta"], r["unit"]),
         signed_pct(r["delta_pct"])] for r in ov["rows"]]
    operator_table = next(t for title, t in md.items() if title.startswith("Top 10 of"))
    assert [[r[0]] + r[2:6] for r in operator_table["rows"]] == [
        [o[0], value(o[3], "us"), value(o[4], "us"), signed(o[5], "us"), signed_pct(o[6])] for o in operators]
    memory_table = next(t for title, t in md.items() if title.startswith("Memory"))
    assert [r[1:5] for r in memory_table["rows"]] == [
        [value(b, "bytes"), value(e, "bytes"), signed(d, "bytes"), signed_pct(pct)] for b, e, d, pct in memory]
    pipeline = md["Pipeline statistics (recorded steps)"]["rows"][0]
    assert pipeline[:5] == ["Data wait per step", value(wait["baseline_us"], "us"), value(wait["experimental_us"], "us"),
                            signed(wait["delta_us"], "us"), signed_pct(wait["delta_pct"])]
    gates = md["Gate"]["rows"]
    assert [r[2:6] for r in gates] == [[value(g["baseline"], g["unit"]), value(g["experimental"], g["unit"]),
                                        signed(g["delta"], g["unit"]), signed_pct(g["delta_pct"])] for g in j["gates"]]
    steps = md["Step times of the profiled steps"]["rows"]
    assert [r[1:] for r in steps] == [[value(b["duration_us"], "us"), value(e["duration_us"], "us")] for b, e in
                                      zip(routes["baseline"]["steps"], routes["experimental"]["steps"])]

    # ---- Text: the numbers as the routes give them.
    lines = text["text"].splitlines()
    # After the two sources, a blank line, then the pair's differences when it has any (the host's load
    # differs when the demo was recorded beside other work: diff/comparability.py), the headline, the sentence.
    differences = len(ex["comparability"]) and len(ex["comparability"]) + 2
    assert lines[3 + differences + 1] == ex["sentence"]
    for r in numeric:
        line = next(line.split() for line in lines if line.startswith(r["metric"] + " "))
        assert line[2:6] == [_cell(r[k]) for k in ("baseline", "experimental", "delta", "delta_pct")], r["metric"]
    data_wait = next(line for line in lines if line.startswith("Data wait per step "))
    assert data_wait.split()[4:9] == ["us"] + [_cell(wait[k]) for k in ("baseline_us", "experimental_us", "delta_us",
                                                                        "delta_pct")]


def _cli(*argv: str) -> subprocess.CompletedProcess:
    """`python -m tb_pipeline_plugin.cli ...` in a process of its own, as a user or a CI job types it."""
    return subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.cli", *argv], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def test_without_gates_the_other_way_round(demo):
    """The demo pair the other way round (the experimental is then faster) with no --fail-if, as a first CI
    job types it: the JUnit file is one passing test, the verdict's, never `tests="0"` (which CI reporters
    read as a failed run); the markdown's contributors give each part's own Δ % signed as every Δ (+ slower,
    − faster) and its share of the step's change with no sign (a faster part of a faster step once read
    "+55.90 %")."""
    logdir = demo[0]
    faster = (str(logdir / "experimental"), str(logdir / "baseline"))
    done = {fmt: _cli("diff", *faster, "--format", fmt) for fmt in ("junit", "markdown", "json")}
    assert {p.returncode for p in done.values()} == {cli.EXIT_OK}, {f: p.stderr[-2000:] for f, p in done.items()}
    report = decode(done["json"].stdout.encode())
    assert report.step.direction == "faster" and not report.gates

    root, cases = junit_cases(done["junit"].stdout)
    for element in (root, root.find("testsuite")):
        assert [element.get(k) for k in ("tests", "failures", "errors")] == ["1", "0", "0"]
    [verdict] = cases
    assert verdict["classname"] == "tb_pipeline.verdict" and verdict["failure"] is None and verdict["error"] is None
    assert verdict["out"].splitlines()[:2] == [headline(report), report.sentence]
    assert verdict["properties"]["verdict"] == report.step.significance.verdict
    assert float(verdict["properties"]["delta"]) == report.step.delta_us < 0

    table = next(t for t in markdown_tables(done["markdown"].stdout) if t["rows"] and t["rows"][0][0] == "Step time")
    assert table["header"][:6] == ["", "Baseline", "Experimental", "Δ", "Δ %", "Share of Δ"]
    assert table["rows"][0][4].startswith("−")
    for row, c in zip(table["rows"][1:], report.contributors, strict=True):
        if c.baseline_us:
            pct = round(100 * c.delta_us / c.baseline_us, 2)
            assert row[4] == ("+" if pct >= 0 else "−") + f"{abs(pct):.2f} %", (c.name, row)
        else:
            assert row[4] == "—"
        assert row[5][0] not in "+−-", (c.name, row)
        assert row[5] == f"{abs(c.share_pct):.2f} %" + (" the other way" if c.share_pct < 0 else ""), (c.name, row)
        if c.share_pct and c.delta_us:  # the share's sign: with the step's change, or the other way
            assert (c.share_pct > 0) == (c.delta_us < 0), (c.name, c.delta_us, c.share_pct)
    # The case: a part that got faster, making up a share of a faster step.
    assert any(c.delta_us < 0 and c.share_pct > 0 for c in report.contributors)


def test_the_html_report_is_one_file_that_opens_offline(demo, page):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (make chromium)")
    _, files, _ = demo
    path = files["html"]
    size = path.stat().st_size
    assert size < HTML_BUDGET_BYTES, size
    report = decode(files["json"].read_bytes())

    # Every request the page makes goes through here: anything but the file itself is refused and noted.
    own, outside, refused = path.resolve().as_uri(), [], []

    def route(r):
        if r.request.url == own:
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("request", lambda req: req.url != own and outside.append(req.url))
    page.on("console", lambda msg: "Refused" in msg.text and refused.append(msg.text))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(own)
    page.wait_for_load_state("load")
    assert not outside and not refused and not page.problems, (outside, refused, page.problems)

    assert page.inner_text("#sentence") == report.sentence
    assert page.inner_text("#verdict").startswith("Slower: +")
    assert page.locator("#waterfall svg rect").count() == len(report.waterfall)
    assert page.locator("#trend svg polyline").count() == 2
    assert page.locator("#trend svg circle").count() == len(report.step_times.baseline_us) + len(
        report.step_times.experimental_us)
    rows = page.locator("#operators-table tbody tr")
    assert rows.count() == len(report.operators.rows) == TOP

    def delta_column() -> list[float]:
        return [float(v) for v in page.eval_on_selector_all(
            "#operators-table tbody tr td:nth-child(6)", "tds => tds.map(td => td.dataset.value)")]

    assert delta_column() == [r.delta_us for r in report.operators.rows]  # the routes' order: largest |Δ| first
    page.click("#operators-table thead th:nth-child(6) button")
    assert delta_column() == sorted(delta_column(), reverse=True)
    page.click("#operators-table thead th:nth-child(6) button")
    assert delta_column() == sorted(delta_column())
    assert page.get_attribute("#operators-table thead th:nth-child(6)", "aria-sort") == "ascending"
    page.click("#operators-table thead th:nth-child(1) button")  # text columns sort as text
    names = page.eval_on_selector_all("#operators-table tbody tr td:nth-child(1)", "tds => tds.map(t => t.textContent)")
    assert names == sorted(names, key=str.lower, reverse=True)

    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "report_demo.png"), full_page=True)
    screenshots = REPO / "docs" / "screenshots"
    page.screenshot(path=str(ARTIFACTS / "report_demo_top.png"))
    shutil.copyfile(ARTIFACTS / "report_demo_top.png", screenshots / "report.png")
