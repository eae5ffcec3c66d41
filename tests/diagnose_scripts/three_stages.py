"""Three stages with known characters, fed by an SPDL pipeline the user
iterates as if training (run as a script), or handed to
`python -m tb_pipeline_plugin.diagnose tests.diagnose_scripts.three_stages:factory`."""
import time

import numpy as np

SLEEP_S = 0.005
ARRAY = np.random.default_rng(0).random(4_000_000)  # 32 MB: numpy releases the GIL inside the reduction


def pure_python_loop(x: int) -> int:
    s = 0
    for i in range(60_000):
        s += i * i
    return x


def sleep_wait(x: int) -> int:
    time.sleep(SLEEP_S)
    return x


def numpy_reduce(x: int) -> int:
    ARRAY.sum()
    return x


STAGES = [("pure_python_loop", pure_python_loop), ("sleep_wait", sleep_wait), ("numpy_reduce", numpy_reduce)]


def factory():
    return STAGES, range(1000)


if __name__ == "__main__":
    from spdl.pipeline import PipelineBuilder

    builder = PipelineBuilder().add_source(range(1000))
    for name, fn in STAGES:
        builder = builder.pipe(fn, concurrency=2, name=name)
    pipeline = builder.add_sink(2).build(num_threads=4)
    with pipeline.auto_stop():
        for item in pipeline:
            pass
    print("TRAINED")
