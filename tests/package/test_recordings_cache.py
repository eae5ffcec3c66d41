"""The recordings cache's build (tests/support/recordings.py): whole-machine recordings one after another, the
`one_core` ones two at a time, each in a process pinned to a core of its own, a failure said and returned."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from support import recordings
from support.recordings import Recording


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv(recordings.ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(recordings, "REGISTRY", {})
    return recordings.REGISTRY


def _register(name: str, build, one_core: bool) -> Recording:
    rec = Recording(name, build, (Path(__file__).resolve(),), one_core)
    recordings.REGISTRY[name] = rec
    return rec


def _where(out: Path) -> dict:
    """What a build saw: its process, its cores and when it ran."""
    t0 = time.time()
    time.sleep(0.4)
    return {"pid": os.getpid(), "cores": sorted(os.sched_getaffinity(0)), "t0": t0, "t1": time.time()}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: the one-core lanes are one lane")
def test_one_core_recordings_are_built_side_by_side_on_a_core_each(registry, tmp_path):
    whole = _register("whole", _where, one_core=False)
    a = _register("lane_a", _where, one_core=True)
    b = _register("lane_b", _where, one_core=True)

    def fails(out: Path):
        raise RuntimeError("the script exited 3")

    bad = _register("lane_bad", fails, one_core=True)
    said: list[str] = []
    assert recordings.build_all(said.append) == ["lane_bad"]
    got = {rec.name: rec.copy_to(tmp_path / rec.name) for rec in (whole, a, b)}
    assert got["whole"]["pid"] == os.getpid() and len(got["whole"]["cores"]) >= 2  # made here, on every core
    assert got["lane_a"]["pid"] != os.getpid() and got["lane_b"]["pid"] != os.getpid()
    assert len(got["lane_a"]["cores"]) == len(got["lane_b"]["cores"]) == 1
    assert got["lane_a"]["cores"] != got["lane_b"]["cores"]
    # At once: each started before the other ended; and after the whole-machine one.
    assert got["lane_a"]["t0"] < got["lane_b"]["t1"] and got["lane_b"]["t0"] < got["lane_a"]["t1"]
    assert min(got["lane_a"]["t0"], got["lane_b"]["t0"]) >= got["whole"]["t1"]
    assert not (recordings.cache_root() / f"lane_bad-{bad.key()}").exists()
    assert any(line.startswith("recording lane_bad: FAILED") and "exited 3" in line for line in said), said
    assert said[-1].startswith("3 of 4 recordings ready")

    # Built once: a second build says each is cached, in this process.
    said.clear()
    assert recordings.build_all(said.append) == ["lane_bad"]
    assert {line.split(":")[0] for line in said if line.endswith("cached")} == {
        "recording whole", "recording lane_a", "recording lane_b"}


def test_the_cache_is_the_users_shared_by_every_clone_unless_told_or_unwritable(tmp_path, monkeypatch):
    monkeypatch.delenv(recordings.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert recordings.cache_root() == tmp_path / "xdg" / "tb_pipeline_plugin" / "test-recordings"
    assert recordings.cache_root().is_dir()
    monkeypatch.setenv(recordings.ENV, str(tmp_path / "told"))
    assert recordings.cache_root() == tmp_path / "told"
    monkeypatch.delenv(recordings.ENV)
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # cannot hold the cache: the checkout's
    assert recordings.cache_root() == recordings.REPO_ROOT / ".cache" / "test-recordings"


def test_an_entry_a_failed_test_read_is_recorded_again_by_the_next_build(registry, tmp_path):
    built: list[int] = []

    def count(out: Path):
        built.append(os.getpid())
        return len(built)

    rec = _register("counted", count, one_core=False)
    other = _register("other", count, one_core=False)
    recordings.build_all(lambda line: None)
    assert built and len(built) == 2
    recordings.reading_for("tests/x/test_reads.py")
    try:
        assert rec.copy_to(tmp_path / "a") == 1
        assert recordings.doubt("tests/x/test_reads.py") == ["counted"]
        assert recordings.doubt("tests/x/test_other.py") == []
    finally:
        recordings.reading_for(None)
    assert rec.copy_to(tmp_path / "b") == 1  # this session reads it still, the mark not copied
    assert not (tmp_path / "b" / recordings.SUSPECT).exists()
    said: list[str] = []
    recordings.build_all(said.append)
    assert rec.copy_to(tmp_path / "c") == 3 and other.copy_to(tmp_path / "d") == 2
    assert any(line.startswith("recording counted: recorded again (a test of tests/x/test_reads.py failed")
               for line in said), said


def test_a_recording_made_from_another_is_made_again_when_that_one_is(registry, tmp_path):
    """`after`: the route snapshot of commit BEFORE is taken on the demo pair's entry, so a demo pair recorded
    again (same key, other numbers) must not be compared with a snapshot of the old one."""
    made: list[int] = []

    def base_build(out: Path):
        (out / "numbers").write_text(str(time.perf_counter_ns()))
        return None

    def registered() -> tuple[Recording, Recording]:  # as a new process registers them (keys not yet known)
        recordings.REGISTRY.clear()
        base = _register("base", base_build, one_core=False)

        def from_base(out: Path):
            made.append(1)
            return (base.path() / "numbers").read_text()

        derived = Recording("derived", from_base, (Path(__file__).resolve(),), False, (base,))
        recordings.REGISTRY["derived"] = derived
        return base, derived

    base, derived = registered()
    assert recordings.build_all(lambda line: None) == []
    first = derived.copy_to(tmp_path / "a")
    assert first == (base.path() / "numbers").read_text() and len(made) == 1
    base2, derived2 = registered()
    assert derived2.key() == derived.key()  # nothing changed: the same entry
    assert recordings.build_all(lambda line: None) == [] and len(made) == 1
    recordings.reading_for("tests/x/test_reads.py")
    try:
        base2.copy_to(tmp_path / "b")
        assert recordings.doubt("tests/x/test_reads.py") == ["base"]
    finally:
        recordings.reading_for(None)
    base3, derived3 = registered()
    assert recordings.build_all(lambda line: None) == []
    again = derived3.copy_to(tmp_path / "c")
    assert base3.key() == base.key() and derived3.key() != derived.key()
    assert len(made) == 2 and again == (base3.path() / "numbers").read_text() != first
    # Both doubted (a test read both): the one made from the other is left for its new key, not dropped by
    # computing its old one, which would record the other outside the build's own reporting.
    recordings.reading_for("tests/x/test_reads.py")
    try:
        derived3.copy_to(tmp_path / "d")
        assert recordings.doubt("tests/x/test_reads.py") == ["base", "derived"]
    finally:
        recordings.reading_for(None)
    base4, derived4 = registered()
    said: list[str] = []
    assert recordings.build_all(said.append) == []
    assert any(line.startswith("recording base: recorded again") for line in said), said
    assert any(line.startswith("recording base: recorded in") for line in said), said
    assert any(line.startswith("recording derived: recorded in") for line in said), said
    assert len(made) == 3 and derived4.copy_to(tmp_path / "e") == (base4.path() / "numbers").read_text() != again
