"""The diagnose engine as a Python function and a CLI: failing inputs,
cut-short sweeps (time limit, Ctrl-C), the tolerant reader, and the verdict
thresholds on hand-built curves."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tb_pipeline_plugin.analysis.diagnostic.report import best_concurrency, sweep_frame, verdicts
from tb_pipeline_plugin.diagnose import diagnose
from tb_pipeline_plugin.formats import diagnostic as fmt
from tb_pipeline_plugin.readers.diagnostic import read_diagnostic

from conftest import as_in_a_terminal
from support.diagnose_helpers import REPO_ROOT, SCRIPTS

sys.path.insert(0, str(SCRIPTS))
import flaky  # noqa: E402

pytestmark = pytest.mark.timing(
    "its sweeps' QPS, the time limit and Ctrl-C cuts are wall-clock measured while the test runs"
)


def test_stage_raising_on_some_inputs_is_counted_not_fatal(tmp_path):
    result = diagnose([("every_third_fails", flaky.every_third_fails), ("slow", flaky.slow)], range(30),
                      out_dir=tmp_path, levels=(1, 2), executors=("thread", "process"), duration_s=0.5,
                      warmup_s=0.1, gil=False, progress=None)
    assert not result.cut_short
    sweep = sweep_frame(result.records)
    fails = sweep[sweep.stage == "every_third_fails"]
    assert len(fails) == 4 and (fails["items"] > 20).all()
    # Oracle: the inputs cycle over range(30) and 10 of them are multiples of 3.
    assert (fails.errors / fails["items"]).between(0.25, 0.42).all(), fails[["items", "errors"]]
    assert fails.first_error.str.startswith("ValueError: bad input").all()
    summaries = {r.stage: r for r in result.records if isinstance(r, fmt.StageSummary)}
    assert summaries["every_third_fails"].input_errors == 10
    assert summaries["slow"].inputs == 20  # only the inputs that survived reach the next stage
    table = verdicts(result.records).set_index("stage")
    assert table.loc["every_third_fails", "errors"] == fails.errors.sum()
    assert table.loc["every_third_fails", "first_error"].startswith("ValueError")


def test_time_limit_keeps_what_was_measured(tmp_path):
    # A limit shorter than one level: the lowest level always runs (nothing is known before it), so the limit
    # itself cuts it, and the sweep says so.
    t0 = time.monotonic()
    result = diagnose([("slow", flaky.slow)], range(30), out_dir=tmp_path, levels=(1, 2, 4, 8),
                      executors=("thread",), duration_s=1.0, warmup_s=0.1, time_limit_s=0.6, gil=False,
                      progress=None)
    assert time.monotonic() - t0 < 6
    assert result.cut_short and result.reason == "time limit 0.6 s"
    data = read_diagnostic(tmp_path)
    assert data.complete and data.cut_short
    end = data.records[-1]
    assert isinstance(end, fmt.End) and end.cut_short and end.reason == "time limit 0.6 s"
    points = [r for r in data.records if isinstance(r, fmt.SweepPoint)]
    assert len(points) == 1 and points[0].concurrency == 1 and points[0].items > 10
    assert points[0].cut_short and points[0].cut_reason == "time limit 0.6 s"
    assert verdicts(data.records).set_index("stage").loc["slow", "cut_short"]


def test_levels_that_do_not_fit_the_budget_are_skipped_and_said_so(tmp_path):
    # 2.6 s for levels of about 1.1 s each: the level before predicts the next, and the one that would not fit
    # is skipped with its estimate instead of being cut; the sweep ends within its budget, not cut short.
    t0 = time.monotonic()
    result = diagnose([("slow", flaky.slow)], range(30), out_dir=tmp_path, levels=(1, 2, 4),
                      executors=("thread",), duration_s=1.0, warmup_s=0.1, time_limit_s=2.6, gil=False,
                      progress=None)
    elapsed_s = time.monotonic() - t0
    data = read_diagnostic(tmp_path)
    assert data.complete and not data.cut_short and not result.cut_short
    assert data.records[-1].elapsed_s <= 2.6 and elapsed_s < 2.6 + 1.0
    points = [r for r in data.records if isinstance(r, fmt.SweepPoint)]
    assert [p.concurrency for p in points] == [1, 2] and not any(p.cut_short for p in points)
    summary = next(r for r in data.records if isinstance(r, fmt.StageSummary))
    assert [(s.executor, s.concurrency, s.cause) for s in summary.skipped_levels] == [("thread", 4, "time")]
    assert summary.skipped_levels[0].reason.startswith("would take about 1 s")
    assert summary.budget_s == pytest.approx(2.6, abs=0.1)
    assert verdicts(data.records).set_index("stage").loc["slow", "skipped_levels"][0]["concurrency"] == 4


def test_ctrl_c_keeps_what_was_measured(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(SCRIPTS)]), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tb_pipeline_plugin.diagnose", "flaky:factory", "--logdir", str(tmp_path),
         "--run", "interrupted", "--levels", "1,2,4,8", "--executors", "thread", "--duration-s", "1",
         "--warmup-s", "0.1", "--no-gil"],
        env=env, cwd=str(REPO_ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=as_in_a_terminal)
    results = tmp_path / "interrupted" / "diagnostic" / "diagnostic.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # interrupt once the first level has been written
        if results.exists() and b'"type":"sweep"' in results.read_bytes():
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3, out
    assert "cut short (Ctrl-C)" in out
    data = read_diagnostic(tmp_path / "interrupted")
    assert data.complete and data.cut_short and data.records[-1].reason == "Ctrl-C"
    points = [r for r in data.records if isinstance(r, fmt.SweepPoint)]
    assert points and points[0].items > 0
    assert len(points) < 8  # two stages x four levels would have been written without the interrupt


def test_cli_module_factory_and_bad_usage(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(SCRIPTS)]))
    ok = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.diagnose", "flaky:factory", "--out-dir",
                         str(tmp_path), "--levels", "1", "--executors", "thread", "--duration-s", "0.3",
                         "--warmup-s", "0.05", "--no-gil"], env=env, cwd=str(REPO_ROOT), capture_output=True,
                        text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "every_third_fails" in ok.stderr and "slow" in ok.stderr
    assert read_diagnostic(tmp_path).complete
    bad = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.diagnose", "no_such_module:factory"],
                         env=env, cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "no_such_module" in bad.stderr and "Traceback" not in bad.stderr


def test_reader_tolerates_torn_last_line_and_bad_lines(tmp_path):
    result = diagnose([("slow", flaky.slow)], range(10), out_dir=tmp_path, levels=(1,), executors=("thread",),
                      duration_s=0.2, warmup_s=0.05, gil=False, progress=None)
    whole = result.path.read_bytes()
    lines = whole.splitlines(keepends=True)
    # Killed while writing the end record: everything before it survives, torn tail dropped.
    result.path.write_bytes(b"".join(lines[:-1]) + lines[-1][:15])
    data = read_diagnostic(tmp_path)
    assert data.torn_tail and not data.complete and data.cut_short
    assert len(data.records) == len(lines) - 1
    assert any("no end record" in w for w in data.warnings)
    # A garbled line in the middle is skipped with a warning naming it; an unknown type likewise.
    result.path.write_bytes(lines[0] + b"{not json\n" + b'{"type":"future","schema":1}\n' + b"".join(lines[1:]))
    data = read_diagnostic(tmp_path)
    assert data.complete and len(data.records) == len(lines)
    assert sum("line 2" in w or "line 3" in w for w in data.warnings) == 2
    with pytest.raises(FileNotFoundError):
        read_diagnostic(tmp_path / "missing")


def _env(cores):
    return fmt.Environment(wall_time_s=0, cpu_count=cores, python="3", implementation="cpython",
                           free_threaded=False, gil_enabled=True, process_start_method="fork",
                           levels=[1, 2, 4, 8], executors=["thread", "process"], warmup_s=0, duration_s=1)


def _curve(stage, executor, qps_cpu_machine):
    return [fmt.SweepPoint(stage=stage, executor=executor, concurrency=c, items=100, errors=0, qps=q,
                           p50_latency_s=0.01, p90_latency_s=0.02, cpu_pct=cpu, machine_cpu_pct=m,
                           peak_memory_bytes=1, duration_s=1)
            for c, (q, cpu, m) in zip((1, 2, 4, 8), qps_cpu_machine)]


def _gil(stage, held):
    return fmt.GilRecord(stage=stage, concurrency=2, sampler="py-spy", total_samples=int(held * 200),
                         held_share=held, rate_hz=200, duration_s=1.0,
                         top=[fmt.GilFrame(function="f", file="f.py", line=3, samples=int(held * 200), share=1.0)])


@pytest.mark.parametrize("cores,threads,procs,held,expected", [
    # 2 cores: linear is a single step 1 -> 2
    (2, [(100, 100, 100), (185, 195, 195), (190, 198, 198), (188, 198, 198)], None, 0.05, "scales"),
    (2, [(100, 100, 100), (102, 100, 100), (101, 101, 101), (99, 101, 101)],
     [(100, 100, 100), (195, 198, 198), (196, 199, 199), (190, 199, 199)], 0.97, "gil_bound"),
    # busy machine: processes cannot show it, the GIL samples do
    (2, [(60, 60, 200), (62, 61, 200), (61, 60, 200), (60, 60, 200)],
     [(60, 60, 200), (70, 70, 200), (66, 66, 200), (64, 66, 200)], 0.95, "gil_bound"),
    (2, [(100, 100, 100), (110, 190, 195), (108, 195, 198), (105, 195, 198)],
     [(100, 100, 100), (112, 195, 198), (110, 196, 199), (104, 196, 199)], 0.05, "cpu_saturated"),
    (2, [(100, 2, 10), (200, 4, 12), (400, 8, 15), (790, 15, 20)], None, 0.01, "io_bound"),
    (2, [(100, 60, 60), (90, 70, 70), (60, 80, 80), (40, 90, 90)], None, 0.1, "contention"),
    # threads flat, processes scale, the GIL mostly free: something else the threads share
    (2, [(100, 50, 60), (100, 50, 60), (95, 50, 60), (90, 50, 60)],
     [(100, 50, 60), (190, 100, 110), (250, 150, 160), (240, 150, 160)], 0.04, "contention"),
    (8, [(100, 100, 100), (195, 200, 200), (380, 400, 400), (700, 790, 790)], None, 0.1, "scales"),
])
def test_verdict_thresholds(cores, threads, procs, held, expected):
    records = [_env(cores), *_curve("s", "thread", threads), *(_curve("s", "process", procs) if procs else []),
               _gil("s", held), fmt.StageSummary(stage="s", index=0, kind="map", inputs=10)]
    row = verdicts(records).iloc[0]
    assert row.verdict == expected, row.reason


def test_best_concurrency_is_smallest_within_5_percent():
    records = [_env(2), *_curve("s", "thread", [(100, 1, 1), (196, 1, 1), (200, 1, 1), (150, 1, 1)])]
    best = best_concurrency(sweep_frame(records)).iloc[0]
    assert best.best_concurrency == 2 and best.best_qps == 196


def test_diff_diagnostic_matches_stages_by_name():
    from tb_pipeline_plugin.diff.diagnostic.compare import diff_diagnostic

    def run(stages):
        records = [_env(2)]
        for name, curve, held in stages:
            records += [*_curve(name, "thread", curve), _gil(name, held),
                        fmt.StageSummary(stage=name, index=len(records), kind="map", inputs=10)]
        return records

    flat = [(100, 100, 100), (101, 100, 100), (100, 100, 100), (99, 100, 100)]
    linear = [(100, 100, 100), (190, 195, 195), (195, 198, 198), (196, 198, 198)]
    base = run([("decode", flat, 0.95), ("only_base", flat, 0.1)])
    exp = run([("decode", linear, 0.05), ("only_exp", linear, 0.1)])
    table = diff_diagnostic(base, exp).set_index("stage")
    assert list(table.index) == ["decode", "only_base", "only_exp"]
    row = table.loc["decode"]
    assert row.verdict_baseline == "gil_bound" and row.verdict_experimental == "scales" and row.verdict_changed
    assert row.best_thread_qps_ratio == pytest.approx(190 / 100)  # best: smallest level within 5 %
    assert table.loc["only_base", "in_baseline"] and not table.loc["only_base", "in_experimental"]
    assert np.isnan(table.loc["only_exp", "best_thread_qps_ratio"])


def test_spawned_processes_need_pickling_and_say_why_not(tmp_path):
    result = diagnose([("lambda_stage", lambda x: x + 1), ("slow", flaky.slow)], range(10), out_dir=tmp_path,
                      levels=(1, 2), duration_s=0.3, warmup_s=0.05, gil=False, progress=None,
                      start_method="spawn")
    assert result.records[0].process_start_method == "spawn"
    summaries = {r.stage: r for r in result.records if isinstance(r, fmt.StageSummary)}
    assert "cannot be pickled for the spawn start method" in summaries["lambda_stage"].process_skipped
    assert summaries["slow"].process_skipped == ""  # a module-level function pickles: spawned workers ran it
    sweep = sweep_frame(result.records)
    assert set(sweep[sweep.stage == "lambda_stage"].executor) == {"thread"}
    slow = sweep[(sweep.stage == "slow") & (sweep.executor == "process")]
    assert list(slow.concurrency) == [1, 2] and (slow["items"] > 0).all()
    assert "spawn start method" in verdicts(result.records).set_index("stage").loc["lambda_stage", "process_skipped"]
