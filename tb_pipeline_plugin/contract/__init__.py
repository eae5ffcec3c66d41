"""The HTTP contract: every response shape, declared once, by subject.

`docs/openapi.json` is generated from these Structs (`python -m
tb_pipeline_plugin.server.openapi`), and the frontend's TypeScript types are
generated from that document (`npm run gen:api` in frontend/), so Python,
the schema and TypeScript cannot drift apart: `make test` fails when a
generated file is stale. The impls return these Structs, built with their
nested Structs (server/run_impls.py, diff/impls/; the pipeline and
diagnostic reports by analysis/statistics/answer.py and
analysis/diagnostic/answer.py), and msgspec encodes them (server/http.py). A constructor checks no types, so
the route tests decode every response body with these types
(`forbid_unknown_fields`: an undeclared field fails too).

Units are in the field names (`_us`, `_s`, `_bytes`, `_pct`); `None` is JSON
`null`: a percentage whose baseline is 0, a value the trace does not record.
A delta % is named as diff/delta.py says (`pct_name`): `delta_<c without its
unit>_pct`, and `delta_<c without _pct>_rel_pct` for a percentage `c`. A
field an answer may lack defaults to `msgspec.UNSET` (absent from the JSON,
optional in TypeScript), never to a null it would then encode.

A leaf: it imports nothing of ours (only msgspec and typing), so any layer
may import it: the server's route table, OpenAPI and one-run impls, diff/'s
impls, analysis/statistics/answer.py, the report of `tb-pipeline diff`
(report/model.py).
One module per subject; this package re-exports every public name, the one
import surface (`from tb_pipeline_plugin import contract as C`). A name is
defined once across the package (tests/routes/test_contract.py): annotations are
resolved by name in the module that declares them.
"""
from __future__ import annotations

from .common import ErrorResponse, Number, RunRef
from .pair import CountSource, Difference, DifferenceEffect, WorkCounts, WorkUnit, WorkUnits
from .significance import (Advice, AdviceReason, ExplainNoise, NoiseSource, Significance, SignificanceVerdict,
                           significance_of)
from .runs import RunInfo, RunKind, RunStatus, RunsResponse, SpanInfo, StepRange, WorkerInfo
from .overview import (
    Bound, Breakdown, DeviceIdle, DeviceInfo, DiffOverviewResponse, DiffOverviewRow, DiffUnit, DistributedInfo,
    MemoryDevice, MemorySummary, OverviewResponse, StepInfo,
)
from .tables import GroupBy, KernelRow, KernelsResponse, ModuleNode, ModulesResponse, OperatorRow, OperatorsResponse
from .memory import (
    DiffMemoryResponse, MemoryCurve, MemoryDeviceDiff, MemoryPeak, MemoryRow, MemoryStepPeak, SnapshotCurve,
    SnapshotDeviceDiff, SnapshotDiff, SnapshotMetric, SnapshotRow, SnapshotSegment, SnapshotSide, SnapshotStepMark,
    SnapshotStepPeak,
)
from .modules_diff import (
    CompiledRegion, CompiledSide, Crumb, DiffModulesResponse, DiffPiece, DiffTrend, KernelFamily, PieceKind, PieceStatus,
)
from .explain import (
    BusyPair, Contributor, ContributorKind, DiffExplainResponse, ExplainDataWait, ExplainGilLimit,
    ExplainInputBound, ExplainLoaderLimit, ExplainPipeline, ExplainStageChange, ExplainStep, LaunchRow,
    ProfiledStep, Spikiness, SpikinessPair, StepFigures, TopOperator, WaterfallBar, WaterfallKind,
)
from .diff_tables import (
    DiffKernelRow, DiffKernelsResponse, DiffOperatorRow, DiffOperatorsResponse, KernelGroupBy, KernelShare,
)
from .diagnostic import (
    DiagnosticCurve, DiagnosticEnvironment, DiagnosticGil, DiagnosticGroup, DiagnosticPoint, DiagnosticReport,
    DiagnosticResponse, DiagnosticStage, DiagnosticStageDiff, DiffDiagnosticResponse, Executor, GilHolder,
    LevelChange, SkippedLevel, StageChange, StageVerdict,
)
from .pipeline import (
    Bottleneck, DiffPipelineCallbackRow, DiffPipelineResponse, DiffPipelineStageRow, HostPoint, HostSummary,
    InputBound, InputBoundVerdict, LoopEpilogue, PipelineCallback, PipelineHost, PipelineMeta, PipelineProfiler,
    PipelineRecording, PipelineRecordings, PipelineReport, PipelineResponse, PipelineSource, PipelineSplit,
    PipelineStage, PipelineSummaryRow, PipelineUnit, Throughput, ThroughputPoint,
)
from .timeline import (
    DiffTimelineResponse, ProfilerLinkResponse, TimelineEvents, TimelineKind, TimelineLane, TimelineMerged,
    TimelineSide,
)
from .distributed import (
    DistributedResponse, PercentileDeltaRow, QuantitySpread, RankAtPercentile, RankCoverage, RankDeltaRow,
    RankHistogram, RankNote, RankRow, RankSource, RunRanks, SplitDeltas, SplitQuantity, Straggler,
)
