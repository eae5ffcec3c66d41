"""Diagnostic comparisons of real recordings (the real engine on
samples/diagnostic_sample.py, the demo's levels and durations): the same
code recorded twice never reads "changed", on a quiet machine or while
another process burns a core, and a stage made GIL-bound does.

The sweeps are one recording (`null_pair_runs`, tests/support/recordings.py), made alone before the tests,
the busy machine's burners with them: the tests read the records and measure nothing."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import _on_samples_path
from tb_pipeline_plugin.analysis.diagnostic.report import verdicts
from tb_pipeline_plugin.diff.diagnostic.compare import diff_diagnostic
from tb_pipeline_plugin.readers.diagnostic import read_diagnostic

from support.recordings import recording

BUSY_LOOP = "while True: pass"


# Each recorded run: (its variant, how many processes burn a core beside it). busy_a and busy_b share one
# pair of burners, started before the first and killed after the second.
RUNS = {"again": ("baseline", 0), "busy_a": ("baseline", 1), "busy_b": ("baseline", 1),
        "gil_augment": ("gil_augment", 0), "starved": ("gil_augment", 3)}


def _burning(n: int) -> list:
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(n)]


def _stop(burners: list) -> None:
    for b in burners:
        b.kill()
        b.wait()


@recording(sources=["samples/diagnostic_sample.py"])
def null_pair_runs(out: Path) -> None:
    _on_samples_path()
    import diagnostic_sample

    burners: list = []
    try:
        for run, (variant, burn) in RUNS.items():
            if len(burners) != burn:
                _stop(burners)
                burners = _burning(burn)
            result = diagnostic_sample.record_diagnostic(str(out), run, variant)
            assert not result.cut_short, result.reason
    finally:
        _stop(burners)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return null_pair_runs.copy_to(tmp_path_factory.mktemp("null_pairs"))


def _record(logdir: Path, run: str):
    return read_diagnostic(logdir / run).records


def _changes(base, exp) -> dict:
    frame = diff_diagnostic(base, exp)
    return {r["stage"]: r for r in frame.to_dict("records")}


def _assert_no_change(rows: dict) -> None:
    for stage, row in rows.items():
        assert row["change"] != "changed" and not row["verdict_changed"], (stage, row["change_reason"])
        assert row["change"] in ("same", "within_noise", "machine_busy"), (stage, row["change"], row["change_reason"])


def test_the_same_code_recorded_again_never_reads_changed(diagnostic_logdir, recorded):
    base = read_diagnostic(diagnostic_logdir / "diag_baseline").records
    _assert_no_change(_changes(base, _record(recorded, "again")))
    # The demo pair: augment's function is the same in both variants.
    demo = _changes(base, read_diagnostic(diagnostic_logdir / "diag_experimental").records)
    assert demo["augment"]["change"] != "changed", demo["augment"]["change_reason"]


def test_the_same_code_on_a_machine_another_process_keeps_busy_never_reads_changed(recorded):
    _assert_no_change(_changes(_record(recorded, "busy_a"), _record(recorded, "busy_b")))


def test_a_stage_made_gil_bound_reads_changed(diagnostic_logdir, recorded):
    base = read_diagnostic(diagnostic_logdir / "diag_baseline").records
    exp = _record(recorded, "gil_augment")
    gil = [r for r in exp if type(r).__name__ == "GilRecord" and r.stage == "augment"]
    if gil and gil[0].skipped:
        pytest.skip(f"GIL sampling impossible here: {gil[0].skipped}")
    rows = _changes(base, exp)
    augment = rows["augment"]
    assert augment["verdict_experimental"] == "gil_bound", augment
    assert augment["change"] == "changed" and augment["verdict_changed"], augment["change_reason"]
    assert "GIL held" in augment["change_reason"]
    _assert_no_change({s: r for s, r in rows.items() if s != "augment"})


def test_verdicts_hold_beside_more_cpu_hogs_than_cores(recorded):
    """Three processes burning CPU on this 2-core box starve the sweep: a pure-Python stage gets 0-35 % of
    a core and its level 1 least, so 4 threads once read "x9 at 4 workers with 0 % CPU": I/O-bound (3 of 4
    recordings before the in-calls rule, analysis/diagnostic/report.py:IO_IN_CALLS). Its workers sit outside
    their calls, a sleeping stage's inside them: the GIL-bound loops stay GIL-bound, the sleep I/O-bound."""
    records = _record(recorded, "starved")
    gil = [r for r in records if type(r).__name__ == "GilRecord"]
    if gil and all(r.skipped for r in gil):
        pytest.skip(f"GIL sampling impossible here: {gil[0].skipped}")
    table = verdicts(records).set_index("stage")
    for stage in ("decode", "augment"):  # pure-Python loops
        assert table.loc[stage, "verdict"] not in ("io_bound", "scales"), (stage, table.loc[stage, "reason"])
    assert table.loc["fetch", "verdict"] == "io_bound", table.loc["fetch", "reason"]
