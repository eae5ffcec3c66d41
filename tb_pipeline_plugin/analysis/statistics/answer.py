"""A run's pipeline report (report.py's dict, which the pair's comparison
and the gates read) as the contract's Structs: what the `pipeline` route
answers (server/run_impls.py) and each side of `diff/pipeline`'s
(diff/impls/pipeline.py)."""
from __future__ import annotations

from ... import contract as C


def report_fields(r: dict) -> dict:
    """The fields of a `PipelineReport` (a `PipelineResponse` adds the run's reference)."""
    throughput, host, group, epilogue = r["throughput"], r["host"], r["group"], r["epilogue"]
    return dict(
        source=r["source"],
        split=C.PipelineSplit(**r["split"]),
        input_bound=C.InputBound(**r["input_bound"]),
        throughput=C.Throughput(steps_per_s=throughput["steps_per_s"], samples_per_s=throughput["samples_per_s"],
                                series=[C.ThroughputPoint(**p) for p in throughput["series"]]),
        stages=[C.PipelineStage(**s) for s in r["stages"]],
        bottleneck=C.Bottleneck(**r["bottleneck"]),
        callbacks=[C.PipelineCallback(**c) for c in r["callbacks"]],
        host=C.PipelineHost(summary=C.HostSummary(**host["summary"]),
                            series=[C.HostPoint(**p) for p in host["series"]]),
        meta=[_meta(m) for m in r["meta"]],
        warnings=r["warnings"],
        group=None if group is None else C.PipelineRecordings(
            recordings=[C.PipelineRecording(**g) for g in group["recordings"]],
            representative=group["representative"], note=group["note"]),
        epilogue=None if epilogue is None else C.LoopEpilogue(**epilogue),
    )


def _meta(m: dict) -> C.PipelineMeta:
    """A writer's meta with the fields it has: the others stay UNSET, absent from the answer."""
    if "profilers" in m:
        m = {**m, "profilers": [C.PipelineProfiler(**p) for p in m["profilers"]]}
    return C.PipelineMeta(**m)


def report_struct(r: dict) -> C.PipelineReport:
    return C.PipelineReport(**report_fields(r))

