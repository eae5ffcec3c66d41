"""End-to-end, Distributed tab: real TensorBoard over HTA's two-rank NCCL
sample (A100s, a 128-rank job), headless Debian chromium.

Runs: `job` (rank 0 and rank 1 as worker files), `mixed` (rank 1, rank 0,
rank 1 again: ranks repeat, so they are numbered by file order and rank 2
has no partner), `solo` (rank 1 alone) and `empty` (two empty traces);
`many` and `many_slow`: 100 ranks each (`rankN.json.gz`) of HTA's real gloo
CPU trace with its rank rewritten and its clock stretched per rank, `many_slow`'s odd ranks
10 % more (tests/support/rank_logdir.py), loaded by the parse workers when
the tab asks: the tab shows them as they load, then their distribution.
Oracles: rank, world size, backend, step counts and step times from each
file's JSON; the straggler and every time on screen from the `distributed`
route, whose split is checked against the JSON and torch-independent
overviews in tests/sources/test_distributed.py and tests/sources/test_rank_rollup.py.
"""
from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from support.rank_logdir import CPU_ONLY, oracle, write_ranks
from test_e2e_browser import (  # noqa: F401 - browser and page are fixtures
    BUNDLE, CHROMIUM, _get, _open_tab, _pick, browser, page, runs_ready, serve_tensorboard,
)

SHOTS = Path("/tmp/tb_pipeline_shots")

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make chromium)"),
    pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built (cd frontend && npm run build)"),
]


def _json_oracle(path: Path) -> dict:
    with gzip.open(path, "rb") as f:
        trace = json.load(f)
    steps = {e["name"] for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"}
    return {**trace["distributedInfo"], "steps": len(steps)}


@pytest.fixture(scope="module")
def tensorboard(shared_traces, tmp_path_factory):
    src = sorted((shared_traces / "multi_rank").glob("sampled_rank-*.json.gz"))
    assert len(src) == 2
    logdir = tmp_path_factory.mktemp("e2e_distributed_logdir")
    for run, files in (("job", src), ("mixed", [src[1], src[0], src[1]]), ("solo", [src[1]])):
        (logdir / run).mkdir()
        for i, s in enumerate(files):
            shutil.copy(s, logdir / run / f"worker{i}.pt.trace.json.gz")
    (logdir / "empty").mkdir()
    for i in range(2):
        (logdir / "empty" / f"worker{i}.pt.trace.json").write_text('{"schemaVersion": 1, "traceEvents": []}')
    cpu = str(shared_traces / CPU_ONLY)
    # Named `rankN.json.gz` (generic Chrome traces to our discovery): torch-tb-profiler, installed
    # beside us here, reads only `*.pt.trace.json*` and would spend minutes on 200 more files.
    write_ranks(cpu, str(logdir / "many"), range(MANY), many_scale, name="rank{}.json.gz")
    write_ranks(cpu, str(logdir / "many_slow"), range(MANY), lambda r: many_scale(r) * (1.1 if r % 2 else 1.0),
                name="rank{}.json.gz")
    with serve_tensorboard(logdir, tmp_path_factory.mktemp("tb_log") / "tensorboard.log",
                           runs_ready("job", "mixed", "solo", "empty", "many", "many_slow")) as port:
        yield port, [_json_oracle(s) for s in src]


MANY = 100  # past the 64 ranks a bar each: the tab draws the distribution


def many_scale(rank: int) -> float:
    return 1.0 + (rank % 13) / 10


def _shot(page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.wait_for_timeout(250)  # charts settle after their ResizeObserver pass
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _ms(text: str) -> float:
    """A ms figure the UI printed ("+2.076", "−0.006 ms", "1,234.500") as a number of µs."""
    body = text.strip().rstrip("▲▼").replace(" ms", "").replace(",", "").replace("−", "-")
    return float(body) * 1000


# The UI prints ms with three decimals: equal to the route's µs within half a µs (plus float noise).
MS_TOL_US = 0.501


def _names(table) -> list[str]:
    return table.evaluate("t => [...t.querySelectorAll('tbody tr:not(.spacer) td.c-name')].map(td => td.textContent)")


def _facts(card) -> dict:
    return dict(card.evaluate("c => [...c.querySelectorAll('table.kv tr')].map(tr => [tr.querySelector('th').textContent, tr.querySelector('td').textContent])"))


def _open_distributed(frame):
    frame.click("[data-tab=distributed]")
    _complete(frame)


def _complete(frame):
    """Until every rank of both runs is in the view (it shows the ranks ready while the others load)."""
    frame.wait_for_selector("[data-view=distributed][data-complete=true] [data-testid=rank-table]", timeout=180_000)


def test_distributed_tab(tensorboard, page):
    port, oracle = tensorboard
    rank_of_file = [o["rank"] for o in oracle]
    assert rank_of_file == [0, 1]
    frame = _open_tab(page, port)

    # ---- job against mixed: both runs' setup, stragglers, rank by rank.
    _pick(frame, "job", "mixed")
    assert frame.locator("[data-tab=distributed]").count() == 1
    _open_distributed(frame)
    api = _get(port, "distributed", baseline="job", experimental="mixed")

    job = frame.locator("[data-testid=rank-run][data-side=baseline]")
    facts = _facts(job)
    assert facts["Ranks (trace files)"] == "2"
    assert facts["World size"] == str(oracle[0]["world_size"]) == str(oracle[1]["world_size"])
    assert facts["Backend"] == oracle[0]["backend"] == "nccl"
    assert facts["Rank numbers"] == "from each trace's distributedInfo"
    assert "The job had 128 ranks; this run holds 2 of them" in job.inner_text()
    assert _facts(frame.locator("[data-testid=rank-run][data-side=experimental]"))["Rank numbers"].startswith("the files' order")

    # The straggler: the rank with the longest average step, named with the route's numbers.
    ranks = api["baseline_ranks"]["ranks"]
    slowest = max(ranks, key=lambda r: r["step_time_us"])
    assert [r["rank"] for r in ranks] == rank_of_file and [r["steps"] for r in ranks] == [o["steps"] for o in oracle]
    median = sum(r["step_time_us"] for r in ranks) / 2
    assert api["baseline_ranks"]["slowest"]["rank"] == slowest["rank"]
    straggler = job.locator("[data-testid=straggler]")
    assert straggler.get_attribute("data-rank") == str(slowest["rank"])
    text = straggler.inner_text()
    m = re.fullmatch(r"Rank (\d+) \((\w+)\) is the straggler: ([\d.,]+) ms per step, (\+[\d.,]+) ms \(\+([\d.]+) %\)▲ "
                     r"over the median rank's ([\d.,]+) ms\.", text)
    assert m, text
    assert (int(m[1]), m[2]) == (slowest["rank"], slowest["worker"])
    assert _ms(m[3]) == pytest.approx(slowest["step_time_us"], abs=MS_TOL_US)
    assert _ms(m[4]) == pytest.approx(slowest["step_time_us"] - median, abs=MS_TOL_US)
    assert float(m[5]) == pytest.approx(100 * (slowest["step_time_us"] - median) / median, abs=0.051)
    assert _ms(m[6]) == pytest.approx(median, abs=MS_TOL_US)
    assert straggler.locator(".delta.worse").count() == 1  # slower than the median: red, ▲

    # Charts: one per run.
    for side in ("baseline", "experimental"):
        assert frame.locator(f"[data-chart=ranks-{side}] canvas").count() >= 1

    # Rank table: the route's matched rows, largest |Δ step time| first (ties by rank).
    table = frame.locator("[data-testid=rank-table]")
    rows = sorted(api["rows"], key=lambda r: (-abs(r["delta_step_time_us"]), r["rank"]))
    assert len(rows) == 2 and all(r["delta_step_time_us"] != 0 for r in rows)
    # Rank r of both runs is file worker{r}: named once.
    assert all(r["baseline_worker"] == r["experimental_worker"] == f"worker{r['rank']}" for r in rows)
    assert _names(table) == [f"rank {r['rank']} · worker{r['rank']}" for r in rows]
    deltas = table.evaluate("t => [...t.querySelectorAll('tbody tr:not(.spacer)')].map(tr => tr.querySelectorAll('td')[3].textContent)")
    for shown, r in zip(deltas, rows):
        assert _ms(shown) == pytest.approx(r["delta_step_time_us"], abs=MS_TOL_US)
        assert shown.startswith("+" if r["delta_step_time_us"] > 0 else "−")
    # mixed's rank 1 is rank 0's file: its delta is rank 0's step time minus rank 1's, straight from the baseline ranks.
    by_rank = {r["rank"]: r for r in api["rows"]}
    assert by_rank[1]["delta_step_time_us"] == pytest.approx(ranks[0]["step_time_us"] - ranks[1]["step_time_us"], abs=1e-3)
    table.locator("th[data-key=name]").click()
    assert [n.split(" · ")[0] for n in _names(table)] == ["rank 0", "rank 1"]

    # Rank 2 of mixed has no partner.
    assert api["unmatched_ranks"] == [2]
    li = frame.locator("[data-testid=unmatched-ranks] li")
    assert li.count() == 1 and li.get_attribute("data-rank") == "2" and li.get_attribute("data-only") == "experimental"
    assert "only in the experimental run “mixed”" in li.inner_text()
    frame.evaluate("() => window.scrollTo(0, 0)")
    _shot(page, "distributed_pair")
    table.scroll_into_view_if_needed()
    _shot(page, "distributed_pair_table")

    # ---- One run picked twice: its ranks alone, slowest first, steps from the JSON.
    _pick(frame, "job", "job")
    frame.wait_for_selector("[data-view=distributed][data-complete=true] [data-testid=rank-table] [data-key=vs_median_us]",
                            timeout=60_000)
    table = frame.locator("[data-testid=rank-table]")
    assert _names(table) == [f"rank {r['rank']} · {r['worker']}" for r in sorted(ranks, key=lambda r: -r["step_time_us"])]
    steps = table.evaluate("t => [...t.querySelectorAll('tbody tr:not(.spacer)')].map(tr => tr.querySelectorAll('td')[1].textContent)")
    by_worker = {r["worker"]: r for r in ranks}
    shown = [by_worker[n.split(" · ")[1]] for n in _names(table)]
    assert steps == [str(oracle[r["rank"]]["steps"]) for r in shown]
    assert frame.locator("[data-testid=unmatched-ranks]").count() == 0

    # ---- A single-rank run: said in words, no straggler, and no tab once left.
    _pick(frame, "solo", "solo")
    note = frame.locator("[data-testid=rank-coverage]")
    note.wait_for(timeout=60_000)
    assert "“solo” has one rank" in note.inner_text()
    assert frame.locator("[data-testid=straggler]").count() == 0
    assert _facts(frame.locator("[data-testid=rank-run]"))["World size"] == str(oracle[1]["world_size"])
    assert _names(frame.locator("[data-testid=rank-table]")) == ["rank 1 · worker0"]
    _shot(page, "distributed_single_rank")
    frame.click("[data-tab=overview]")
    assert frame.locator("[data-tab=distributed]").count() == 0

    # ---- Empty traces: a message, not a blank page.
    _pick(frame, "job", "empty")
    _open_distributed(frame)
    note = frame.locator("[data-testid=rank-coverage][data-side=experimental]")
    note.wait_for(timeout=60_000)
    assert "No rank of “empty” has any step time" in note.inner_text()
    assert frame.locator("[data-testid=rank-run][data-side=experimental] [data-testid=straggler]").count() == 0
    _shot(page, "distributed_empty")
    assert not page.problems, page.problems


def test_distributed_tab_of_many_ranks(tensorboard, page, shared_traces):
    port, _ = tensorboard
    cpu = str(shared_traces / CPU_ONLY)
    frame = _open_tab(page, port)
    _pick(frame, "many", "many_slow")
    frame.click("[data-tab=distributed]")
    # While the parse workers read the ranks: the ranks ready, and how many are left.
    progress = frame.locator("[data-testid=rank-progress]").first
    progress.wait_for(timeout=60_000)
    ready, total = int(progress.get_attribute("data-ready")), int(progress.get_attribute("data-total"))
    assert total == MANY and ready < MANY
    assert re.search(r"of 100 ranks of “many(_slow)?” ready; [\d,]+ still loading", progress.inner_text())
    _shot(page, "distributed_many_loading")
    _complete(frame)
    assert frame.locator("[data-testid=rank-progress]").count() == 0
    view = frame.locator("[data-view=distributed]")
    assert view.get_attribute("data-chart-kind") == "distribution"
    api = _get(port, "distributed", baseline="many", experimental="many_slow")
    assert api["complete"] and len(api["rows"]) == MANY

    # The slowest ranks, listed with the route's numbers; the first one's step time is its JSON's.
    b = api["baseline_ranks"]
    listed = frame.locator("[data-testid=rank-run][data-side=baseline] [data-testid=slowest-ranks] li")
    assert [int(x) for x in listed.evaluate_all("lis => lis.map(li => li.dataset.rank)")] == [r["rank"] for r in b["slowest_ranks"]]
    top = b["slowest_ranks"][0]
    assert top["step_time_us"] == pytest.approx(oracle(cpu, top["rank"], many_scale(top["rank"]))["step_time_us"], abs=0.01)
    assert f"{top['step_time_us'] / 1000:,.3f} ms per step" in listed.first.inner_text()

    # The distribution: the bands of each run and the histogram are drawn; the spread table holds the route's percentiles.
    for chart in ("bands-baseline", "bands-experimental", "histogram"):
        assert frame.locator(f"[data-chart={chart}] canvas").count() >= 1
    spread = {s["quantity"]: s for s in b["spread"]}
    row = frame.locator("[data-testid=rank-spread] tr[data-side=baseline][data-quantity=step_time_us] td")
    cells = row.evaluate_all("tds => tds.map(td => td.textContent)")
    pcts = b["spread_percentiles"]
    for text, p in zip(cells, (0, 50, 90, 99, 100)):
        assert _ms(text) == pytest.approx(spread["step_time_us"]["values"][pcts.index(p)], abs=MS_TOL_US)

    # Percentile by percentile: p50's Δ as the route gives it (odd ranks 10 % slower).
    table = frame.locator("[data-testid=percentile-table]")
    names = _names(table)
    assert names[:3] == ["min", "p1", "p5"] and names[-1] == "max"
    by_pct = {r["pct"]: r for r in api["by_percentile"]}
    p50 = table.evaluate("t => [...t.querySelectorAll('tbody tr:not(.spacer)')].find(tr => tr.querySelector('td.c-name').textContent === 'p50').querySelectorAll('td')[3].textContent")
    assert _ms(p50) == pytest.approx(by_pct[50]["delta_step_time_us"], abs=MS_TOL_US) and by_pct[50]["delta_step_time_us"] > 0

    # Rank by rank: virtualised (fewer rows in the page than ranks), largest |Δ step time| first.
    ranks_table = frame.locator("[data-testid=rank-table]")
    shown = _names(ranks_table)
    assert 0 < len(shown) < MANY
    first = sorted(api["rows"], key=lambda r: (-abs(r["delta_step_time_us"]), r["rank"]))[0]
    assert shown[0] == f"rank {first['rank']} · rank{first['rank']}"
    frame.evaluate("() => window.scrollTo(0, 0)")
    _shot(page, "distributed_many")
    frame.locator("#dist-bands").scroll_into_view_if_needed()
    frame.evaluate("() => document.getElementById('dist-bands').scrollIntoView()")
    _shot(page, "distributed_many_charts")
    table.scroll_into_view_if_needed()
    _shot(page, "distributed_many_tables")
    assert not page.problems, page.problems
