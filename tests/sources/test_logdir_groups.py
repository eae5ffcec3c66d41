"""Groups of recordings in discovery: a run directory with a valid
`recordings.json` is a group of the runs it names; a damaged manifest makes
no group and says why in `notes` (and the `runs` route's warnings), never
raises."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PLUGIN_PREFIX
from tb_pipeline_plugin.formats.group import MAX_MANIFEST_BYTES
from tb_pipeline_plugin.sources.logdir import discover_runs


def _statistics_run(path: Path) -> None:
    """The smallest run: a statistics file (no trace to parse)."""
    (path / "pipeline").mkdir(parents=True)
    (path / "pipeline" / "host_1.jsonl").write_text("")


def _group(root: Path, name: str, members: list[str], manifest) -> Path:
    group = root / name
    for m in members:
        _statistics_run(group / m)
    group.mkdir(parents=True, exist_ok=True)
    text = manifest if isinstance(manifest, (str, bytes)) else json.dumps(manifest)
    (group / "recordings.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    return group


def test_a_hand_written_manifest_makes_a_group(tmp_path):
    _group(tmp_path, "baseline", ["r1", "r2", "r3"], {"version": 1, "recordings": ["r2", "r1"]})
    runs = discover_runs(str(tmp_path))
    assert sorted(runs) == ["baseline", "baseline/r1", "baseline/r2", "baseline/r3"]
    group = runs["baseline"]
    assert group.kinds == ["pipeline", "group"] and group.workers() == [] and group.notes == []
    assert group.recordings == ["baseline/r2", "baseline/r1"]  # the manifest's order
    assert runs["baseline/r3"].kinds == ["pipeline"] and runs["baseline/r3"].recordings == []


def test_listed_recordings_that_hold_no_run_are_left_out(tmp_path):
    group = _group(tmp_path, "g", ["r1"], {"version": 1, "recordings": ["r1", "r2", "gone"], "extra": "ignored"})
    (group / "r2").mkdir()  # a directory, but no data in it
    runs = discover_runs(str(tmp_path))
    assert runs["g"].recordings == ["g/r1"]
    assert [n.split(",")[0] for n in runs["g"].notes] == ["recordings.json lists 'r2'", "recordings.json lists 'gone'"]


def test_a_group_directory_with_data_of_its_own(tmp_path):
    group = _group(tmp_path, "g", ["r1"], {"version": 1, "recordings": ["r1"]})
    _statistics_run(group)
    runs = discover_runs(str(tmp_path))
    assert runs["g"].kinds == ["pipeline", "group"] and runs["g"].recordings == ["g/r1"]


def test_the_logdir_itself_as_a_group(tmp_path):
    _group(tmp_path, ".", ["r1", "r2"], {"version": 1, "recordings": ["r1", "r2"]})
    runs = discover_runs(str(tmp_path))
    assert runs["."].kinds == ["pipeline", "group"] and runs["."].recordings == ["r1", "r2"]


def test_a_manifest_that_names_no_run_yet_makes_no_group(tmp_path):
    """`record --repeat` writes an empty list before its first recording ends."""
    _group(tmp_path, "g", ["r1"], {"version": 1, "recordings": []})
    runs = discover_runs(str(tmp_path))
    assert sorted(runs) == ["g/r1"] and runs["g/r1"].notes == []


@pytest.mark.parametrize("manifest, reason", [
    ("{\"version\": 1, \"recordings\": [\"r1\"", "not a group manifest"),
    ("", "not a group manifest"),
    ("[1, 2]", "not a group manifest"),
    ({"recordings": ["r1"]}, "missing required field `version`"),
    ({"version": 2, "recordings": ["r1"]}, "has version 2; this version reads 1"),
    ({"version": 1, "recordings": "r1"}, "not a group manifest"),
    ({"version": 1, "recordings": ["r1", "../elsewhere"]}, "names '../elsewhere', which is not a directory name"),
    ({"version": 1, "recordings": ["r1", "r1"]}, "names 'r1' twice"),
    ({"version": 1, "recordings": ["r1"], "exit_status": {"r1": "ok"}}, "not a group manifest"),
    (b"\xff\xfe{", "not a group manifest"),
    (b" " * (MAX_MANIFEST_BYTES + 1), "larger than"),
])
def test_a_damaged_manifest_gives_a_note_not_a_group(tmp_path, manifest, reason):
    _group(tmp_path, "g", ["r1", "r2"], manifest)
    runs = discover_runs(str(tmp_path))
    assert sorted(runs) == ["g/r1", "g/r2"]  # the directory holds no data: not listed
    for member in ("g/r1", "g/r2"):
        assert runs[member].recordings == [] and "group" not in runs[member].kinds
        [note] = runs[member].notes
        assert note.startswith("'g': not a group of recordings: recordings.json") and reason in note, note


def test_a_damaged_manifest_beside_data_notes_the_run_itself(tmp_path):
    group = _group(tmp_path, "g", ["r1"], "not json")
    _statistics_run(group)
    runs = discover_runs(str(tmp_path))
    assert runs["g"].kinds == ["pipeline"] and runs["g"].recordings == []
    assert runs["g"].notes[0].startswith("not a group of recordings:") and runs["g/r1"].notes == []


def test_an_unreadable_manifest_gives_a_note(tmp_path):
    group = _group(tmp_path, "g", ["r1"], {"version": 1, "recordings": ["r1"]})
    (group / "recordings.json").unlink()
    (group / "recordings.json").symlink_to(group / "missing.json")
    runs = discover_runs(str(tmp_path))
    assert "g" not in runs
    assert runs["g/r1"].notes == ["'g': not a group of recordings: recordings.json cannot be read "
                                  "(a broken link, or removed meanwhile)"]


def test_a_directory_named_like_the_manifest_is_no_manifest(tmp_path):
    group = _group(tmp_path, "g", ["r1"], {"version": 1, "recordings": ["r1"]})
    (group / "recordings.json").unlink()
    _statistics_run(group / "recordings.json")
    runs = discover_runs(str(tmp_path))
    assert sorted(runs) == ["g/r1", "g/recordings.json"] and runs["g/r1"].notes == []


def test_runs_route_carries_recordings_and_the_damage(tmp_path, make_tb_client):
    _group(tmp_path, "good", ["r1", "r2"], {"version": 1, "recordings": ["r1", "r2", "r9"]})
    _group(tmp_path, "bad", ["r1"], "{")
    _statistics_run(tmp_path / "plain")
    client = make_tb_client(tmp_path)
    resp = client.get(f"{PLUGIN_PREFIX}/runs")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    runs = {r["name"]: r for r in resp.get_json()["runs"]}
    assert sorted(runs) == ["bad/r1", "good", "good/r1", "good/r2", "plain"]
    good = runs["good"]
    assert good["recordings"] == ["good/r1", "good/r2"] and good["kinds"] == ["pipeline", "group"]
    assert good["status"] == "ready" and good["workers"] == []
    assert len(good["warnings"]) == 1 and "'r9'" in good["warnings"][0]
    assert runs["plain"]["recordings"] == [] and runs["plain"]["warnings"] == []
    assert runs["bad/r1"]["recordings"] == [] and "not a group of recordings" in runs["bad/r1"]["warnings"][0]


def test_a_group_has_what_every_recording_has(tmp_path):
    """Its routes pool the recordings: "pipeline" only when each has statistics."""
    group = _group(tmp_path, "g", ["r1"], {"version": 1, "recordings": ["r1", "r2"]})
    (group / "r2" / "diagnostic").mkdir(parents=True)
    (group / "r2" / "diagnostic" / "diagnostic.jsonl").write_text("")
    runs = discover_runs(str(tmp_path))
    assert runs["g"].recordings == ["g/r1", "g/r2"]
    assert runs["g/r1"].kinds == ["pipeline"] and runs["g/r2"].kinds == ["diagnostic"]
    assert runs["g"].kinds == ["group"]


CPU_TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "hta" / "cpu_only" / \
    "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def test_a_manifest_listing_files_warns_and_leaves_them_out(tmp_path, make_tb_client, capsys):
    """A hand-written manifest that lists itself, a trace beside it and a text file: each is
    left out with a warning, in discovery, the `runs` route and the CLI (once per side, one line)."""
    if not CPU_TRACE.exists():
        pytest.skip("shared traces not found")
    group = tmp_path / "g"
    for member in ("r1", "r2"):
        (group / member).mkdir(parents=True)
        (group / member / CPU_TRACE.name).write_bytes(CPU_TRACE.read_bytes())
    (group / "notes.txt").write_text("recorded on a busy machine\n")
    (group / "w.1.pt.trace.json.gz").write_bytes(CPU_TRACE.read_bytes())  # a trace of the directory itself
    listed = ["r1", "recordings.json", "r2", "notes.txt", "w.1.pt.trace.json.gz"]
    (group / "recordings.json").write_text(json.dumps({"version": 1, "recordings": listed}))

    runs = discover_runs(str(tmp_path))
    assert runs["g"].recordings == ["g/r1", "g/r2"]
    said = [f"recordings.json lists {name!r}, a file, not a recording's directory: left out of the group"
            for name in ("recordings.json", "notes.txt", "w.1.pt.trace.json.gz")]
    assert runs["g"].notes == said

    client = make_tb_client(tmp_path)
    listed_runs = {r["name"]: r for r in client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]}
    assert said[0] in listed_runs["g"]["warnings"] and listed_runs["g"]["recordings"] == ["g/r1", "g/r2"]

    from tb_pipeline_plugin.cli import main

    assert main(["diff", str(group), str(group)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [f"tb-pipeline: {side}: {note}" for side in ("baseline", "experimental") for note in said], err


def test_a_manifest_listing_only_files_is_said_in_the_log(tmp_path, caplog):
    """Nothing to show the warning on (no run in or below the directory): TensorBoard's log says it, once."""
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "recordings.json").write_text(json.dumps({"version": 1, "recordings": ["recordings.json"]}))
    with caplog.at_level("WARNING", logger="tb_pipeline_plugin.sources.logdir"):
        assert discover_runs(str(tmp_path)) == {}
        assert discover_runs(str(tmp_path)) == {}
    logged = [r.getMessage() for r in caplog.records]
    assert logged == ["tb_pipeline: 'g': recordings.json lists 'recordings.json', a file, not a recording's "
                      "directory: left out of the group"], logged
