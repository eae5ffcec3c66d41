"""Diagnostic mode measures each stage as its pipeline runs it (issue 37):
DataLoader worker processes with one torch intra-op thread (or what the
user's worker_init_fn sets), thread levels with the main process's; a stage
that keeps several cores busy by itself is named so; the sweep fits the
machine, its time budget and its memory, and writes its end record however
it ends (Ctrl-C, SIGTERM through the launcher).

Real scripts through the real launcher (`tb-pipeline record`), results read
by the reader and through the real TensorBoard app. Oversubscription needs
more cores than this machine has to be seen for real, so its rule is tested
on records built with the format's own Structs, with the figures the issue
reports from a 16-core host.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tb_pipeline_plugin.analysis.diagnostic.report import sweep_frame, verdicts
from tb_pipeline_plugin.diagnose import DEFAULT_LEVELS, diagnose, level_budget, run_levels
from tb_pipeline_plugin.diff.diagnostic.compare import diff_diagnostic
from tb_pipeline_plugin.formats import diagnostic as fmt
from tb_pipeline_plugin.readers.diagnostic import read_diagnostic

from conftest import as_in_a_terminal, get_when_ready
from support.diagnose_helpers import REPO_ROOT, SCRIPTS
from support.recordings import recording

pytestmark = pytest.mark.timing("measures each stage's QPS per thread and process level while the test runs")

BUDGET_S = 60
HEAVY = dict(duration_s=0.6, warmup_s=0.1, num_inputs=128, gil_duration_s=1, time_limit_s=BUDGET_S)


def _record(tmp_path: Path, script: str, run: str, **options) -> subprocess.Popen:
    """`TB_PIPELINE_DIAGNOSTIC_MODE=1 tb-pipeline record --logdir LOGS --run RUN -- python SCRIPT`."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1", TB_PIPELINE_DIAGNOSTIC_MODE="1")
    env.update({f"TB_PIPELINE_DIAGNOSTIC_{k.upper()}": str(v) for k, v in options.items()})
    return subprocess.Popen([sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir",
                             str(tmp_path / "logs"), "--run", run, "--", sys.executable, str(SCRIPTS / script)],
                            env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=as_in_a_terminal)


def _main_threads() -> int:
    """Oracle: torch's intra-op threads in a fresh process on this machine."""
    return int(subprocess.check_output([sys.executable, "-c", "import torch; print(torch.get_num_threads())"]))


@recording(sources=["tests/support/diagnose_helpers.py", "tests/diagnose_scripts/heavy_collate.py"])
def heavy_collate_sweep(out: Path) -> dict:
    """The heavy collate_fn script swept once, through the launcher, into `out/logs`: its exit status, what it
    printed and its wall seconds."""
    t0 = time.monotonic()
    proc = _record(out, "heavy_collate.py", "heavy", **HEAVY)
    printed, _ = proc.communicate(timeout=BUDGET_S + 120)
    return {"returncode": proc.returncode, "output": printed, "wall_s": time.monotonic() - t0}


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """The heavy collate_fn script's sweep (`heavy_collate_sweep`, made alone before the tests): (logdir, its
    DiagnosticRun, the terminal output, wall seconds)."""
    tmp_path = tmp_path_factory.mktemp("heavy_collate")
    got = heavy_collate_sweep.copy_to(tmp_path)
    out = got["output"]
    assert got["returncode"] == 1, out[-4000:]  # diagnostic mode profiles, then exits with status 1
    assert "TRAINED" not in out
    return tmp_path / "logs", read_diagnostic(tmp_path / "logs" / "heavy"), out, got["wall_s"]


def _points(data, stage: str, executor: str) -> list:
    return sorted((r for r in data.records if isinstance(r, fmt.SweepPoint) and r.stage == stage
                   and r.executor == executor), key=lambda r: r.concurrency)


def test_processes_run_with_one_intra_op_thread_and_threads_with_the_main_process(heavy):
    _, data, out, _ = heavy
    threads = _main_threads()
    env = data.records[0]
    assert isinstance(env, fmt.Environment)
    assert (env.intra_op_threads, env.process_intra_op_threads) == (threads, 1)
    for stage in ("__getitem__", "collate_fn", "batch"):
        procs, thread_points = _points(data, stage, "process"), _points(data, stage, "thread")
        assert procs and thread_points, stage
        assert {p.intra_op_threads for p in procs} == {1}, stage
        assert {p.intra_op_threads for p in thread_points} == {threads}, stage
    for stage in ("collate_fn", "batch"):
        one = _points(data, stage, "process")[0]
        # One intra-op thread: at most one core for the worker, plus the parent's few per cent of waiting.
        assert one.concurrency == 1 and one.cpu_pct <= 115, (stage, one.cpu_pct)
        assert one.cpu_pct <= 1.3 * one.caller_cpu_pct, (stage, one.cpu_pct, one.caller_cpu_pct)
    assert f"torch intra-op threads: {threads} a thread worker, 1 a process worker" in out


def test_a_stage_using_several_cores_by_itself_is_named_so(heavy):
    _, data, out, _ = heavy
    threads = _main_threads()
    table = verdicts(data.records).set_index("stage")
    for stage in ("collate_fn", "batch"):
        row = table.loc[stage]
        assert row["verdict"] != "cpu_saturated", row["reason"]
        if threads < 2:
            continue  # one intra-op thread in the main process: nothing runs parallel inside here
        # The calling thread does about 1/threads of the work: the ratio holds however busy the machine is.
        one = _points(data, stage, "thread")[0]
        assert one.cpu_pct / one.caller_cpu_pct >= 1.5, (one.cpu_pct, one.caller_cpu_pct)
        assert row["verdict"] == "parallel_inside", row["reason"]
        assert row["reason"].startswith("uses ") and f"torch intra-op threads ({threads} a worker)" in row["reason"]
        assert "processes with 1 intra-op thread each" in row["reason"]
        assert "fewer intra-op threads" in row["reason"] and "fewer workers" in row["reason"]
        assert row["cores_by_itself"] >= 1.5
    assert "PARALLEL INSIDE" in out or threads < 2


def test_the_sweep_fits_the_machine_and_ends_within_its_budget(heavy):
    _, data, out, wall_s = heavy
    cores = data.records[0].cpu_count
    end = data.records[-1]
    assert data.complete and isinstance(end, fmt.End) and end.elapsed_s <= BUDGET_S, end
    assert wall_s < BUDGET_S + 60  # the interpreter, torch's import and the cached inputs on top of the sweep
    fitted = [c for c in (1, 2, 4, 8, 16, 32) if c <= cores]
    above = min(c for c in (1, 2, 4, 8, 16, 32) if c > cores)
    for r in data.records:
        if isinstance(r, fmt.SweepPoint):
            # Levels up to the cores and one above (threads further only while a stage gains like I/O).
            assert r.concurrency in fitted or r.concurrency == above or r.executor == "thread", r
    summaries = [r for r in data.records if isinstance(r, fmt.StageSummary) and r.kind == "map"]
    assert summaries and all(0 < s.budget_s <= BUDGET_S for s in summaries)
    for s in summaries:  # a level left out for the budget or memory says so, with its estimate
        assert all(k.cause in ("time", "memory") and k.reason for k in s.skipped_levels)


def test_threads_and_the_verdict_through_tensorboard(heavy, make_tb_client):
    logdir, data, _, _ = heavy
    client = make_tb_client(logdir)
    resp = get_when_ready(client, "diagnostic?run=heavy")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    threads = _main_threads()
    assert body["environment"]["intra_op_threads"] == threads
    assert body["environment"]["process_intra_op_threads"] == 1
    assert body["environment"]["time_limit_s"] == BUDGET_S
    table = verdicts(data.records).set_index("stage")
    for stage in body["stages"]:
        row = table.loc[stage["stage"]]
        assert (stage["verdict"], stage["reason"]) == (row["verdict"], row["reason"])
        for curve in stage["curves"]:
            want = 1 if curve["executor"] == "process" else threads
            assert {p["intra_op_threads"] for p in curve["points"]} == {want}
            for p in curve["points"]:
                assert p["cores_per_caller"] is None or p["cores_per_caller"] > 0
    collate = next(s for s in body["stages"] if s["stage"] == "collate_fn")
    if threads >= 2:
        assert collate["verdict"] == "parallel_inside" and collate["cores_by_itself"] >= 1.5


def test_results_written_before_threads_were_recorded_still_load(heavy, tmp_path, make_tb_client):
    logdir, _, _, _ = heavy
    new_fields = {"intra_op_threads", "process_intra_op_threads", "thread_env", "time_limit_s", "memory_limit_bytes",
                  "caller_cpu_pct", "cut_reason", "skipped_levels", "budget_s"}
    old = tmp_path / "logs" / "old" / "diagnostic"
    old.mkdir(parents=True)
    written = (logdir / "heavy" / "diagnostic" / "diagnostic.jsonl").read_text().splitlines()
    lines = [{k: v for k, v in json.loads(line).items() if k not in new_fields} for line in written]
    (old / "diagnostic.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    client = make_tb_client(tmp_path / "logs")
    resp = get_when_ready(client, "diagnostic?run=old")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["complete"] and body["environment"]["intra_op_threads"] is None
    assert body["environment"]["time_limit_s"] is None
    for stage in body["stages"]:
        assert stage["skipped_levels"] == []
        for curve in stage["curves"]:
            # Without the callers' CPU, a level's CPU over its workers: a lower bound of the cores a call kept busy.
            assert all(p["intra_op_threads"] is None and p["cut_reason"] is None for p in curve["points"])
            assert all(p["cores_per_caller"] == pytest.approx(p["cpu_pct"] / (100 * p["concurrency"]))
                       for p in curve["points"])


def test_threads_a_worker_init_fn_sets_are_kept(tmp_path):
    proc = _record(tmp_path, "own_worker_threads.py", "own", levels="1,2", executors="process", duration_s=0.3,
                   warmup_s=0.05, num_inputs=64, gil=0)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 1, out[-4000:]
    data = read_diagnostic(tmp_path / "logs" / "own")
    assert data.complete and not data.cut_short
    points = [r for r in data.records if isinstance(r, fmt.SweepPoint)]
    assert {p.stage for p in points} == {"__getitem__", "collate_fn", "batch"}
    # worker_init_fn ran in every worker, as a DataLoader worker (get_worker_info), after torch's own setting.
    assert {p.intra_op_threads for p in points} == {2}, [(p.stage, p.concurrency, p.intra_op_threads) for p in points]
    assert not any(r.process_skipped for r in data.records if isinstance(r, fmt.StageSummary))


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_the_end_record_is_written_when_the_launcher_is_stopped(tmp_path, how):
    proc = _record(tmp_path, "dataloader_user.py", "stopped", levels="1,2,4", duration_s=2, warmup_s=0.1, gil=0)
    results = tmp_path / "logs" / "stopped" / "diagnostic" / "diagnostic.jsonl"
    deadline = time.monotonic() + 120
    while not (results.exists() and b'"type":"sweep"' in results.read_bytes()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-4000:]
        time.sleep(0.1)
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)  # the launcher alone: it passes it on to the script
    else:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out[-4000:]  # the script's own status: the launcher waited for it
    assert f"cut short ({how})" in out
    data = read_diagnostic(tmp_path / "logs" / "stopped")
    assert data.complete and data.cut_short and data.records[-1].reason == how, data.warnings
    points = [r for r in data.records if isinstance(r, fmt.SweepPoint)]
    assert points and points[0].items > 0 and len(points) < 6


def test_levels_fit_the_cores_and_threads_go_further_only_while_waiting(tmp_path):
    sys.path.insert(0, str(SCRIPTS))
    import flaky
    import three_stages

    cores = run_levels.cpu_count()
    fitted = [c for c in DEFAULT_LEVELS if c <= cores] + [c for c in DEFAULT_LEVELS if c > cores][:1]
    diagnose([("sleep", flaky.slow), ("python", three_stages.pure_python_loop)], range(30), out_dir=tmp_path,
             executors=("thread", "process"), duration_s=0.3, warmup_s=0.05, gil=False, progress=None)
    sweep = sweep_frame(read_diagnostic(tmp_path).records)

    def levels(stage, executor):
        return sweep[(sweep.stage == stage) & (sweep.executor == executor)]["concurrency"].tolist()

    assert levels("sleep", "process") == levels("python", "process") == fitted
    # A stage that waits keeps gaining with threads it barely keeps busy: the sweep goes on past cores + 1.
    assert levels("sleep", "thread")[:len(fitted) + 1] == list(DEFAULT_LEVELS)[:len(fitted) + 1]
    # The pure-Python loop computes under the GIL: it goes past the fitted levels only where its own curve read
    # as a waiting one (a lowest level that neighbours starved, on a busy machine), by the rule itself.
    python = sweep[(sweep.stage == "python") & (sweep.executor == "thread")]
    assert levels("python", "thread")[:len(fitted)] == fitted
    if len(python) > len(fitted):
        points = list(zip(python.concurrency, python.qps, python.cpu_pct))[:len(fitted)]
        assert level_budget.gains_like_io(points, cores), python


def hold_100_mb(x):
    block = np.ones(100 * 2 ** 20 // 8)  # touched: resident while the call runs
    time.sleep(0.25)
    return x + int(block[0])


def test_a_level_that_would_exceed_the_memory_is_skipped_with_the_reason(tmp_path):
    result = diagnose([("hold_100_mb", hold_100_mb)], range(8), out_dir=tmp_path, levels=(1, 2, 4),
                      executors=("thread",), duration_s=0.6, warmup_s=0.05, gil=False, progress=None,
                      memory_limit_bytes=150 * 2 ** 20)
    data = read_diagnostic(tmp_path)
    assert data.complete and not result.cut_short
    assert [p.concurrency for p in data.records if isinstance(p, fmt.SweepPoint)] == [1]
    summary = next(r for r in data.records if isinstance(r, fmt.StageSummary))
    assert [(s.concurrency, s.cause) for s in summary.skipped_levels] == [(2, "memory"), (4, "memory")]
    # About 100 MB a worker at level 1 (oracle: the block the call holds), against the 150 MB asked.
    assert summary.skipped_levels[0].reason.startswith("would need about 0.2 GB (0.1 GB a worker at 1), 0.1 GB")


# ---------------------------------------------------------------- the rules, on the 16-core figures


def _env(cores: int) -> fmt.Environment:
    return fmt.Environment(wall_time_s=0, cpu_count=cores, python="3", implementation="cpython", free_threaded=False,
                           gil_enabled=True, process_start_method="fork", levels=[1, 2, 4, 8, 16, 32],
                           executors=["thread", "process"], warmup_s=0.3, duration_s=2, intra_op_threads=cores)


def _curve(executor: str, rows, threads: int) -> list[fmt.SweepPoint]:
    """rows: (level, QPS, CPU %, machine CPU %, callers' CPU %)."""
    return [fmt.SweepPoint(stage="collate_fn", executor=executor, concurrency=c, items=100, errors=0, qps=q,
                           p50_latency_s=1 / q, p90_latency_s=1.2 / q, cpu_pct=cpu, machine_cpu_pct=m,
                           peak_memory_bytes=1 << 30, duration_s=2.0, slice_qps=[q] * 8, intra_op_threads=threads,
                           caller_cpu_pct=caller)
            for c, q, cpu, m, caller in rows]


# Processes that each start 16 intra-op threads on 16 cores (forked without DataLoader's setting): 101 QPS at 1,
# 3.8 at 2 ... 0.2 at 32, the machine full.
OVERSUBSCRIBED = [(1, 101.0, 1598.0, 1600.0, 100.0), (2, 3.8, 1590.0, 1600.0, 99.0), (4, 2.5, 1595.0, 1600.0, 98.0),
                  (32, 0.2, 1600.0, 1600.0, 97.0)]
# The same stage as DataLoader workers run it: one intra-op thread each, scaling to the cores.
ONE_THREAD_EACH = [(1, 60.0, 100.0, 110.0, 99.0), (2, 119.0, 199.0, 210.0, 99.0), (4, 236.0, 398.0, 410.0, 99.0),
                   (8, 460.0, 790.0, 800.0, 99.0), (16, 800.0, 1560.0, 1590.0, 98.0), (32, 780.0, 1590.0, 1600.0, 50.0)]
# Threads in the main process: 16 intra-op threads each, the machine full from one thread on.
THREADS_16 = [(1, 101.0, 1598.0, 1600.0, 100.0), (2, 60.0, 1600.0, 1600.0, 60.0), (4, 20.0, 1600.0, 1600.0, 30.0)]


def test_a_stage_with_its_own_threads_is_named_so_with_the_oversubscription():
    records = [_env(16), *_curve("thread", THREADS_16, 16), *_curve("process", OVERSUBSCRIBED, 16)]
    row = verdicts(records).iloc[0]
    assert row["verdict"] == "parallel_inside", row["reason"]
    assert row["reason"].startswith("uses 16 cores by itself at 1 thread: torch intra-op threads (16 a worker)")
    assert ("processes oversubscribe the 16 cores: QPS falls from 101 at 1 to 3.8 at 2 with the machine at 1600 % "
            "CPU (2 workers × 16 busy threads each ≈ 32 on 16 cores)") in row["reason"]
    assert "fewer intra-op threads" in row["reason"] and row["cores_by_itself"] == pytest.approx(15.98)


def test_oversubscription_is_called_so_in_the_verdict_and_the_diff():
    # Without threads of its own at one worker, a fall with the machine at 100 % and the stage filling it.
    one_core = [(1, 100.0, 100.0, 105.0, 99.0), (2, 198.0, 199.0, 200.0, 99.0), (4, 120.0, 199.0, 200.0, 50.0)]
    crowded_out = [(1, 100.0, 100.0, 200.0, 99.0), (2, 150.0, 150.0, 200.0, 99.0), (4, 60.0, 90.0, 200.0, 45.0)]
    records = [_env(2), *_curve("process", one_core, 1)]
    row = verdicts(records).iloc[0]
    assert row["verdict"] == "oversubscribed", row["reason"]
    assert row["reason"] == ("processes oversubscribe the 2 cores: QPS falls from 198 at 2 to 120 at 4 with the "
                             "machine at 200 % CPU (4 workers on 2 cores): run at most 2 processes")
    # Other processes filling the machine while the stage uses less than it: not oversubscription.
    assert verdicts([_env(2), *_curve("process", crowded_out, 1)]).iloc[0]["verdict"] != "oversubscribed"
    # The diff: DataLoader-like workers (one thread each) against workers that inherit 16 threads.
    base = [_env(16), *_curve("process", ONE_THREAD_EACH, 1)]
    exp = [_env(16), *_curve("process", OVERSUBSCRIBED, 16)]
    diff = diff_diagnostic(base, exp).iloc[0]
    assert (diff["verdict_baseline"], diff["verdict_experimental"]) == ("cpu_saturated", "parallel_inside")
    assert diff["change"] == "changed", diff["change_reason"]
    assert "oversubscribed in the experimental run: processes oversubscribe the 16 cores" in diff["change_reason"]
    assert "baseline run" not in diff["change_reason"]
    assert sweep_frame(exp)["intra_op_threads"].tolist() == [16] * 4
