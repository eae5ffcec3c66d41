"""Baseline vs experimental in a notebook: the diff engine without a browser.

    from tb_pipeline_plugin.compare import compare
    c = compare("runs/baseline", "runs/experimental")   # run dirs or trace files
    c.explanation     # why: sentence, step delta with significance, ranked contributors, waterfall;
                      # `pipeline` (data wait, input-bound change, stage) when both runs have pipeline statistics;
                      # per sample (token) when the runs' batches differ: compare(..., baseline_samples=16, ...)
                      # for runs without statistics; `comparability`: how the runs differ besides the change
    c.memory          # where the peak went: `sentence`, per device both peaks, growth, rows by module / operator
    c.memory_rows     # the memory sentence's device's rows by module (bytes alive at each peak, largest |delta| first)
    c.contributors    # the contributors as a table (delta, share, verdict, interval)
    c.overview        # metric, label, unit, baseline, experimental, delta, delta_pct, significance
    c.overview_answer # the same as the `diff/overview` route answers it (rows of dicts, note)
    c.modules         # every aligned piece, depth first (path, depth, status, µs ...)
    c.level("0.2")    # one level of the piece tree, with the accumulated trend
    c.operators       # operators joined by name, largest |delta| of the primary time first
    c.kernels         # kernels joined by name, largest |delta total_us| first
    c.operators_at("0.2"), c.kernels_at("0.2")   # the same, inside one piece
    c.operator_page(10), c.kernel_page(10)       # the routes' first page, rows with their significance
    c.notes           # what discovery left out of either run (a group's manifest listing a file, ...)

Same numbers as the `diff/*` routes (docs/http_api.md): runs are found and
loaded by the plugin's provider (`sources/provider.py`, here loading in this
process and waiting), and both call `tb_pipeline_plugin.diff.impls` on one
`Pair` (diff/pair.py). `compare(..., noise=NoisePolicy(5.0))` sets the
between-run spread a single recording is judged with (default: the
`TB_PIPELINE_BETWEEN_RUN_PCT` environment variable, else 2 %).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator

import pandas as pd

from .analysis.group import RecordingGroup
from .analysis.processor import TraceProcessor
from .analysis.operators import GROUP_BY
from .diff import tables
from .diff import step_basis
from .diff import tree as T
from .diff.impls import plain
from .diff.impls.explain import diff_explain_impl
from .diff.impls.memory import diff_memory_impl
from .diff.impls.modules import ModulesQuery, diff_modules_impl
from .diff.impls.overview import diff_overview_impl
from .diff.impls.tables import diff_kernels_impl, diff_operators_impl
from .diff.pair import NO_STATISTICS, NOT_GIVEN, Pair, pair_of
from .diff.significance.method import NoisePolicy
from .diff.table_view import KERNEL_KEYS, KERNEL_PRIMARY, OPERATOR_KEYS, kernel_table, operator_primary, operator_table
from .diff.units import Given
from .sources.artifacts import make_loader
from .sources.provider import RunProvider
from .sources.snapshots import run_snapshot
from .analysis.memory.snapshot import NO_SNAPSHOT


@contextmanager
def _provider(path: str) -> Iterator[RunProvider]:
    """The provider the TensorBoard plugin uses, over one directory, loading
    in this process and waiting for each load (a notebook reads a pair
    once); its load threads end with the block."""
    provider = RunProvider(path, make_loader(in_process=True), blocking=True)
    try:
        yield provider
    finally:
        provider.close()


def _run(provider: RunProvider) -> str:
    """The run a run directory means: the directory itself when it holds
    traces or is a group of recordings, else its one run below."""
    found = provider.runs()
    group = found.get(".")
    if group is not None and group.recordings and not group.traces:
        return "."
    runs = [name for name, info in found.items() if info.traces]
    if not runs:
        raise FileNotFoundError(f"no trace files (*.pt.trace.json[.gz], *.json[.gz]) in {provider.logdir}")
    if "." in runs:
        return "."
    if len(runs) == 1:
        return runs[0]
    raise ValueError(f"{provider.logdir} holds several runs ({', '.join(runs)}); pass one of them, or record a "
                     "group of recordings with `tb-pipeline record --repeat N`")


def _side(source, worker: str | None, span: str | None):
    """(loaded run, its recorded pipeline statistics or None, what discovery
    left out of it: a group's manifest listing a file, ...) of a source."""
    if isinstance(source, (TraceProcessor, RecordingGroup)):
        return source, None, []
    path = os.fspath(source)
    if os.path.isfile(path):
        if worker or span:
            raise ValueError(f"{path} is a trace file: worker/span select among the traces of a run directory")
        with _provider(os.path.dirname(os.path.abspath(path))) as provider:
            trace = provider.trace_file(path).value()
            # The statistics of the run directory holding the file, if it is one.
            statistics = provider.statistics(".") if "." in provider.runs() else None
            return trace, None if statistics is None else statistics.value(), []
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no trace file or run directory at {path}")
    with _provider(path) as provider:
        run = _run(provider)
        asked, _ = provider.side(run, worker or "", span or "")
        statistics = provider.statistics(run)
        return asked.value(), None if statistics is None else statistics.value(), list(provider.runs()[run].notes)


def _snapshot_of(source):
    """The CUDA memory snapshot of the run a source is (sources/snapshots.py), NO_SNAPSHOT for a loaded trace."""
    if isinstance(source, (TraceProcessor, RecordingGroup)):
        return NO_SNAPSHOT
    path = os.fspath(source)
    if os.path.isfile(path):
        return run_snapshot(os.path.dirname(os.path.abspath(path)))
    with _provider(path) as provider:
        return provider.snapshot(_run(provider))


def load(source, worker: str | None = None, span: str | None = None) -> TraceProcessor | RecordingGroup:
    """A trace file, a run directory (its traces directly inside; the first
    worker and its last span unless given), a group of recordings (each
    recording's default trace, as one `RecordingGroup`) or an already
    loaded trace."""
    return _side(source, worker, span)[0]


def statistics(source):
    """The recorded pipeline statistics (readers.PipelineTables) of the run
    a source belongs to (a trace file: the run directory holding it), or
    None without any, or for an already loaded trace."""
    if isinstance(source, (TraceProcessor, RecordingGroup)):
        return None
    path = os.fspath(source)
    with _provider(os.path.dirname(os.path.abspath(path)) if os.path.isfile(path) else path) as provider:
        run = "." if os.path.isfile(path) else _run(provider)
        if run not in provider.runs():
            return None
        asked = provider.statistics(run)
        return None if asked is None else asked.value()


@dataclass
class Comparison:
    baseline: TraceProcessor | RecordingGroup
    experimental: TraceProcessor | RecordingGroup
    group_by: str = "name"
    # Each run's recorded pipeline statistics (PipelineTables) or None.
    statistics: tuple = NO_STATISTICS
    # Each run's samples / tokens per step given by the caller (diff/units.py).
    given: tuple = NOT_GIVEN
    # What discovery left out of either run ("baseline: recordings.json lists ..."), in words.
    notes: list[str] = field(default_factory=list)
    # The between-run spread a single recording is judged with (None: the environment's, else the default).
    noise: NoisePolicy | None = None
    # Each run's CUDA memory snapshot (analysis/memory/snapshot.py:RunSnapshot).
    snapshots: tuple = (NO_SNAPSHOT, NO_SNAPSHOT)

    @cached_property
    def pair(self) -> Pair:
        """The comparison every answer below is a view of (diff/pair.py)."""
        return pair_of(self.baseline, self.experimental, self.statistics, self.given, self.noise)

    @property
    def pipelines(self) -> tuple | None:
        """Both runs' recorded pipeline statistics, when both have them."""
        return self.pair.pipelines

    @cached_property
    def explanation(self) -> dict:
        """Why the experimental step time differs (the `diff/explain` route's
        answer, without the selections): `sentence`, `step`, `spikiness`,
        `contributors`, `waterfall`, `launch`, `note`, and `pipeline` (data
        wait, input-bound verdicts, the stage that changed most) when both
        runs have recorded pipeline statistics."""
        return plain(diff_explain_impl(self.pair))

    @cached_property
    def memory(self) -> dict:
        """Where the memory peak went (the `diff/memory` route's answer, without
        the selections): `sentence`, `message` (a run without memory events),
        `device`, `devices`."""
        return plain(diff_memory_impl(self.pair, self.snapshots))

    @property
    def memory_rows(self) -> pd.DataFrame:
        """The sentence's device's rows by module, without the lifetimes."""
        shown = next((d for d in self.memory["devices"] if d["device"] == self.memory["device"]), None)
        rows = shown["by_module"] if shown else []
        return pd.DataFrame([{k: v for k, v in r.items() if not k.endswith("_lifetimes")} for r in rows])

    @property
    def contributors(self) -> pd.DataFrame:
        """The explanation's contributors, ranked: significant first, then by |delta|."""
        rows = []
        for c in self.explanation["contributors"]:
            sig = c["significance"]
            rows.append({**{k: v for k, v in c.items() if k != "significance"}, "verdict": sig["verdict"],
                         "ci_low_us": sig["ci_low"], "ci_high_us": sig["ci_high"]})
        return pd.DataFrame(rows)

    @cached_property
    def overview_answer(self) -> dict:
        """The `diff/overview` route's answer (without the selections): `rows`
        (each with its `significance`, the step time's the explanation's), `note`."""
        return plain(diff_overview_impl(self.pair))

    @cached_property
    def overview(self) -> pd.DataFrame:
        return pd.DataFrame(self.overview_answer["rows"]).set_index("metric")

    @cached_property
    def modules(self) -> pd.DataFrame:
        return pd.DataFrame(list(T.walk(self.baseline.pieces(), self.experimental.pieces())))

    def level(self, path: str = "") -> pd.DataFrame:
        """The aligned children of the piece at `path`, with the accumulated
        trend (`acc_*` columns: running sums in execution order, µs)."""
        # Every child, however many: page through at the route's largest limit.
        limit = T.MODULES_MAX_LIMIT
        rows, trend, offset = [], {}, 0
        while True:
            out = plain(diff_modules_impl(self.pair, ModulesQuery(path=path, offset=offset, limit=limit)))
            rows += out["children"]
            for key, values in out["trend"].items():
                trend.setdefault(key, []).extend(values)
            offset += limit
            if offset >= out["children_total"]:
                break
        frame = pd.DataFrame(rows)
        for key, values in trend.items():
            frame[f"acc_{key}"] = values
        return frame

    @cached_property
    def operators(self) -> pd.DataFrame:
        return self.operators_at("")

    def operators_at(self, path: str) -> pd.DataFrame:
        """Operator deltas inside the piece at `path` ("" = everything)."""
        table = operator_table(self.pair, self.group_by, path)
        return tables.sort_table(table, f"delta_{self.operator_primary}", "desc", OPERATOR_KEYS).reset_index(drop=True)

    @cached_property
    def kernels(self) -> pd.DataFrame:
        return self.kernels_at("")

    def kernels_at(self, path: str) -> pd.DataFrame:
        """Kernel deltas of the kernels launched inside the piece at `path` ("" = everything)."""
        table = kernel_table(self.pair, path)
        return tables.sort_table(table, f"delta_{KERNEL_PRIMARY}", "desc", KERNEL_KEYS).reset_index(drop=True)

    def operator_page(self, limit: int) -> dict:
        """The `diff/operators` route's first page of `limit` rows in its
        default order (largest |delta| of the primary time first), each with
        the significance mark the route gives it, and `total`."""
        return plain(diff_operators_impl(self.pair, tables.TableQuery(group_by=self.group_by, limit=limit)))

    def kernel_page(self, limit: int) -> dict:
        """The `diff/kernels` route's first page of `limit` rows, as `operator_page`."""
        return plain(diff_kernels_impl(self.pair, tables.TableQuery(limit=limit)))

    @property
    def step_times(self) -> tuple[dict, dict]:
        """Each run's profiled steps (the `overview` route's `steps`: name,
        duration_us, ...; a group's pooled over its recordings) and, for a
        group, `recording_of_step`: {"steps": [...], "recording_of_step": array or None}."""
        return tuple({"steps": run.overview()["steps"], "recording_of_step": run.recording_of_step}
                     for run in (self.baseline, self.experimental))

    @property
    def step_samples_us(self) -> tuple:
        """((baseline µs, recordings), (experimental µs, recordings)): the
        per-step step times the explanation's step verdict is judged on
        (diff/step_basis.py:step_samples)."""
        return step_basis.step_samples(self.pair)

    @property
    def operator_primary(self) -> str:
        """The operators' primary column: device self time when either run has device activity."""
        return operator_primary(self.pair)


def compare(
    baseline,
    experimental,
    *,
    b_worker: str | None = None,
    b_span: str | None = None,
    e_worker: str | None = None,
    e_span: str | None = None,
    group_by: str = "name",
    baseline_samples: float | None = None,
    experimental_samples: float | None = None,
    baseline_tokens: float | None = None,
    experimental_tokens: float | None = None,
    noise: NoisePolicy | None = None,
) -> Comparison:
    """Load both sides (paths or TraceProcessors) and compare them; tables
    are computed when first read. Baseline and experimental may be the same
    trace, or two workers of one run. `*_samples` / `*_tokens`: a run's
    work per step where its pipeline statistics do not say (a trace-only
    run): when the runs' differ, the step verdict is per sample (token).
    `noise`: the between-run spread assumed for single recordings (None:
    `NoisePolicy.from_environment()`)."""
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")
    b, b_stats, b_notes = _side(baseline, b_worker, b_span)
    e, e_stats, e_notes = _side(experimental, e_worker, e_span)
    for name, value in (("baseline_samples", baseline_samples), ("experimental_samples", experimental_samples),
                        ("baseline_tokens", baseline_tokens), ("experimental_tokens", experimental_tokens)):
        if value is not None and not value > 0:
            raise ValueError(f"{name} must be a positive count per step, got {value!r}")
    given = (Given(baseline_samples, baseline_tokens), Given(experimental_samples, experimental_tokens))
    said = [f"{side}: {note}" for side, notes in (("baseline", b_notes), ("experimental", e_notes)) for note in notes]
    snapshots = (_snapshot_of(baseline), _snapshot_of(experimental))
    said += [f"{side}: {m}" for side, snap in (("baseline", snapshots[0]), ("experimental", snapshots[1]))
             for m in snap.messages]
    return Comparison(b, e, group_by, (b_stats, e_stats), given, said, noise, snapshots)
