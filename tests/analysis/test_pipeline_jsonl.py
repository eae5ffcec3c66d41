"""Statistics files read while they are written,
and damaged ones: torn last line skipped, malformed lines reported with
their line numbers, unknown types and fields ignored with a warning."""
from __future__ import annotations

import json
import threading
import time

import msgspec

from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.formats.pipeline import HostSample, RunMeta, StepRecord
from tb_pipeline_plugin.readers.jsonl import JsonlTail
from tb_pipeline_plugin.readers.run import PipelineReader

ENC = msgspec.json.Encoder()


def _step(i: int) -> bytes:
    return ENC.encode(StepRecord(step=i, wall_start_s=1e9 + i * 0.01, duration_s=0.01, data_wait_s=0.004,
                                 compute_s=0.005, callbacks_s={"log": 0.001}, batch_size=8)) + b"\n"


def test_file_appended_while_read_never_errors(tmp_path):
    run = tmp_path / "growing"
    (run / "pipeline").mkdir(parents=True)
    path = run / "pipeline" / "host_1.jsonl"
    n = 400
    done = threading.Event()

    def writer():
        with open(path, "ab", buffering=0) as f:
            f.write(ENC.encode(RunMeta(wall_time_s=1e9, command=["train.py"], pid=1, python="3", cpu_count=2)) + b"\n")
            for i in range(n):
                line = _step(i)
                # Torn writes on purpose: half a line is on disk for a moment.
                f.write(line[: len(line) // 2])
                time.sleep(0.0002)
                f.write(line[len(line) // 2:])
                if i % 50 == 0:
                    f.write(ENC.encode(HostSample(wall_time_s=1e9 + i * 0.01, cpu_pct=50.0, rss_bytes=1 << 20)) + b"\n")
        done.set()

    reader = PipelineReader(str(run))
    seen = []
    t = threading.Thread(target=writer)
    t.start()
    while not done.is_set():
        tables = reader.read()
        if tables is not None:
            r = report(tables)  # the whole analysis on a half-written file
            assert tables.warnings == [] and r["split"]["steps"] == len(tables.steps)
            seen.append(len(tables.steps))
    t.join()
    final = reader.read()
    assert len(final.steps) == n
    assert final.steps["step"].tolist() == list(range(n))
    assert seen == sorted(seen) and len(seen) > 1  # read several times while it grew, never going back


def test_torn_last_line_is_left_for_later(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(_step(0) + _step(1)[:20])
    tail = JsonlTail(str(path))
    assert tail.update() == 1 and tail.warnings == []
    with open(path, "ab") as f:
        f.write(_step(1)[20:])
    assert tail.update() == 1
    assert [r.step for r in tail.records] == [0, 1] and tail.warnings == []


def test_damaged_lines_are_reported_with_line_numbers(tmp_path):
    path = tmp_path / "s.jsonl"
    future = json.loads(_step(3))
    future.update(schema=2, gpu_clock_mhz=1500)
    lines = [
        _step(0),
        b'{"type": "step", "step": 1, "wall_st\n',  # line 2: cut JSON
        b'{"type": "step", "step": "two", "wall_start_s": 1, "duration_s": 1, "data_wait_s": 0, "compute_s": 1}\n',
        b'{"type": "telemetry", "x": 1}\n',  # line 4: a type this version does not know
        json.dumps(future).encode() + b"\n",  # line 5: newer schema, one unknown field
        b"[1, 2]\n",  # line 6
        _step(4),
    ]
    path.write_bytes(b"".join(lines))
    tail = JsonlTail(str(path))
    tail.update()
    assert [r.step for r in tail.records] == [0, 3, 4]
    text = "\n".join(tail.warnings)
    assert "line 2 skipped: not valid JSON" in text
    assert "line 3 skipped: invalid step record" in text
    assert "unknown type ignored: 'telemetry' (1)" in text
    assert "unknown fields ignored: step.gpu_clock_mhz (1)" in text
    assert "newer schema" in text
    assert "line 6 skipped: not a record" in text


def test_rewritten_file_is_read_again(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(_step(0) + _step(1) + _step(2))
    tail = JsonlTail(str(path))
    tail.update()
    path.write_bytes(_step(7))
    tail.update()
    assert [r.step for r in tail.records] == [7]
