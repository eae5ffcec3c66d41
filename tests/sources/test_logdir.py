"""Run / worker / span discovery on real trace files laid out like real logdirs."""
from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest

from tb_pipeline_plugin.errors import BadRequest, Conflict, NotFound, Unprocessable
from tb_pipeline_plugin.sources.logdir import discover_runs
from tb_pipeline_plugin.sources.runs import resolve
from tb_pipeline_plugin.sources.sniff import looks_like_trace_head


@pytest.fixture
def cpu_trace_gz(shared_traces):
    return shared_traces / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


@pytest.fixture
def gpu_trace_gz(shared_traces):
    return shared_traces / "trace_diff" / "control.json.gz"


def _gunzip_to(src, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(src, "rb") as f:
        dst.write_bytes(f.read())


def _copy(src, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _write_composer_trace(src_gz, dst):
    """A Composer-style trace: a bare event array, left unclosed like its
    JSONTraceHandler writes it while training is still running."""
    with gzip.open(src_gz, "rb") as f:
        events = json.load(f)["traceEvents"]
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("[\n" + ",\n".join(json.dumps(e) for e in events[:50]) + ",\n")


@pytest.fixture
def logdir(tmp_path, cpu_trace_gz, gpu_trace_gz):
    root = tmp_path / "logdir"
    base = root / "resnet" / "baseline"
    # Two spans whose numeric order differs from their string order.
    _copy(cpu_trace_gz, base / "vm_1.9.pt.trace.json.gz")
    _copy(cpu_trace_gz, base / "vm_1.10.pt.trace.json.gz")
    _gunzip_to(cpu_trace_gz, base / "vm_0.1795307060829570893.pt.trace.json")
    (base / "pipeline").mkdir()
    (base / "pipeline" / "steps.jsonl").write_text('{"schema": 1, "type": "step"}\n')
    # Diagnostic mode's layout: {run}/diagnostic/diagnostic.jsonl.
    (base / "diagnostic").mkdir()
    (base / "diagnostic" / "diagnostic.jsonl").write_text('{"schema": 1, "type": "sweep"}\n')
    # A trace-looking file inside pipeline/ is not a trace of the run.
    _copy(cpu_trace_gz, base / "pipeline" / "stray.pt.trace.json.gz")
    # A run that also has nested runs below it.
    _copy(cpu_trace_gz, root / "resnet" / "host.pt.trace.json.gz")
    _copy(gpu_trace_gz, root / "hta" / "control.json.gz")
    _write_composer_trace(cpu_trace_gz, root / "composer" / "traces" / "ep0.json")
    (root / "misc").mkdir()
    (root / "misc" / "config.json").write_text(json.dumps({"lr": 0.1, "name": "x"}))
    (root / "misc" / "list.json").write_text(json.dumps([{"name": "not a trace"}]))
    (root / "misc" / "notes.txt").write_text("hello")
    (root / "pipeline_only" / "pipeline").mkdir(parents=True)
    (root / "pipeline_only" / "pipeline" / "steps.jsonl").write_text("")
    (root / "diagnostic_only" / "diagnostic").mkdir(parents=True)
    (root / "diagnostic_only" / "diagnostic" / "diagnostic.jsonl").write_text("")
    # A directory named diagnostic without results is an ordinary (nested) run.
    _copy(cpu_trace_gz, root / "diagnostic_only" / "x" / "diagnostic" / "w.pt.trace.json.gz")
    _copy(cpu_trace_gz, root / ".hidden" / "w.1.pt.trace.json.gz")
    _copy(cpu_trace_gz, root / "rank-0.pt.trace.json.gz")
    return root


def test_discovers_runs_workers_spans(logdir):
    runs = discover_runs(str(logdir))
    assert list(runs) == [".", "composer/traces", "diagnostic_only", "diagnostic_only/x/diagnostic", "hta",
                          "pipeline_only", "resnet", "resnet/baseline"]

    base = runs["resnet/baseline"]
    assert base.workers() == [
        {"name": "vm_0", "spans": ["1795307060829570893"]},
        {"name": "vm_1", "spans": ["9", "10"]},
    ]
    assert base.kinds == ["trace", "pipeline", "diagnostic"]
    assert [os.path.basename(p) for p in base.pipeline_files] == ["steps.jsonl"]
    assert base.diagnostic_files == [str(logdir / "resnet" / "baseline" / "diagnostic" / "diagnostic.jsonl")]

    assert runs["."].workers() == [{"name": "rank-0", "spans": ["0"]}]
    assert runs["resnet"].workers() == [{"name": "host", "spans": ["0"]}]
    assert runs["hta"].workers() == [{"name": "control", "spans": ["0"]}]
    assert runs["composer/traces"].workers() == [{"name": "ep0", "spans": ["0"]}]
    assert runs["pipeline_only"].kinds == ["pipeline"]
    assert runs["pipeline_only"].traces == {}
    assert runs["diagnostic_only"].kinds == ["diagnostic"] and runs["diagnostic_only"].workers() == []
    assert runs["diagnostic_only/x/diagnostic"].kinds == ["trace"]


def test_trace_file_carries_stat(logdir):
    runs = discover_runs(str(logdir))
    tf_ = runs["resnet/baseline"].traces["vm_1"]["10"]
    st = os.stat(tf_.path)
    assert (tf_.run, tf_.worker, tf_.span) == ("resnet/baseline", "vm_1", "10")
    assert os.path.isabs(tf_.path)
    assert (tf_.size, tf_.mtime) == (st.st_size, st.st_mtime)


def test_rewritten_file_gets_new_key(logdir):
    path = logdir / "composer" / "traces" / "ep0.json"
    before = discover_runs(str(logdir))["composer/traces"].traces["ep0"]["0"]
    with open(path, "a") as f:
        f.write('{"ph": "X", "name": "late", "ts": 1, "dur": 1, "pid": 1, "tid": 1},\n')
    after = discover_runs(str(logdir))["composer/traces"].traces["ep0"]["0"]
    assert after.size > before.size


def test_non_traces_and_hidden_dirs_ignored(logdir):
    runs = discover_runs(str(logdir))
    assert "misc" not in runs
    assert ".hidden" not in runs
    assert not any("pipeline" in n.split("/")[-1] and n != "pipeline_only" for n in runs)
    assert all("stray" not in w for r in runs.values() for w in r.traces)


def test_truncated_gzip_trace_still_discovered(tmp_path, gpu_trace_gz):
    data = gpu_trace_gz.read_bytes()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "cut.json.gz").write_bytes(data[: len(data) // 3])
    runs = discover_runs(str(tmp_path))
    assert runs["run"].workers() == [{"name": "cut", "spans": ["0"]}]


def test_symlink_out_of_logdir_not_followed(tmp_path, cpu_trace_gz):
    outside = tmp_path / "outside"
    _copy(cpu_trace_gz, outside / "secret.1.pt.trace.json.gz")
    root = tmp_path / "logdir"
    _copy(cpu_trace_gz, root / "run" / "w.1.pt.trace.json.gz")
    os.symlink(outside, root / "escape")
    os.symlink(outside / "secret.1.pt.trace.json.gz", root / "run" / "leak.2.pt.trace.json.gz")
    # An alias inside the logdir is fine; a link back to an ancestor must not loop.
    os.symlink(root / "run", root / "alias")
    os.symlink(root, root / "run" / "loop")

    runs = discover_runs(str(root))
    assert sorted(runs) == ["alias", "run"]
    assert runs["run"].workers() == [{"name": "w", "spans": ["1"]}]
    for info in runs.values():
        for tf_ in info.trace_files():
            assert os.path.realpath(tf_.path).startswith(str(root.resolve()) + os.sep)


def test_missing_logdir_has_no_runs(tmp_path):
    assert discover_runs(str(tmp_path / "nope")) == {}
    assert discover_runs("") == {}


def test_recorded_runs(recorded_logdir):
    runs = discover_runs(str(recorded_logdir))
    assert list(runs) == ["baseline", "experimental", "slow_loader"]
    for info in runs.values():
        assert info.kinds == ["trace"]
        [worker] = info.workers()
        assert len(worker["spans"]) == 1 and worker["spans"][0].isdigit()


def test_resolve_defaults_and_explicit(logdir):
    runs = discover_runs(str(logdir))
    default = resolve(runs, "resnet/baseline")
    assert (default.worker, default.span) == ("vm_0", "1795307060829570893")
    assert resolve(runs, "resnet/baseline", "vm_1").span == "10"
    assert resolve(runs, "resnet/baseline", "vm_1", "9").span == "9"
    assert resolve(runs, "resnet/baseline", "", "").worker == "vm_0"
    assert resolve(runs, ".").worker == "rank-0"


@pytest.mark.parametrize(
    "run, worker, span",
    [
        ("nope", None, None),
        ("resnet/baseline", "vm_7", None),
        ("resnet/baseline", "vm_1", "11"),
        ("pipeline_only", None, None),
        ("misc", None, None),
    ],
)
def test_resolve_not_found(logdir, run, worker, span):
    runs = discover_runs(str(logdir))
    with pytest.raises(NotFound) as err:
        resolve(runs, run, worker, span)
    assert err.value.status == 404 and err.value.message


@pytest.mark.parametrize(
    "run, worker, span",
    [
        (None, None, None),
        ("", None, None),
        ("../logdir/resnet", None, None),
        ("resnet/../resnet/baseline", None, None),
        ("/etc", None, None),
        ("resnet/", None, None),
        ("resnet//baseline", None, None),
        ("resnet\\baseline", None, None),
        ("resnet/baseline", "../vm_1", None),
        ("resnet/baseline", "..", None),
        ("resnet/baseline", "vm_1", "ten"),
        ("resnet/baseline", "vm_1", "-1"),
    ],
)
def test_resolve_bad_request(logdir, run, worker, span):
    runs = discover_runs(str(logdir))
    with pytest.raises(BadRequest) as err:
        resolve(runs, run, worker, span)
    assert err.value.status == 400 and err.value.message


def test_error_statuses():
    assert [e.status for e in (BadRequest, NotFound, Conflict, Unprocessable)] == [400, 404, 409, 422]
    assert Conflict("loading").to_json() == {"error": "loading", "status": 409, "run_status": "loading"}
    assert Unprocessable("truncated gzip stream").to_json()["status"] == 422


@pytest.mark.parametrize(
    "head, expected",
    [
        (b'{"schemaVersion": 1, "traceEvents": [', True),
        (b'\xef\xbb\xbf  [\n {"name": "a", "ph": "X", "ts": 1}', True),
        (b'[{"name": "a"}]', False),
        (b'{"lr": 0.1}', False),
        (b"[1, 2, 3]", False),
        (b"", False),
    ],
)
def test_trace_head_sniffing(head, expected):
    assert looks_like_trace_head(head) is expected
