"""`tb-pipeline diff` on real recorded runs and the HTA GPU pair."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from support.json_oracle import duration_by_name, load_events
from tb_pipeline_plugin import cli


def trace_file(run_dir) -> str:
    (path,) = glob.glob(str(run_dir / "*.pt.trace.json*"))
    return path


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def overview_line(text: str, metric: str) -> list[str]:
    return next(line.split() for line in text.splitlines() if line.startswith(metric + " "))


def test_diff_prints_overview_and_top_operators(capsys, recorded_logdir):
    code, out, _ = run_cli(capsys, "diff", str(recorded_logdir / "baseline"), str(recorded_logdir / "experimental"), "--top", "3")
    assert code == 0
    assert "Overview (delta = experimental - baseline)" in out
    for metric in ("avg_step_time_us", "breakdown_us.data_loading", "memory.peak_bytes"):
        assert overview_line(out, metric)
    steps = overview_line(out, "steps")
    assert steps[:5] == ["steps", "count", "3", "3", "0"]
    section = out.split("Top 3 operators by |delta host_self_us| (µs)")[1].split("Top 3 kernels")[0]
    rows = [line for line in section.strip().splitlines()[1:] if line.strip()]
    assert len(rows) == 3
    assert "(no kernels in either trace)" in out


def test_fail_if_gates_on_a_regression(capsys, recorded_logdir):
    base, slow = str(recorded_logdir / "baseline"), str(recorded_logdir / "slow_loader")
    code, out, _ = run_cli(capsys, "diff", base, slow, "--fail-if", "breakdown_us.data_loading>100")
    assert code == cli.EXIT_REGRESSION
    assert "REGRESSION: breakdown_us.data_loading changed +" in out
    # The same change against a limit it stays under passes; a drop gate on a rise too.
    code, out, _ = run_cli(capsys, "diff", base, slow, "--fail-if", "breakdown_us.data_loading>1000000",
                           "--fail-if", "avg_step_time_us<-50")
    assert code == cli.EXIT_OK and "REGRESSION" not in out
    # Identical runs never trip a gate.
    code, _, _ = run_cli(capsys, "diff", base, base, "--fail-if", "avg_step_time_us>0", "--fail-if", "steps<0")
    assert code == cli.EXIT_OK


def test_gate_parsing_and_zero_baselines():
    gate = cli.parse_gate("avg_step_time_us>5")
    assert gate == cli.Gate("avg_step_time_us", ">", 5.0)
    assert cli.parse_gate(" gpu_utilization_pct < -10% ") == cli.Gate("gpu_utilization_pct", "<", -10.0)
    for bad in ("avg_step_time_us", "avg_step_time_us=5", "device>5", "nope>5", "avg_step_time_us>x"):
        with pytest.raises(Exception):
            cli.parse_gate(bad)
    up = {"delta": 3.0, "delta_pct": None}  # from a baseline of 0
    assert cli.Gate("breakdown_us.kernel", ">", 5).check(up)
    assert cli.Gate("breakdown_us.kernel", "<", -5).check(up) is None
    assert cli.Gate("breakdown_us.kernel", ">", 5).check({"delta": 0, "delta_pct": None}) is None
    null = {"baseline": None, "experimental": 100.0, "delta": None, "delta_pct": None}
    assert cli.Gate("memory.avg_bytes", ">", 5).check(null) is None
    assert "null for the baseline" in cli.Gate("memory.avg_bytes", ">", 5).unavailable(null)
    both = {"baseline": None, "experimental": None, "delta": None, "delta_pct": None}
    assert "baseline and experimental" in cli.Gate("memory.avg_bytes", ">", 5).unavailable(both)
    assert cli.Gate("breakdown_us.kernel", ">", 5).unavailable({"baseline": 0.0, "experimental": 3.0, **up}) is None


def test_a_gate_on_a_null_metric_cannot_pass(capsys, recorded_logdir):
    """CPU runs have no GPU utilization: gating on it must not pass silently."""
    base, exp = str(recorded_logdir / "baseline"), str(recorded_logdir / "experimental")
    code, out, err = run_cli(capsys, "diff", base, exp, "--fail-if", "gpu_utilization_pct<-10",
                             "--fail-if", "avg_step_time_us>1000000")
    assert code == cli.EXIT_CANNOT_EVALUATE == 2
    assert "CANNOT EVALUATE: --fail-if gpu_utilization_pct<-10: gpu_utilization_pct is null for the baseline and experimental" in out
    assert "cannot evaluate" in err and "REGRESSION" not in out
    # Without that gate the same comparison passes.
    code, _, _ = run_cli(capsys, "diff", base, exp, "--fail-if", "avg_step_time_us>1000000")
    assert code == cli.EXIT_OK


def test_gpu_pair_lists_kernels(capsys, shared_traces):
    d = shared_traces / "trace_diff"
    code, out, _ = run_cli(capsys, "diff", str(d / "control.json.gz"), str(d / "test.json.gz"), "--top", "2",
                           "--group-by", "name_and_shape", "--fail-if", "avg_step_time_us>50")
    assert code == cli.EXIT_REGRESSION  # the V100 run takes twice as long per step
    assert "Top 2 operators by |delta device_self_us| (µs)" in out and "input_shape" in out
    kernels = out.split("Top 2 kernels by |delta total_us| (µs)")[1].strip().splitlines()
    b_sum = duration_by_name(load_events(d / "control.json.gz")[1], ("kernel",))
    e_sum = duration_by_name(load_events(d / "test.json.gz")[1], ("kernel",))
    leader = max(set(b_sum) | set(e_sum), key=lambda n: abs(e_sum.get(n, 0.0) - b_sum.get(n, 0.0)))
    # Rows show the short display name (analysis/kernel_names.py); "Full names:" below maps it to the trace's.
    full_names = dict(line.strip().split(" = ", 1)[::-1] for line in
                      out.split("Full names:")[1].split("\n\n")[0].strip().splitlines())
    assert leader in full_names, leader
    assert kernels[1].startswith(full_names[leader][:50])


def test_usage_errors_exit_2(capsys, tmp_path, recorded_logdir):
    code, _, err = run_cli(capsys, "diff", str(tmp_path / "missing"), str(recorded_logdir / "baseline"))
    assert code == cli.EXIT_USAGE and "no trace file or run directory" in err
    with pytest.raises(SystemExit) as info:
        cli.main(["diff", "a", "b", "--fail-if", "bogus>1"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        cli.main([])
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(capsys, "diff", str(tmp_path / "empty"), str(recorded_logdir / "baseline"))
    assert code == cli.EXIT_USAGE and "no trace files" in err


def test_console_script_entry_point(recorded_logdir):
    """`python -m tb_pipeline_plugin.cli` and the installed `tb-pipeline` agree."""
    base = trace_file(recorded_logdir / "baseline")
    args = ["diff", base, base, "--top", "1", "--fail-if", "avg_step_time_us>0"]
    proc = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.cli", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    script = os.path.join(os.path.dirname(sys.executable), "tb-pipeline")
    if os.path.exists(script):
        proc2 = subprocess.run([script, *args], capture_output=True, text=True, timeout=120)
        assert proc2.returncode == 0 and proc2.stdout == proc.stdout


def test_diff_prints_the_explanation_and_gates_on_significance(capsys, recorded_logdir):
    base, slow = str(recorded_logdir / "baseline"), str(recorded_logdir / "slow_loader")
    # 20 ms of sleep per batch against steps of a few ms: data loading, well outside the noise.
    code, out, _ = run_cli(capsys, "diff", base, slow, "--fail-if", "breakdown_us.data_loading>100",
                           "--require-significance")
    assert code == cli.EXIT_REGRESSION, out
    verdict, first = out.splitlines()[3:5]  # the verdict first, then the sentence
    assert verdict.startswith("Slower: +") and verdict.endswith("steps)") and "significant" in verdict
    assert first.startswith("Experimental is ") and "slower per step" in first and "data loading" in first
    assert "Top 10 contributors to the step-time delta" in out
    assert overview_line(out, "breakdown_us.data_loading")[-1] == "significant"
    # A run against itself: every delta is 0, within noise. A gate that trips
    # on it (any change >= -1 %) fails without the flag, not with it.
    code, out, _ = run_cli(capsys, "diff", base, base, "--fail-if", "avg_step_time_us>-1")
    assert code == cli.EXIT_REGRESSION
    code, out, _ = run_cli(capsys, "diff", base, base, "--fail-if", "avg_step_time_us>-1", "--require-significance")
    assert code == cli.EXIT_OK and "NOT SIGNIFICANT: avg_step_time_us changed +0.00%" in out
    assert "within noise: the delta is inside the runs' noise" in out
    assert out.splitlines()[3].startswith("No significant change: +0 µs per step (+0.00 %) is within noise")
    assert "no contributor changed significantly" in out.splitlines()[4]


def test_between_run_pct_widens_the_band_for_one_diff(capsys, recorded_logdir, monkeypatch):
    from tb_pipeline_plugin.diff.significance import method as S

    monkeypatch.delenv(S.BETWEEN_RUN_ENV, raising=False)
    base, slow = str(recorded_logdir / "baseline"), str(recorded_logdir / "slow_loader")

    def band(*extra) -> str:
        code, out, _ = run_cli(capsys, "diff", base, slow, "--top", "1", *extra)
        assert code == cli.EXIT_OK, out
        return out.splitlines()[4].split("±", 1)[1].split(",", 1)[0].strip()

    def ms(text: str) -> float:
        value, unit = text.split()
        return float(value) * {"µs": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    assert ms(band("--between-run-pct", "30")) > ms(band("--between-run-pct", "0"))
    assert band() == band("--between-run-pct", str(S.BETWEEN_RUN_PCT))
    # Set for that diff only.
    assert S.BETWEEN_RUN_ENV not in os.environ
    with pytest.raises(SystemExit) as info:
        cli.main(["diff", base, slow, "--between-run-pct", "-3"])
    assert info.value.code == 2
