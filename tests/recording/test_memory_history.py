"""`--profile ...,memory=1` records the CUDA allocator's history and dumps a snapshot (record/memory_history.py):
on the CPU nothing changes (no torch.cuda.memory call, no file); on CUDA a snapshot the plugin reads."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tb_pipeline_plugin.record import profiling  # noqa: E402
from tb_pipeline_plugin.record.memory_history import MemoryHistory  # noqa: E402
from tb_pipeline_plugin.record.profiling import LauncherProfiler, parse_schedule  # noqa: E402


class _Rec:
    def __init__(self, run_dir):
        self.run_dir = str(run_dir)


def _forbid(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("torch.cuda.memory called on a CPU run")
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", boom)
    monkeypatch.setattr(torch.cuda.memory, "_dump_snapshot", boom)


@pytest.mark.parametrize("memory", [0, 1])
def test_on_the_cpu_nothing_changes(tmp_path, monkeypatch, memory):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    _forbid(monkeypatch)
    # A LauncherProfiler wraps torch.profiler's start() for the whole process (a recording's); here that would
    # outlive the test and send later tests' profilers to this stand-in recorder, which writes nothing.
    monkeypatch.setattr(profiling, "when_imported", lambda *a, **k: None)
    launcher = LauncherProfiler(_Rec(tmp_path), parse_schedule(f"memory={memory}"))
    h = launcher.memory_history
    h.start()
    h.dump()
    assert not h.recording and h.path is None
    assert list(tmp_path.iterdir()) == []


def test_without_memory_1_cuda_records_no_history(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    _forbid(monkeypatch)
    h = MemoryHistory(str(tmp_path), wanted=False)
    h.start()
    h.dump()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_a_snapshot_lands_in_the_run_directory(tmp_path):
    from tb_pipeline_plugin.sources.snapshots import run_snapshot

    h = MemoryHistory(str(tmp_path), wanted=True)
    h.start()
    x = torch.ones(1024, 1024, device="cuda")
    y = x @ x
    del y
    h.dump()
    snap = run_snapshot(str(tmp_path))
    assert snap.file and snap.file.startswith("memory_snapshot.") and not snap.messages
    assert snap.devices[0].peak_allocated_bytes >= 2 * 4 * 1024 * 1024
