"""GIL-bound SPDL pipelines and DataLoader scripts, unmodified, through
`tb-pipeline record`: the worker threads' CPU time per task names the stage
that limits the pipeline (a pure-Python stage, not the sleeping stage that
waits for the GIL), and the verdict stays the wall-time one when the GIL is
free; the sampled GIL contention is high in the first case, low in the
second. A DataLoader (num_workers 0 and 2) in the same three mixes names the
part that limits loading (__getitem__ or collate_fn) with its advice."""
from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from test_pipeline_launcher import launch

from tb_pipeline_plugin.diff.significance.method import NoisePolicy
from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.analysis.statistics.gil import CPU_BOUND_SHARE, GIL_CONTENDED_PCT, GIL_MAX_CORES, gil_limit
from tb_pipeline_plugin.report.build import pipeline
from tb_pipeline_plugin.diff.explain.pipeline import pipeline_part
from tb_pipeline_plugin.diff.statistics.compare import compare_pipeline
from tb_pipeline_plugin.readers import load_pipeline_run
from tb_pipeline_plugin.record.task_cpu import TaskClock, timed

from support.recordings import recording

pytestmark = pytest.mark.timing(
    "a task clock's CPU and wall time measured in the test (the pipelines' runs are recordings, made alone)"
)

# argv: first stage (pure_python | numpy_heavy), loop iterations, sleep seconds.
MIX_SCRIPT = textwrap.dedent("""
    import sys, time
    from spdl.pipeline import PipelineBuilder

    LOOPS, SLEEP_S = int(sys.argv[2]), float(sys.argv[3])

    def pure_python(x):  # holds the GIL throughout
        s = 0
        for i in range(LOOPS):
            s += i * i
        return x

    def numpy_heavy(x):  # NumPy's ufunc loops release the GIL
        import numpy as np
        a = np.full(2_000_000, 1.5)
        np.sqrt(a, out=a)
        np.multiply(a, a, out=a)
        return x

    def sleep_io(x):  # releases the GIL, like I/O
        time.sleep(SLEEP_S)
        return x

    first = {"pure_python": pure_python, "numpy_heavy": numpy_heavy}[sys.argv[1]]
    pipeline = (PipelineBuilder().add_source(range(300))
                .pipe(first, concurrency=4, name=first.__name__)
                .pipe(sleep_io, concurrency=4, name="sleep_io")
                .add_sink(8).build(num_threads=8))
    with pipeline.auto_stop():
        n = sum(1 for _ in pipeline)
    print("consumed", n)
""")


MIXES = {
    # The user's report: ~3 ms of pure Python and a 5 ms sleep, both at concurrency 4.
    "gil": ("pure_python", "60_000", "0.005"),
    # The sleeping stage truly slower, the CPU stage light: the GIL mostly free.
    "io": ("pure_python", "5_000", "0.03"),
    "numpy": ("numpy_heavy", "0", "0.005"),
}


@recording(sources=["tests/recording/test_pipeline_launcher.py"])
def spdl_mix_runs(out: Path) -> dict:
    """Each mix's SPDL script through `tb-pipeline record` into `out/logs`; what each printed."""
    printed = {}
    for run, (first, loops, sleep_s) in MIXES.items():
        script = MIX_SCRIPT.replace("sys.argv[1]", repr(first)).replace("sys.argv[2]", loops).replace(
            "sys.argv[3]", sleep_s)
        printed[run] = launch(out, script, run, "--spdl-interval", "0.5").stdout
    return printed


@pytest.fixture(scope="module")
def mixes(tmp_path_factory) -> dict:
    """Each mix's PipelineTables, recorded once (`spdl_mix_runs`, made alone before the tests)."""
    tmp = tmp_path_factory.mktemp("gil")
    printed = spdl_mix_runs.copy_to(tmp)
    out = {}
    for run in MIXES:
        assert "consumed 300" in printed[run]
        out[run] = load_pipeline_run(str(tmp / "logs" / run))
    return out


# The same mixes in a DataLoader: __getitem__ pure Python or NumPy, the
# collate_fn sleeping like a read; 60 batches of 4.
LOADER_SCRIPT = textwrap.dedent("""
    import time
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    KIND, LOOPS, SLEEP_S, WORKERS = "{kind}", {loops}, {sleep_s}, {workers}

    class Items(Dataset):
        def __len__(self):
            return 240
        def __getitem__(self, i):
            if KIND == "numpy_heavy":  # ufunc loops release the GIL
                a = np.linspace(0.0, 1.0, 200_000)
                for _ in range(2):
                    np.sin(a, out=a)
            else:  # holds the GIL throughout
                s = 0
                for k in range(LOOPS):
                    s += k * k
            return torch.zeros(8)

    def sleep_io(items):
        time.sleep(SLEEP_S)
        return torch.stack(items)

    if __name__ == "__main__":
        n = sum(1 for _ in DataLoader(Items(), batch_size=4, collate_fn=sleep_io, num_workers=WORKERS))
        print("consumed", n)
""")
LOADER_BATCHES = 60


@recording(sources=["tests/recording/test_pipeline_launcher.py"])
def loader_mix_runs(out: Path) -> dict:
    """The three mixes as DataLoader scripts at 0 and 2 workers through `tb-pipeline record` into `out/logs`;
    what each printed, by run."""
    printed = {}
    for mix, (kind, loops, sleep_s) in MIXES.items():
        for workers in (0, 2):
            run = f"{mix}_w{workers}"
            script = LOADER_SCRIPT.format(kind=kind, loops=loops, sleep_s=sleep_s, workers=workers)
            printed[run] = launch(out, script, run).stdout
    return printed


@pytest.fixture(scope="module")
def loader_mixes(tmp_path_factory) -> dict:
    """{(mix, num_workers): PipelineTables} for the three mixes at 0 and 2 workers (`loader_mix_runs`)."""
    tmp = tmp_path_factory.mktemp("loader_gil")
    printed = loader_mix_runs.copy_to(tmp)
    out = {}
    for mix in MIXES:
        for workers in (0, 2):
            run = f"{mix}_w{workers}"
            assert f"consumed {LOADER_BATCHES}" in printed[run]
            out[mix, workers] = load_pipeline_run(str(tmp / "logs" / run))
    return out


def stage(rep: dict, name: str) -> dict:
    return next(s for s in rep["stages"] if s["stage_name"] == name)


def test_pure_python_stage_limits_not_the_sleeping_one(mixes):
    rep = report(mixes["gil"])
    py, io = stage(rep, "pure_python"), stage(rep, "sleep_io")
    # It computes while it runs (or waits runnable for a core: a busy box preempts it).
    assert py["task_cpu_mean_s"] + (py["task_runq_mean_s"] or 0) >= CPU_BOUND_SHARE * py["task_call_mean_s"], py
    assert io["task_cpu_mean_s"] < 0.1 * io["task_mean_s"], io  # it waits
    assert io["task_mean_s"] > 0.005  # a 5 ms sleep that takes longer: the GIL wait
    neck = rep["bottleneck"]
    assert neck["gil_bound"] and neck["slowest_stage"] == py["stage"], neck
    assert py["is_slowest"] and not io["is_slowest"]
    for words in ("limits the pipeline", "not the bottleneck", "will not help", "processes", "free-threaded",
                  "A thread asking for the GIL waited"):
        assert words in neck["summary"], neck["summary"]
    assert neck["gil_contention_pct"] == rep["host"]["summary"]["gil_contention_pct_mean"] >= GIL_CONTENDED_PCT / 2


def test_contention_is_high_when_pure_python_holds_the_gil_and_low_when_stages_sleep(mixes):
    gil, io = (report(mixes[m])["host"] for m in ("gil", "io"))
    for host in (gil, io):  # sampled in every host sample but the priming one
        assert sum(p["gil_contention_pct"] is not None for p in host["series"]) >= 3, host["series"]
    assert gil["summary"]["gil_contention_pct_median"] >= GIL_CONTENDED_PCT, gil["summary"]
    assert io["summary"]["gil_contention_pct_median"] < gil["summary"]["gil_contention_pct_median"] / 2, (
        io["summary"], gil["summary"])


def test_sleeping_stage_limits_when_the_gil_is_free(mixes):
    rep = report(mixes["io"])
    io = stage(rep, "sleep_io")
    neck = rep["bottleneck"]
    assert not neck["gil_bound"] and neck["slowest_stage"] == io["stage"], neck
    assert "GIL" not in neck["summary"] and "Raise its concurrency" in neck["summary"], neck["summary"]
    assert io["task_mean_s"] == pytest.approx(0.03, rel=0.5)


def test_gil_releasing_stage_gets_no_gil_advice(mixes):
    rep = report(mixes["numpy"])
    heavy = stage(rep, "numpy_heavy")
    neck = rep["bottleneck"]
    assert heavy["task_cpu_mean_s"] > 0.0005, heavy  # measured, in the worker thread
    assert not neck["gil_bound"], (neck, heavy)
    assert "GIL" not in neck["summary"], neck["summary"]


def test_explanation_and_diff_carry_the_gil_verdict(mixes):
    part = pipeline_part(mixes["io"], mixes["gil"], noise=NoisePolicy())
    assert part["gil"] == {"run": "experimental", "stage": stage(report(mixes["gil"]), "pure_python")["stage"],
                           "cpu_cores": report(mixes["gil"])["bottleneck"]["gil_cpu_cores"]}
    assert "take turns at the GIL" in part["clause"] and "processes, not threads" in part["clause"]
    notes = pipeline(part)["notes"]  # what `tb-pipeline diff` says under the pipeline's figures, in every format
    assert any(n.startswith(f"GIL-bound (experimental): stage {part['gil']['stage']} limits the pipeline") for n in notes)
    assert pipeline_part(mixes["io"], mixes["numpy"], noise=NoisePolicy())["gil"] is None
    rows = {r["stage_name"]: r for r in compare_pipeline(mixes["io"], mixes["gil"], noise=NoisePolicy())["stages"]}
    py = rows["pure_python"]
    # ~0.25 ms of CPU a task against ~3 ms: the CPU column moves with the loop count.
    assert py["experimental_task_cpu_mean_s"] > 4 * py["baseline_task_cpu_mean_s"] > 0, py


def test_task_clock_tells_computing_from_waiting():
    clock = TaskClock()
    sleep = timed(time.sleep, clock)
    sleep(0.02)
    cpu_s, wall_s = clock.means_s(lap=True)
    assert cpu_s < 0.005 and wall_s >= 0.02

    def spin(n):
        return sum(i * i for i in range(n))

    spin_timed = timed(spin, clock)
    assert spin_timed(20_000) == spin(20_000)
    for _ in range(299):
        spin_timed(20_000)
    # The lap holds the spins only. Time runnable but waiting for a core
    # (sampled, 1 call in 16: ~19 of 300) is computing preempted by a busy box.
    lap_cpu_s, lap_wall_s, lap_runq_s = clock.means_s(lap=True, runq=True)
    assert lap_runq_s is not None and lap_runq_s >= 0
    assert lap_cpu_s + lap_runq_s >= 0.5 * lap_wall_s > 0, (lap_cpu_s, lap_runq_s, lap_wall_s)
    assert clock.means_s(lap=True) == (None, None)
    calls, cpu_ns, wall_ns, runq_calls, _ = clock.totals()  # the run holds all 301 calls
    assert calls == 301 and 0 < runq_calls < calls
    assert cpu_ns * 1e-9 == pytest.approx(cpu_s + 300 * lap_cpu_s, rel=0.01)


def test_threads_on_more_cores_than_the_gil_allows_are_not_gil_bound():
    # Work that releases the GIL on an idle many-core machine: on CPU like
    # pure Python, but more CPU per second than one lock allows.
    stages = pd.DataFrame([
        {"stage": "0:1:decode[8]", "task_mean_s": 0.01, "task_call_mean_s": 0.01, "task_cpu_mean_s": 0.0095,
         "cpu_cores": GIL_MAX_CORES + 2.0, "busy_pct": 90.0},
        {"stage": "0:2:fetch[8]", "task_mean_s": 0.02, "task_call_mean_s": 0.012, "task_cpu_mean_s": 0.0001,
         "cpu_cores": 0.01, "busy_pct": 95.0},
    ])
    assert gil_limit(stages) is None
    stages.loc[0, "cpu_cores"] = 0.9  # the same pipeline held to one core: taking turns at the GIL
    assert gil_limit(stages)["stage"] == "0:1:decode[8]"


def loader_rows(tables) -> dict:
    return {s["stage_name"]: s for s in report(tables)["stages"] if s["pipeline_index"] == -1}


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_pure_python_getitem_limits(loader_mixes, workers):
    rep = report(loader_mixes["gil", workers])
    rows, neck = loader_rows(loader_mixes["gil", workers]), rep["bottleneck"]
    fetch, collate = rows["fetch"], rows["collate_fn"]
    assert fetch["tasks"] == collate["tasks"] == LOADER_BATCHES  # every batch, in whichever process fetched it
    assert fetch["concurrency"] == (workers or None)
    assert fetch["stage"] == ("DataLoader:fetch[2]" if workers else "DataLoader:fetch")
    getitem_cpu_s = fetch["task_cpu_mean_s"] - collate["task_cpu_mean_s"]
    getitem_runq_s = (fetch["task_runq_mean_s"] or 0) - (collate["task_runq_mean_s"] or 0)
    assert getitem_cpu_s + getitem_runq_s >= CPU_BOUND_SHARE * (
        fetch["task_call_mean_s"] - collate["task_call_mean_s"]), rows
    assert collate["task_cpu_mean_s"] < 0.1 * collate["task_call_mean_s"], collate  # the sleep
    assert neck["loader_part"] == "__getitem__" and neck["slowest_stage"] == fetch["stage"] and fetch["is_slowest"]
    assert "limits loading" in neck["summary"] and "It computes" in neck["summary"], neck["summary"]
    if workers:
        assert f"{workers} workers supply at most" in neck["summary"], neck["summary"]
    else:
        assert rep["host"]["summary"]["gil_contention_pct_median"] >= GIL_CONTENDED_PCT, rep["host"]["summary"]
        for words in ("holding the GIL", "threads will not help", "worker processes will (num_workers > 0"):
            assert words in neck["summary"], neck["summary"]


def test_loader_workers_measure_the_same_work_as_the_loop_thread(loader_mixes):
    # The oracle for the worker processes' figures: the same __getitem__ and
    # collate_fn measured in the training loop's thread (num_workers=0).
    w0, w2 = loader_rows(loader_mixes["gil", 0]), loader_rows(loader_mixes["gil", 2])
    assert w2["fetch"]["task_cpu_mean_s"] == pytest.approx(w0["fetch"]["task_cpu_mean_s"], rel=0.35)
    assert w2["collate_fn"]["task_call_mean_s"] == pytest.approx(w0["collate_fn"]["task_call_mean_s"], rel=0.5)


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_sleeping_collate_limits_when_the_gil_is_free(loader_mixes, workers):
    rep = report(loader_mixes["io", workers])
    rows, neck = loader_rows(loader_mixes["io", workers]), rep["bottleneck"]
    assert neck["loader_part"] == "collate_fn" and rows["collate_fn"]["is_slowest"], neck
    assert rows["collate_fn"]["task_call_mean_s"] == pytest.approx(0.03, rel=0.5)
    for words in ("limits loading", "It waits", "Overlap the waits", "more CPU will not help"):
        assert words in neck["summary"], neck["summary"]
    assert "holding the GIL" not in neck["summary"]
    if not workers:
        gil_w0 = report(loader_mixes["gil", 0])["host"]["summary"]["gil_contention_pct_median"]
        assert rep["host"]["summary"]["gil_contention_pct_median"] < gil_w0 / 2, rep["host"]["summary"]


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_numpy_getitem_gets_no_gil_advice(loader_mixes, workers):
    rep = report(loader_mixes["numpy", workers])
    neck = rep["bottleneck"]
    assert neck["loader_part"] == "__getitem__", neck
    assert loader_rows(loader_mixes["numpy", workers])["fetch"]["task_cpu_mean_s"] > 0.002  # measured
    assert "holding the GIL" not in neck["summary"] and "threads will not help" not in neck["summary"], neck
    if not workers:
        gil_w0 = report(loader_mixes["gil", 0])["host"]["summary"]["gil_contention_pct_median"]
        assert rep["host"]["summary"]["gil_contention_pct_median"] < gil_w0, rep["host"]["summary"]


def test_explanation_and_cli_name_the_loader_part(loader_mixes):
    part = pipeline_part(loader_mixes["io", 0], loader_mixes["gil", 0], noise=NoisePolicy())
    assert part["loader"] == {"run": "experimental", "part": "__getitem__", "stage": "DataLoader:fetch"}, part
    assert "in the experimental run the DataLoader's __getitem__ limits loading" in part["clause"]
    assert "DataLoader (experimental): __getitem__ limits loading (DataLoader:fetch)" in pipeline(part)["notes"]
    assert pipeline_part(loader_mixes["gil", 0], loader_mixes["io", 0], noise=NoisePolicy())["loader"]["part"] == "collate_fn"
