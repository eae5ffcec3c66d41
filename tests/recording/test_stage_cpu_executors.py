"""The CPU clock wraps only stage functions that run in a thread: a stage
given a process pool gets the user's function itself (a wrapper would not
pickle), and the pipeline runs as without the recorder."""
from __future__ import annotations

import textwrap
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from test_pipeline_launcher import launch

from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.readers import load_pipeline_run
from tb_pipeline_plugin.record.spdl_hooks import _thread_pool

SCRIPT = textwrap.dedent("""
    from concurrent.futures import ProcessPoolExecutor
    from spdl.pipeline import PipelineBuilder

    def square(x):
        return x * x

    def plus_one(x):
        return x + 1

    if __name__ == "__main__":
        with ProcessPoolExecutor(2) as pool:
            pipeline = (PipelineBuilder().add_source(range(50))
                        .pipe(square, executor=pool, concurrency=2, name="in_processes")
                        .pipe(plus_one, concurrency=2, name="in_threads")
                        .add_sink(4).build(num_threads=2))
            with pipeline.auto_stop():
                print("total", sum(pipeline))
""")


def test_process_pool_stage_runs_unwrapped(tmp_path):
    done = launch(tmp_path, SCRIPT, "pool")
    assert f"total {sum(x * x + 1 for x in range(50))}" in done.stdout
    rows = {s["stage_name"]: s for s in report(load_pipeline_run(str(tmp_path / "logs" / "pool")))["stages"]}
    assert rows["in_processes"]["tasks"] == 50 and rows["in_processes"]["task_cpu_mean_s"] is None
    assert rows["in_threads"]["tasks"] == 50 and rows["in_threads"]["task_cpu_mean_s"] is not None


def test_which_executors_run_in_this_interpreter():
    with ThreadPoolExecutor(1) as threads, ProcessPoolExecutor(1) as processes:
        assert _thread_pool(None) and _thread_pool(threads)
        assert not _thread_pool(processes)
        assert not _thread_pool(object())  # unknown: leave the function alone
