"""SPDL 0.8 stage statistics dumped by users' own hook subclasses (real
output in ../shared/spdl/, produced by spdl_toy.py and spdl_shim.py there)
read as pipeline statistics: per-stage QPS agrees with SPDL's own log lines
of the same run, and two such runs diff stage by stage."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from tb_pipeline_plugin.diff.significance.method import NoisePolicy
from tb_pipeline_plugin.analysis.statistics.report import report, stage_table
from tb_pipeline_plugin.diff.statistics.compare import compare_pipeline
from tb_pipeline_plugin.readers import load_pipeline_run

QUEUE_LINE = re.compile(r"\[(?P<stage>\d+:\w+:.+?)_queue\]\s+Processed\s+\d+ items in .*?\(QPS:\s*(?P<qps>[\d.]+)\)")


@pytest.fixture(scope="module")
def spdl_dir(repo_root):
    path = (repo_root.parent / "shared" / "spdl").resolve()
    if not (path / "run_stats.jsonl").is_file():
        pytest.skip(f"SPDL samples not found at {path}")
    return path


def _run(tmp_path, spdl_dir, name):
    run = tmp_path / name.split(".")[0]
    (run / "pipeline").mkdir(parents=True)
    shutil.copy(spdl_dir / name, run / "pipeline" / name)
    return load_pipeline_run(str(run))


def test_interval_dumps_agree_with_spdl_log(tmp_path, spdl_dir):
    tables = _run(tmp_path, spdl_dir, "run_stats.jsonl")
    assert tables.warnings == []
    stages = stage_table(tables.stage_tasks, tables.stage_queues).set_index("stage")
    final = {}
    for m in QUEUE_LINE.finditer((spdl_dir / "run_log.txt").read_text()):
        final[m.group("stage")] = float(m.group("qps"))  # the last line of a queue is its whole-run report
    assert set(final) == set(stages.index)
    for stage, qps in final.items():
        # The dump has interval reports only: their sum covers the run but its last partial interval.
        assert stages.loc[stage, "qps"] == pytest.approx(qps, rel=0.10), stage


def test_two_dumped_runs_diff_stage_by_stage(tmp_path, spdl_dir):
    run = _run(tmp_path, spdl_dir, "run_stats.jsonl")
    shim = _run(tmp_path, spdl_dir, "shim_stats.jsonl")
    assert shim.warnings == ["shim_stats.jsonl: records of unknown type ignored: 'spdl profile' (4)"]
    diff = compare_pipeline(run, shim, noise=NoisePolicy())
    json.dumps(diff, allow_nan=False)  # the route's payload is plain JSON
    rows = diff["stages"]
    assert {r["stage_name"] for r in rows} == set(stage_table(run.stage_tasks, run.stage_queues)["stage_name"])
    # Largest |delta| first; a stage a side timed no task of has no delta (null, never 0), after the others.
    measured = [r["delta_task_mean_s"] is not None for r in rows]
    assert measured == sorted(measured, reverse=True)
    deltas = [abs(r["delta_task_mean_s"]) for r in rows if r["delta_task_mean_s"] is not None]
    assert deltas == sorted(deltas, reverse=True)
    for r in rows:
        assert r["delta_qps"] == pytest.approx(r["experimental_qps"] - r["baseline_qps"])
    assert report(run)["bottleneck"]["starving_queue"] == "0:3:numpy_sort[4]_queue"


def test_one_busy_core_is_flagged_as_the_gil(tmp_path, spdl_dir):
    """spdl_toy's run on the 2-core box: GIL-holding stages take turns. With
    host samples at about one core the verdict says so."""
    import msgspec

    from tb_pipeline_plugin.formats.pipeline import HostSample, RunMeta

    tables = _run(tmp_path, spdl_dir, "run_stats.jsonl")
    t0 = float(tables.stage_queues["wall_time_s"].min())
    lines = [RunMeta(wall_time_s=t0, command=["spdl_toy.py", "run"], pid=1, python="3.11", cpu_count=2)]
    lines += [HostSample(wall_time_s=t0 + k * 0.5, cpu_pct=pct, rss_bytes=1 << 28)
              for k, pct in enumerate([97.0, 103.0, 99.0, 101.0])]
    (tmp_path / "run_stats" / "pipeline" / "host_1.jsonl").write_bytes(msgspec.json.Encoder().encode_lines(lines))
    summary = report(load_pipeline_run(str(tmp_path / "run_stats")))["bottleneck"]["summary"]
    assert "about one core (100% of 2)" in summary
    # Without host samples near one core, no such claim.
    assert "one core" not in report(tables)["bottleneck"]["summary"]
