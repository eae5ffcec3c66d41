"""A user's SPDL 0.8 training script: nothing in it knows about diagnostic mode."""
import time

from spdl.pipeline import PipelineBuilder

DECODE_S = 0.1


def decode(x: int) -> int:
    time.sleep(DECODE_S)  # waits like storage or a native decoder releasing the GIL
    return x


def tokenize(x: int) -> list:
    s = 0
    for i in range(30_000):  # pure-Python work: holds the GIL
        s += i * i
    return [x, s]


def make_builder(n: int = 100_000) -> PipelineBuilder:
    return (
        PipelineBuilder()
        .add_source(range(n))
        .pipe(decode, concurrency=4, name="decode")
        .pipe(tokenize, concurrency=2, name="tokenize")
        .aggregate(4)
        .add_sink(2)
    )


if __name__ == "__main__":
    pipeline = make_builder().build(num_threads=4)
    with pipeline.auto_stop():
        for step, batch in enumerate(pipeline):
            time.sleep(0.001)  # the "training step"
    print("TRAINED")
