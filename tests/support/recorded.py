"""The recordings many modules read, each made once (support/recordings.py): conftest's `recorded_logdir`,
`recorded_profiles` and `diagnostic_logdir`, and the demo pair test_e2e_demo and test_e2e_report read."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from support.recordings import REPO_ROOT, recording

# Run name -> record_run kwargs of the session logdir.
RECORDED_RUNS = {
    "baseline": dict(layers=4),
    "experimental": dict(layers=5),
    "slow_loader": dict(layers=4, loader_delay_s=0.02),
}


def _on_samples_path() -> None:
    samples = str(REPO_ROOT / "samples")
    if samples not in sys.path:
        sys.path.insert(0, samples)


def _record_samples():
    _on_samples_path()
    import record_samples

    return record_samples


@recording(name="recorded_logdir", sources=["samples/record_samples.py"])
def recorded_runs(out: Path) -> dict:
    """The runs of RECORDED_RUNS under out/logdir; returns each one's `prof.key_averages()` (what the tests
    read of it) as JSON."""
    record_samples = _record_samples()
    averages = {}
    for name, kwargs in RECORDED_RUNS.items():
        prof = record_samples.record_run(str(out / "logdir" / name), **kwargs)
        averages[name] = [{attr: getattr(ev, attr) for attr in KEY_AVERAGE_FIELDS} for ev in prof.key_averages()]
    return {"logdir": out / "logdir", "key_averages": averages}


# What tests read of torch's `key_averages()` rows, kept from the recording.
KEY_AVERAGE_FIELDS = ("key", "count", "cpu_time_total", "self_cpu_time_total", "cpu_time", "cpu_memory_usage",
                      "self_cpu_memory_usage")


class RecordedProfile:
    """What a `torch.profiler.profile` says of its own recording, kept when it was recorded:
    `key_averages()` gives its rows (`key`, `count`, `cpu_time_total`, `self_cpu_time_total`, ...), as torch
    computed them."""

    def __init__(self, rows: list[dict]):
        self._rows = [SimpleNamespace(**row) for row in rows]

    def key_averages(self) -> list:
        return list(self._rows)


# Diagnostic-mode runs of the session's diagnostic logdir -> variant of samples/diagnostic_sample.py.
DIAGNOSTIC_RUNS = {"diag_baseline": "baseline", "diag_experimental": "experimental"}


@recording(name="diagnostic_logdir", sources=["samples/diagnostic_sample.py"])
def diagnostic_runs(out: Path) -> None:
    _on_samples_path()
    import diagnostic_sample

    for run, variant in DIAGNOSTIC_RUNS.items():
        result = diagnostic_sample.record_diagnostic(str(out), run, variant)
        assert not result.cut_short, result.reason


@recording(name="demo_pair", sources=["samples/record_demo.py", "samples/train_demo.py"])
def demo_pair(out: Path) -> None:
    """The demo pair `make demo` serves: samples/train_demo.py's two variants, each through
    `tb-pipeline record --profile` and diagnostic mode (samples/record_demo.py); test_e2e_demo and
    test_e2e_report read it."""
    _on_samples_path()
    import record_demo

    record_demo.record_demo(str(out), quiet=True)
