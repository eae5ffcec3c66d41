"""Diagnostic comparisons of real recordings (the real engine on
samples/diagnostic_sample.py, the demo's levels and durations): the same
code recorded twice never reads "changed", on a quiet machine or while
another process burns a core, and a stage made GIL-bound does."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import _on_samples_path
from tb_pipeline_plugin.analysis.diagnostic.report import verdicts
from tb_pipeline_plugin.diff.diagnostic.compare import diff_diagnostic
from tb_pipeline_plugin.readers.diagnostic import read_diagnostic

_on_samples_path()
import diagnostic_sample  # noqa: E402

pytestmark = pytest.mark.timing(
    "records diagnostic sweeps in the test (one pair beside a core it keeps busy) and checks no QPS reads"
    " changed"
)

BUSY_LOOP = "while True: pass"


def _record(logdir, run: str, variant: str = "baseline"):
    result = diagnostic_sample.record_diagnostic(str(logdir), run, variant)
    assert not result.cut_short, result.reason
    return read_diagnostic(result.path).records


def _changes(base, exp) -> dict:
    frame = diff_diagnostic(base, exp)
    return {r["stage"]: r for r in frame.to_dict("records")}


def _assert_no_change(rows: dict) -> None:
    for stage, row in rows.items():
        assert row["change"] != "changed" and not row["verdict_changed"], (stage, row["change_reason"])
        assert row["change"] in ("same", "within_noise", "machine_busy"), (stage, row["change"], row["change_reason"])


def test_the_same_code_recorded_again_never_reads_changed(diagnostic_logdir, tmp_path):
    base = read_diagnostic(diagnostic_logdir / "diag_baseline").records
    _assert_no_change(_changes(base, _record(tmp_path, "again")))
    # The demo pair: augment's function is the same in both variants.
    demo = _changes(base, read_diagnostic(diagnostic_logdir / "diag_experimental").records)
    assert demo["augment"]["change"] != "changed", demo["augment"]["change_reason"]


def test_the_same_code_on_a_machine_another_process_keeps_busy_never_reads_changed(tmp_path):
    burner = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        first = _record(tmp_path, "busy_a")
        second = _record(tmp_path, "busy_b")
    finally:
        burner.kill()
        burner.wait()
    _assert_no_change(_changes(first, second))


def test_a_stage_made_gil_bound_reads_changed(diagnostic_logdir, tmp_path):
    base = read_diagnostic(diagnostic_logdir / "diag_baseline").records
    exp = _record(tmp_path, "gil_augment", "gil_augment")
    gil = [r for r in exp if type(r).__name__ == "GilRecord" and r.stage == "augment"]
    if gil and gil[0].skipped:
        pytest.skip(f"GIL sampling impossible here: {gil[0].skipped}")
    rows = _changes(base, exp)
    augment = rows["augment"]
    assert augment["verdict_experimental"] == "gil_bound", augment
    assert augment["change"] == "changed" and augment["verdict_changed"], augment["change_reason"]
    assert "GIL held" in augment["change_reason"]
    _assert_no_change({s: r for s, r in rows.items() if s != "augment"})


def test_verdicts_hold_beside_more_cpu_hogs_than_cores(tmp_path):
    """Three processes burning CPU on this 2-core box starve the sweep: a pure-Python stage gets 0-35 % of
    a core and its level 1 least, so 4 threads once read "x9 at 4 workers with 0 % CPU": I/O-bound (3 of 4
    recordings before the in-calls rule, analysis/diagnostic/report.py:IO_IN_CALLS). Its workers sit outside
    their calls, a sleeping stage's inside them: the GIL-bound loops stay GIL-bound, the sleep I/O-bound."""
    burners = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(3)]
    try:
        records = _record(tmp_path, "starved", "gil_augment")
    finally:
        for b in burners:
            b.kill()
            b.wait()
    gil = [r for r in records if type(r).__name__ == "GilRecord"]
    if gil and all(r.skipped for r in gil):
        pytest.skip(f"GIL sampling impossible here: {gil[0].skipped}")
    table = verdicts(records).set_index("stage")
    for stage in ("decode", "augment"):  # pure-Python loops
        assert table.loc[stage, "verdict"] not in ("io_bound", "scales"), (stage, table.loc[stage, "reason"])
    assert table.loc["fetch", "verdict"] == "io_bound", table.loc["fetch", "reason"]
