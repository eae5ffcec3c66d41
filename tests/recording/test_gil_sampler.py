"""The GIL contention host series (record/gil_contention.py): sampled by
gilknocker while threads hold the GIL, absent from files written without it
(as before this field existed) and compared in `diff/pipeline`; without the
package, recording goes on and says which extra installs it."""
from __future__ import annotations

import pytest

import json
import sys
import threading
import time

from tb_pipeline_plugin.diff.significance.method import NoisePolicy
from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.diff.statistics.compare import compare_pipeline
from tb_pipeline_plugin.readers import load_pipeline_run
from tb_pipeline_plugin.record import Recorder, once

pytestmark = pytest.mark.timing("samples the GIL contention of threads holding it while the test runs")

INTERVAL_S = 0.1


def record(logdir, run: str, work, **kwargs) -> None:
    rec = Recorder(str(logdir), run, host_interval_s=INTERVAL_S, flush_interval_s=0, **kwargs)
    for _ in rec.wrap(range(3)):
        work()
    rec.close()


def spin_threads(seconds: float = 1.0, threads: int = 3) -> None:
    """Pure-Python threads taking turns at the GIL."""
    def spin():
        end = time.perf_counter() + seconds
        s = 0
        while time.perf_counter() < end:
            s += 1

    pool = [threading.Thread(target=spin) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


def host_lines(run_dir) -> list[dict]:
    files = list((run_dir / "pipeline").glob("*.jsonl"))
    return [r for f in files for r in map(json.loads, f.read_text().splitlines()) if r["type"] == "host"]


def test_contention_sampled_while_threads_hold_the_gil_and_compared(tmp_path):
    # 0.8 s a step: the sampler thread waits its turn at the GIL behind three spinning threads, and in a
    # process that ran other tests first it got one sample in the 1.2 s that 0.4 s steps gave.
    record(tmp_path, "spin", lambda: spin_threads(0.8))
    record(tmp_path, "sleep", lambda: time.sleep(0.4))
    record(tmp_path, "old", lambda: time.sleep(0.4), gil_contention=False)
    readings = [h.get("gil_contention_pct") for h in host_lines(tmp_path / "spin")]
    # The priming sample has none. The sampler thread itself needs the GIL the
    # spinning threads hold, so it samples less often than every 0.1 s.
    assert readings[0] is None and sum(r is not None for r in readings) >= 2, readings
    assert all("gil_contention_pct" not in h for h in host_lines(tmp_path / "old"))  # field absent, as in old files
    spin, sleep, old = (report(load_pipeline_run(str(tmp_path / r))) for r in ("spin", "sleep", "old"))
    assert spin["host"]["summary"]["gil_contention_pct_median"] > 2 * sleep["host"]["summary"]["gil_contention_pct_median"]
    assert old["host"]["summary"]["gil_contention_pct_mean"] is None
    assert all(p["gil_contention_pct"] is None for p in old["host"]["series"])
    rows = {r["metric"]: r for r in compare_pipeline(load_pipeline_run(str(tmp_path / "old")),
                                                     load_pipeline_run(str(tmp_path / "spin")), noise=NoisePolicy())["summary"]}
    peak = rows["host.summary.gil_contention_pct_max"]
    assert peak["baseline"] is None and peak["delta"] is None
    assert peak["experimental"] == spin["host"]["summary"]["gil_contention_pct_max"]


def test_missing_package_names_the_extra_and_recording_goes_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gilknocker", None)  # what `import gilknocker` meets when not installed
    monkeypatch.setattr(once, "_said", set())
    record(tmp_path, "without", lambda: time.sleep(0.25))
    err = capsys.readouterr().err
    assert 'pip install "tb_pipeline_plugin[gil]"' in err and "recording goes on" in err, err
    lines = host_lines(tmp_path / "without")
    assert len(lines) >= 3 and all("gil_contention_pct" not in h for h in lines)
    assert report(load_pipeline_run(str(tmp_path / "without")))["split"]["steps"] == 3
