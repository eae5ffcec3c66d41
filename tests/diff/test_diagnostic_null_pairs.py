"""Diagnostic comparisons of real recordings (the real engine on
samples/diagnostic_sample.py, the demo's levels and durations): the same
code recorded twice never reads "changed", on a quiet machine or while
another process burns a core, and a stage made GIL-bound does."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import _on_samples_path
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
