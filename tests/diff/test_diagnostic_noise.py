"""A level's spread (slices of its window) and the noise rule of diagnostic
comparisons, on hand-built records whose answers are worked out here: QPS
per slice with calls across slice edges, intervals, a verdict flip within
noise, a real change, a change that rests on one level measured once, a
crowded machine, results without slices, a best concurrency that moved or
not."""
from __future__ import annotations

import math
import statistics
import sys

import numpy as np
import pytest

from tb_pipeline_plugin.analysis.diagnostic.report import report, sweep_frame
from tb_pipeline_plugin.analysis.diagnostic.spread import (BETWEEN_RECORDINGS_PCT, Z, gil_share_sd, level_spread,
                                                           others_cpu_pct)
from tb_pipeline_plugin.diagnose import diagnose
from tb_pipeline_plugin.diagnose.level_spread import slice_qps, worker_slice_rates
from tb_pipeline_plugin.diff.diagnostic.compare import diff_diagnostic
from tb_pipeline_plugin.formats import diagnostic as fmt
from tb_pipeline_plugin.readers.diagnostic import DiagnosticRun, read_diagnostic

from support.diagnose_helpers import SCRIPTS

sys.path.insert(0, str(SCRIPTS))
import flaky  # noqa: E402


def test_slices_count_a_call_across_an_edge_by_its_share():
    # One call per second for 4 s: 1 call/s in both halves.
    assert worker_slice_rates([0, 1, 2, 3], [1, 2, 3, 4], 2) == pytest.approx([1.0, 1.0])
    # A 3 s call then a 1 s call: 2/3 of the first in [0, 2), the rest of it and the second in [2, 4).
    assert worker_slice_rates([0, 3], [3, 4], 2) == pytest.approx([(2 / 3) / 2, (1 / 3 + 1) / 2])
    # A gap between calls (the claim) counts nothing; a worker without a span gives nothing.
    assert worker_slice_rates([0, 3], [1, 4], 2) == pytest.approx([0.5, 0.5])
    assert worker_slice_rates([], [], 4) == [] and worker_slice_rates([1.0], [1.0], 4) == []
    # Workers add up slice by slice, each over its own span.
    assert slice_qps([([0, 1], [1, 2]), ([10, 12], [12, 14])], 2) == pytest.approx([1.5, 1.5])


def test_the_engine_writes_slices_whose_mean_is_the_qps(tmp_path):
    result = diagnose([("slow", flaky.slow)], range(30), out_dir=tmp_path, levels=(1, 2), executors=("thread", "process"),
                      duration_s=0.4, warmup_s=0.05, gil=False, progress=None)
    points = [r for r in read_diagnostic(tmp_path).records if isinstance(r, fmt.SweepPoint)]
    assert len(points) == 4
    for p in points:
        assert len(p.slice_qps) == fmt.SLICES and statistics.fmean(p.slice_qps) == pytest.approx(p.qps, rel=1e-9)
        assert 1 <= len(p.slice_cpu_pct) == len(p.slice_machine_cpu_pct) <= fmt.SLICES
    # A sleeping stage's slices agree: the QPS interval is the between-recordings term and little more.
    spread = level_spread(sweep_frame(result.records))
    assert (spread["qps_log_sd"] >= BETWEEN_RECORDINGS_PCT / 100).all()
    assert (spread["qps_low"] < spread["qps"]).all() and (spread["qps"] < spread["qps_high"]).all()


def _env(cores=2):
    return fmt.Environment(wall_time_s=0, cpu_count=cores, python="3", implementation="cpython", free_threaded=False,
                           gil_enabled=True, process_start_method="fork", levels=[1, 2, 4],
                           executors=["thread", "process"], warmup_s=0, duration_s=1)


def _point(stage, executor, c, qps, cpu, machine, spread_pct=2.0, slices=True):
    """A level whose 8 slices alternate qps +- spread_pct % (mean qps)."""
    d = qps * spread_pct / 100
    sl = [qps + d * (1 if k % 2 else -1) for k in range(fmt.SLICES)] if slices else []
    return fmt.SweepPoint(stage=stage, executor=executor, concurrency=c, items=100, errors=0, qps=qps,
                          p50_latency_s=0.01, p90_latency_s=0.02, cpu_pct=cpu, machine_cpu_pct=machine,
                          peak_memory_bytes=1, duration_s=1, slice_qps=sl,
                          slice_cpu_pct=[cpu] * fmt.SLICES if slices else [])


def _run(threads, held, procs=None, stage="augment", slices=True):
    """threads/procs: [(level, qps, cpu %, machine %)]; held: GIL-held share."""
    records = [_env()]
    records += [_point(stage, "thread", c, q, cpu, m, slices=slices) for c, q, cpu, m in threads]
    records += [_point(stage, "process", c, q, cpu, m, slices=slices) for c, q, cpu, m in procs or []]
    records += [fmt.GilRecord(stage=stage, concurrency=2, sampler="py-spy", total_samples=int(200 * held),
                              held_share=held, rate_hz=200, duration_s=1.0),
                fmt.StageSummary(stage=stage, index=0, kind="map", inputs=10)]
    return records


# augment on 2 cores: speed-up x1.45 reads "scales" (>= 1.4), x1.35 at a full machine "CPU-saturated".
SCALES = [(1, 100.0, 100, 100), (2, 145.0, 190, 195), (4, 146.0, 195, 198)]
SATURATED = [(1, 100.0, 100, 100), (2, 135.0, 188, 195), (4, 136.0, 195, 198)]


def _row(base, exp, stage="augment"):
    return diff_diagnostic(base, exp).set_index("stage").loc[stage]


def test_a_verdict_flip_near_a_threshold_is_within_noise():
    row = _row(_run(SCALES, 0.10), _run(SATURATED, 0.12))
    assert (row.verdict_baseline, row.verdict_experimental) == ("scales", "cpu_saturated")
    assert row.change == "within_noise" and not row.verdict_changed
    assert row.change_reason.startswith("verdicts differ (scales vs CPU-saturated) but within noise: best thread QPS x0.93 ± ")
    # The interval: the two levels' spreads in quadrature, 99 %.
    se = 0.02 * 135 / 135 / math.sqrt(fmt.SLICES) * math.sqrt(fmt.SLICES / (fmt.SLICES - 1))  # sd(ddof=1) / sqrt(n)
    sd = math.sqrt(2 * (se ** 2 + (BETWEEN_RECORDINGS_PCT / 100) ** 2))
    assert row.best_thread_qps_ratio == pytest.approx(135 / 145)
    assert row.best_thread_qps_ratio_low == pytest.approx(135 / 145 * math.exp(-Z * sd), rel=1e-3)
    assert row.best_thread_qps_ratio_high == pytest.approx(135 / 145 * math.exp(Z * sd), rel=1e-3)


def test_a_stage_made_gil_bound_reads_changed():
    flat = [(1, 100.0, 100, 100), (2, 101.0, 100, 100), (4, 100.0, 100, 100)]
    row = _row(_run(SCALES, 0.10), _run(flat, 0.98, procs=[(1, 100.0, 100, 100), (2, 190.0, 198, 198)]))
    assert row.verdict_experimental == "gil_bound" and row.change == "changed" and row.verdict_changed
    assert "beyond noise" in row.change_reason and "thread speed-up at 2 x0.70" in row.change_reason
    assert "GIL held 10 % vs 98 %" in row.change_reason


def test_a_change_that_rests_on_one_window_is_within_noise():
    # Same code; the baseline's two-thread window ran wholly at half speed (a host's slow second), every slice
    # steady: the speed-up at 2 moves beyond its interval, and it is the only evidence that does.
    slow_at_2 = [(1, 100.0, 100, 100), (2, 100.0, 190, 195), (4, 146.0, 195, 198)]
    procs = [(1, 100.0, 100, 100), (2, 190.0, 198, 198)]
    row = _row(_run(slow_at_2, 0.10, procs=procs), _run(SCALES, 0.10, procs=procs))
    assert (row.verdict_baseline, row.verdict_experimental) == ("cpu_saturated", "scales")
    assert row.change == "within_noise" and not row.verdict_changed
    assert "beyond noise (thread speed-up at 2 x1.45 ± " in row.change_reason
    assert ("rests on the baseline run's thread x1 and x2 levels and the experimental run's thread x1 and x2 "
            "levels, each measured once, by less than a host that slowed one of those windows moves it (x2)") \
        in row.change_reason
    # The stage made slower at every level, GIL share unchanged: the processes' best QPS, read at other levels,
    # agrees with the threads', so the change no longer rests on one window.
    slower = [(1, 50.0, 100, 100), (2, 52.0, 100, 100), (4, 51.0, 100, 100)]
    row = _row(_run(SCALES, 0.10, procs=procs), _run(slower, 0.10, procs=[(1, 50.0, 100, 100), (2, 95.0, 198, 198)]))
    assert row.verdict_baseline != row.verdict_experimental
    assert row.change == "changed" and "best process QPS x0.50" in row.change_reason


def test_a_machine_crowded_by_other_processes_is_said_apart():
    # Same code, a neighbour took a core in the experimental run: threads gain nothing, the curves differ.
    crowded = [(1, 100.0, 100, 200), (2, 101.0, 100, 200), (4, 100.0, 100, 200)]
    base, exp = _run(SCALES, 0.10), _run(crowded, 0.11)
    assert others_cpu_pct(sweep_frame(exp), 2) == {"augment": pytest.approx(100.0)}
    row = _row(base, exp)
    assert row.verdict_baseline != row.verdict_experimental
    assert row.change == "machine_busy" and not row.verdict_changed
    assert "other processes took 100 % CPU in the experimental run" in row.change_reason
    stage = report(DiagnosticRun(path=None, records=exp, complete=True))["stages"][0]
    assert stage["crowded"] and stage["others_cpu_pct"] == pytest.approx(100.0)
    # Starved of CPU, a computing stage uses as little of it as a sleeping one: both read crowded.
    starved = _run([(1, 15.0, 13, 200), (2, 17.0, 20, 200), (4, 25.0, 29, 200)], 0.1)
    stage = report(DiagnosticRun(path=None, records=starved, complete=True))["stages"][0]
    assert stage["crowded"] and stage["others_cpu_pct"] == pytest.approx(187.0)


def test_results_without_slices_have_no_interval():
    base, exp = _run(SCALES, 0.10, slices=False), _run(SATURATED, 0.12, slices=False)
    row = _row(base, exp)
    assert row.change == "no_interval" and not row.verdict_changed and "no interval" in row.change_reason
    assert np.isnan(row.best_thread_qps_ratio_low) and np.isnan(row.best_thread_qps_ratio_high)
    point = report(DiagnosticRun(path=None, records=base, complete=True))["stages"][0]["curves"][0]["points"][0]
    assert point["qps_low"] is None and point["cpu_pct_high"] is None
    # The GIL share needs no slices: a stage that became GIL-bound still reads changed.
    flat = [(1, 100.0, 100, 100), (2, 101.0, 100, 100), (4, 100.0, 100, 100)]
    assert _row(base, _run(flat, 0.98, slices=False)).change == "changed"


def test_a_best_concurrency_moves_only_beyond_noise():
    base = _run([(1, 100.0, 100, 100), (2, 180.0, 190, 195), (4, 181.0, 195, 198)], 0.1)
    nudged = _run([(1, 100.0, 100, 100), (2, 180.0, 190, 195), (4, 191.0, 195, 198)], 0.1)  # 6 % more at 4
    leap = _run([(1, 100.0, 100, 100), (2, 180.0, 190, 195), (4, 300.0, 195, 198)], 0.1)
    row = _row(base, nudged)
    assert (row.best_thread_concurrency_baseline, row.best_thread_concurrency_experimental) == (2, 4)
    assert row.best_thread_concurrency_change == "within_noise"
    assert _row(base, leap).best_thread_concurrency_change == "changed"
    assert _row(base, base).best_thread_concurrency_change == "same" and _row(base, base).change == "same"


def test_gil_share_spread_is_binomial_plus_between_recordings():
    share, sd = gil_share_sd({"held_share": 0.5, "total_samples": 100, "rate_hz": 200, "duration_s": 1.0})
    assert share == 0.5 and sd == pytest.approx(math.sqrt(0.25 / 200 + 0.08 ** 2))
    # Nothing held: the samples taken are rate x duration.
    assert gil_share_sd({"held_share": 0.0, "total_samples": 0, "rate_hz": 100, "duration_s": 2.0})[1] == \
        pytest.approx(0.08)
    assert gil_share_sd({"skipped": "py-spy missing"}) is None and gil_share_sd(None) is None
