"""A Composer job as Composer writes it (tests/data/composer, recorded with the real mosaicml 0.32.1 by
record_composer.py beside it): `RUN/composer_traces/` (Composer's events, one file per profiling cycle and
the merge of them) and `RUN/torch_traces/` (the torch profiler's traces) are one run, RUN. Every number is
checked against the files' JSON (tests/support/json_oracle.py)."""
from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlencode

import pytest
from werkzeug.test import Client

from conftest import PLUGIN_PREFIX, build_tb_app, get_when_ready
from support.json_oracle import composer_steps, load_events, step_windows
from tb_pipeline_plugin import cli, compare
from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.readers import load_pipeline_run
from tb_pipeline_plugin.sources.logdir import discover_runs

DATA = Path(__file__).resolve().parents[1] / "data" / "composer"
RUNS = ("baseline", "experimental")


def _rank_files(run: str) -> list[Path]:
    return sorted((DATA / run / "composer_traces").glob("ep*-ba*-rank0.json"))


def _oracle_split(run: str) -> dict:
    steps = [s for f in _rank_files(run) for s in composer_steps(f)]
    total = sum(s["end_us"] - s["start_us"] for s in steps)
    return {"steps": len(steps), "data_wait_pct": 100.0 * sum(s["wait_us"] for s in steps) / total,
            "mean_step_s": total / len(steps) / 1e6}


@pytest.fixture(scope="module")
def client():
    app, plugin = build_tb_app(DATA)
    yield Client(app)
    plugin.close()


def _get(client, route: str, **params) -> dict:
    resp = get_when_ready(client, f"{route}?{urlencode(params)}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def test_one_run_per_training_job(client):
    runs = client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]
    assert [r["name"] for r in runs] == list(RUNS)
    for r in runs:
        # The torch traces are the trace; merged_trace.json is no worker of its own.
        assert [(w["name"], w["spans"]) for w in r["workers"]] == [("rank0", ["5", "9"])]
        assert r["kinds"] == ["trace", "pipeline"]
        assert r["warnings"] == []


@pytest.mark.parametrize("run", RUNS)
def test_pipeline_statistics_are_composer_events_of_every_cycle(client, run):
    split = _get(client, "pipeline", run=run)["split"]
    oracle = _oracle_split(run)
    assert split["steps"] == oracle["steps"] == 4  # two steps profiled in each of two cycles
    assert split["data_wait_pct"] == pytest.approx(oracle["data_wait_pct"], rel=1e-6)
    assert split["mean_step_s"] == pytest.approx(oracle["mean_step_s"], rel=1e-6)


def test_input_bound_baseline_and_its_change(client):
    # baseline sleeps 4 ms an item, experimental 0.5 ms: its data wait share falls.
    body = _get(client, "diff/pipeline", baseline="baseline", experimental="experimental")
    b, e = _oracle_split("baseline"), _oracle_split("experimental")
    assert e["data_wait_pct"] < b["data_wait_pct"]
    row = next(r for r in body["summary"] if r["metric"] == "split.data_wait_pct")
    assert row["baseline"] == pytest.approx(b["data_wait_pct"], rel=1e-6)
    assert row["experimental"] == pytest.approx(e["data_wait_pct"], rel=1e-6)


@pytest.mark.parametrize("span", ["5", "9"])
def test_trace_is_the_torch_profilers(client, span):
    body = _get(client, "overview", run="baseline", span=span)
    assert (body["worker"], body["span"]) == ("rank0", span)
    _, events = load_events(DATA / "baseline" / "torch_traces" / f"rank0.{span}.pt.trace.json")
    windows = step_windows(events)
    assert [s["name"] for s in body["steps"]] == [name for name, _, _ in windows]
    assert body["avg_step_time_us"] == pytest.approx(sum(e - s for _, s, e in windows) / len(windows), rel=1e-6)


@pytest.mark.parametrize("route", ["diff/overview", "diff/explain", "diff/operators", "diff/kernels", "diff/modules",
                                   "distributed"])
def test_every_pair_route_answers_on_the_job_names(client, route):
    body = _get(client, route, baseline="baseline", experimental="experimental")
    if route == "diff/explain":
        assert body["pipeline"] is not None  # both runs have Composer's statistics
    if route == "distributed":
        assert [r["worker"] for r in body["baseline_ranks"]["ranks"]] == ["rank0"]


def test_cli_and_notebook_take_the_job_directories(capsys):
    code = cli.main(["diff", str(DATA / "baseline"), str(DATA / "experimental")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "avg_step_time_us" in out
    tables = compare.statistics(str(DATA / "baseline"))
    assert tables is not None and tables.source == "composer"
    assert report(tables)["split"]["data_wait_pct"] == pytest.approx(_oracle_split("baseline")["data_wait_pct"], rel=1e-6)


def _copy_job(dst: Path, composer_dir: str | None, torch_dir: str | None, merged_only: bool = False) -> None:
    src = DATA / "baseline"
    if composer_dir is not None:
        (dst / composer_dir).mkdir(parents=True, exist_ok=True)
        for f in (src / "composer_traces").iterdir():
            if not merged_only or f.name == "merged_trace.json":
                shutil.copy(f, dst / composer_dir / f.name)
    if torch_dir is not None:
        (dst / torch_dir).mkdir(parents=True, exist_ok=True)
        for f in (src / "torch_traces").iterdir():
            shutil.copy(f, dst / torch_dir / f.name)


def _layout(logdir: Path) -> dict:
    return {name: ({w: list(s) for w, s in info.traces.items()}, info.kinds)
            for name, info in discover_runs(str(logdir)).items()}


TORCH = ({"rank0": ["5", "9"]}, ["trace", "pipeline"])


@pytest.mark.parametrize("composer_dir, torch_dir", [
    ("traces", "torch_traces"),  # Composer's defaults
    ("profiler_traces", "prof"),  # folders a user set
    ("", "torch_traces"),  # JSONTraceHandler(folder=RUN)
])
def test_composer_folders_are_one_run(tmp_path, composer_dir, torch_dir):
    _copy_job(tmp_path / "job", composer_dir, torch_dir)
    assert _layout(tmp_path) == {"job": TORCH}
    assert report(load_pipeline_run(str(tmp_path / "job")))["split"]["steps"] == 4


def test_composer_events_alone_are_the_trace_without_the_merge(tmp_path):
    _copy_job(tmp_path / "job", "composer_traces", None)
    assert _layout(tmp_path) == {"job": ({"ep0-ba5-rank0": ["0"], "ep0-ba9-rank0": ["0"]}, ["trace", "pipeline"])}


def test_a_merge_alone_is_read(tmp_path):
    # Composer's num_traces_to_keep=0 deletes the rank files and leaves the merge.
    _copy_job(tmp_path / "job", "composer_traces", None, merged_only=True)
    assert _layout(tmp_path) == {"job": ({"merged_trace": ["0"]}, ["trace", "pipeline"])}
    assert report(load_pipeline_run(str(tmp_path / "job")))["split"]["steps"] >= 4


def test_torch_traces_alone_under_composers_default_folder(tmp_path):
    _copy_job(tmp_path / "job", None, "torch_traces")
    assert _layout(tmp_path) == {"job": ({"rank0": ["5", "9"]}, ["trace"])}


def test_runs_side_by_side_stay_runs(tmp_path):
    # Two jobs' folders in one directory, or a plain trace folder: nothing to join.
    _copy_job(tmp_path / "jobs", "a_traces", None)
    _copy_job(tmp_path / "jobs", "b_traces", None)
    _copy_job(tmp_path / "plain", None, "traces")
    assert sorted(_layout(tmp_path)) == ["jobs/a_traces", "jobs/b_traces", "plain/traces"]
