"""The one place that finds runs and asks for what they hold.

A run is found by name in a logdir (discovery, rescanned when a name is not
found), or is a group of recordings (its members' default traces read as
one `RecordingGroup`, their statistics and diagnostic results pooled). Every
artifact is asked of a store (`sources/store.py`) as a `Pending`, all of a
request's before any is read, so a diff's first request queues both sides
ahead of the prefetches and answers 409 once, not once per side.

The TensorBoard plugin uses it with background loads (a handler never waits
for a parse); the notebook API and the CLI (`compare.py`) use the same
provider with `blocking=True`, where asking waits for the load.

    provider = RunProvider("runs", make_loader())
    b, e, refs = provider.pair("baseline", "experimental")    # loaded runs
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Sequence, TypeVar

from ..analysis.diagnostic.group import pool_diagnostic
from ..analysis.group import RecordingGroup
from ..analysis.statistics.group import pool_statistics
from ..analysis.statistics.from_trace import steps_from_trace
from ..bounded_cache import BoundedCache
from ..errors import NotFound
from ..readers import PipelineTables
from .artifacts import Source
from .filesystem import stat_file
from .logdir import discover_runs
from .runs import RunInfo, TraceFile, default_traces, resolve, resolve_diagnostic, run_info
from .snapshots import run_snapshot
from .spans import span_labels
from .rank_index import RankIndex, RunRanks, max_ranks_from_env
from .store import LoadState, LoadStore, Pending, PendingAll

T = TypeVar("T")

# A rescan walks the logdir; data routes reuse a recent one.
RESCAN_INTERVAL_S = 2.0
FORCED_RESCAN_INTERVAL_S = 0.5
# The distributed route answers from a scan this old while it refreshes (`_runs_for_ranks`).
STALE_RANK_SCAN_S = 30.0
# Rank records kept by the store once loaded: a record's home is the rank
# roll-up (sources/rank_index.py), which the load hands it to; the store
# only queues the loads of ranks the roll-up lacks, so its capacity bounds
# nothing a run can have.
RANK_LOADS_KEPT = 256
MAX_STATISTICS = 64
# The groups of the last pair compared stay built (their recordings held
# beyond TB_PIPELINE_MAX_LOADED_TRACES): a pair of two groups of N needs 2N
# recordings at once, which the store alone would evict in turn.
MAX_GROUPS = 2
# Pooled pipeline statistics / diagnostic results of groups, kept for the
# last few asked: every tab and the explanation ask again for the same pool.
MAX_POOLED = 8
# `blocking` asks wait at most this long for one artifact.
BLOCKING_WAIT_S = 24 * 3600.0

Asked = Pending | PendingAll
logger = logging.getLogger(__name__)


def trace_ref(run: str, worker: str = "", span: str = "") -> dict:
    """How every answer names a run it read: run, worker and span ("" for a
    group of recordings, or for statistics and diagnostic results, which
    belong to the run)."""
    return {"run": run, "worker": worker, "span": span}


def group_state(members: Sequence[LoadState | None]) -> LoadState:
    """A group's load state: failed if a recording failed, loading while one
    loads, unloaded while one is; ready when all are."""
    known = [m for m in members if m is not None]
    for status in ("failed", "loading", "unloaded"):
        hit = next((m for m in known if m.status == status), None)
        if hit is not None:
            return LoadState(status, error=hit.error)
    return LoadState("ready", warnings=[w for m in known for w in m.warnings])


class RunProvider:
    def __init__(self, logdir: str, load: Callable[[Source], Any], max_ready: int = 8, blocking: bool = False,
                 max_ranks: int | None = None):
        self.logdir = logdir
        self._blocking = blocking
        self.max_ranks = max_ranks or max_ranks_from_env({})
        # Parses run in worker processes (sources/workers.py); the store's
        # threads only wait for them and map the result, two threads per
        # worker process (`TraceLoader.concurrency`) so a run's ranks load in
        # parallel. The store's queue serves the artifacts a data route asks
        # for before `runs`' background prefetches.
        self._trace_loader = load.loaders["trace"]  # type: ignore[attr-defined]
        parallel = self._trace_loader.concurrency
        self._traces = LoadStore(load, max_workers=parallel, max_ready=max_ready)
        # Ranks of distributed runs: their records, read from the rank roll-up
        # (the cache directory's, and what loads here return); the store
        # loads those it lacks, in parallel, and hands each to the roll-up.
        self._rank_index = RankIndex(getattr(getattr(self._trace_loader, "cache", None), "root", None) or None)
        self._ranks = LoadStore(self._learning(load), max_workers=parallel, max_ready=RANK_LOADS_KEPT)
        # Each run's ranks once all were read, with the scan and the rank
        # files they were read against: asked again over the same scan, or
        # over a rescan that found the same files, nothing can have changed.
        self._ranks_read: BoundedCache[str, tuple[object, list[TraceFile], RunRanks]] = BoundedCache(8)
        # Pipeline statistics: small tables, kept apart from the traces so
        # they do not count against TB_PIPELINE_MAX_LOADED_TRACES (the
        # explanation of a pair holds two traces and two statistics at once:
        # with a limit of 3 they would evict each other for ever).
        self._statistics = LoadStore(load, max_workers=1, max_ready=MAX_STATISTICS)
        self._scanned: dict[str, RunInfo] = {}
        self._scanned_at = self._scan_started = -1e9
        self._refreshing = False
        self._scan_lock = threading.Lock()
        self._groups: BoundedCache[tuple, RecordingGroup] = BoundedCache(MAX_GROUPS)
        self._pooled: BoundedCache[tuple, tuple] = BoundedCache(MAX_POOLED)

    def start_parsers(self) -> None:
        """Starts the parse worker processes now, not at the first parse."""
        pool = getattr(self._trace_loader, "pool", None)
        if pool is not None:
            pool.start()

    def start_loading(self) -> None:
        """Discovery and `listing`'s prefetch now, on a thread: the first
        parses begin while TensorBoard starts, not at the page's first
        request. A logdir that cannot be read says so when the page asks."""
        def discover() -> None:
            try:
                self.listing()
            except Exception:  # noqa: BLE001 - `runs` reports it to the page
                logger.debug("discovery at start failed", exc_info=True)

        threading.Thread(target=discover, name="tb_pipeline_discovery", daemon=True).start()

    def close(self) -> None:
        for store in (self._traces, self._ranks, self._statistics):
            store.close()

    # ---- discovery -------------------------------------------------------------

    def runs(self, max_age_s: float = RESCAN_INTERVAL_S) -> dict[str, RunInfo]:
        """The logdir's runs, from a scan at most `max_age_s` old; a rescan
        makes the stores forget artifacts that are gone."""
        with self._scan_lock:
            if time.monotonic() - self._scanned_at > max_age_s:
                started = time.monotonic()
                self._install(discover_runs(self.logdir), started)
            return self._scanned

    def _install(self, scanned: dict[str, RunInfo], started: float) -> None:
        """Takes a scan begun at `started` unless a later one is in (hold the lock)."""
        if started < self._scan_started:
            return
        self._scanned, self._scanned_at, self._scan_started = scanned, time.monotonic(), started
        infos = scanned.values()
        # Paths, not Sources: a logdir of 10,000 ranks would make 20,000 of them each scan.
        traces = {tf.path for info in infos for spans in info.traces.values() for tf in spans.values()}
        diagnostic = {p for info in infos for p in info.diagnostic_files}
        self._statistics.retain_only(Source("pipeline", info.path) for info in infos if info.pipeline_files)
        self._traces.retain_where(lambda src: src.path in (traces if src.kind == "trace" else diagnostic))
        self._ranks.retain_where(lambda src: src.path in traces)

    def _runs_for_ranks(self) -> dict[str, RunInfo]:
        """The scan the distributed route reads: a scan up to
        `STALE_RANK_SCAN_S` old is answered from at once while a fresh one
        runs in the background (the next ask reads it). A logdir of 10,000
        rank files takes a second to scan on a busy machine: waiting for it
        every `RESCAN_INTERVAL_S` would put that second on each ask."""
        with self._scan_lock:
            age = time.monotonic() - self._scanned_at
            if RESCAN_INTERVAL_S < age <= STALE_RANK_SCAN_S:
                if not self._refreshing:
                    self._refreshing = True
                    threading.Thread(target=self._refresh, name="tb_pipeline_rescan", daemon=True).start()
                return self._scanned
        return self.runs(RESCAN_INTERVAL_S)

    def _refresh(self) -> None:
        started = time.monotonic()
        try:
            scanned = discover_runs(self.logdir)
            with self._scan_lock:
                self._install(scanned, started)
        finally:
            self._refreshing = False

    def listing(self) -> tuple[dict[str, RunInfo], dict[str, LoadState], dict[str, dict], bool]:
        """Every run and the load state of its default trace (a group's: its
        recordings'), prefetching default traces in the listed order while the
        store has room: the UI opens the first two runs by default; the
        others stay `unloaded` until a data route asks. Then the labels
        the picker names spans by (by trace path; spans.py), and whether
        some are still being read."""
        runs = self.runs(0.0)
        states: dict[str, LoadState] = {}
        for name, tf in default_traces(runs):
            states[name] = self._traces.summary(Source("trace", tf.path), tf.size, tf.mtime, prefetch=True)
        labels, spans_loading = span_labels(runs, states, self._ranks)
        for name, info in runs.items():
            if info.recordings and not info.traces:
                states[name] = group_state([states.get(m) for m in info.recordings])
        return runs, states, labels, spans_loading

    def _lookup(self, find: Callable[[dict[str, RunInfo]], T]) -> T:
        """`find` over the recent scan; on NotFound once more over a fresh
        one (maybe written since). The forced interval keeps a client asking
        for unknown runs from walking the logdir each time."""
        try:
            return find(self.runs(RESCAN_INTERVAL_S))
        except NotFound:
            return find(self.runs(FORCED_RESCAN_INTERVAL_S))

    def resolve(self, run: str, worker: str = "", span: str = "") -> TraceFile:
        return self._lookup(lambda runs: resolve(runs, run, worker or None, span or None))

    def recordings(self, run: str) -> list[str]:
        """A group's recordings (empty for a plain run)."""
        return self._lookup(lambda runs: run_info(runs, run)).recordings

    # ---- asking ----------------------------------------------------------------

    def _ask(self, store: LoadStore, source: Source, identity: tuple[int | None, float], subject: str,
             gone: str, plural: bool = False) -> Pending:
        """Asks `store` for one artifact of this file version; a load it starts
        (or a queued prefetch of it) goes before every background prefetch.
        `identity`: (size, mtime) stat'ed for this request, so a file still
        being written is not served from the version the last scan saw."""
        size, mtime = identity
        if size is None:
            raise NotFound(gone)
        state = (store.wait(source, size, mtime, BLOCKING_WAIT_S) if self._blocking
                 else store.request(source, size, mtime))
        return Pending(state, subject, plural)

    def trace_file(self, path: str, subject: str | None = None) -> Pending:
        """One trace file by path, found or not by discovery."""
        who = subject or path
        return self._ask(self._traces, Source("trace", path), stat_file(path), who, f"the trace file of {who} is gone")

    def _trace(self, tf: TraceFile) -> Pending:
        return self.trace_file(tf.path, f"run {tf.run!r} (worker {tf.worker!r})")

    def side(self, run: str, worker: str = "", span: str = "") -> tuple[Asked, dict]:
        """One side of a comparison and its reference: a run's trace, or for
        a group of recordings (no worker or span asked) every recording's
        default trace, read as one `RecordingGroup`."""
        members = [] if worker or span else self.recordings(run)
        if not members:
            tf = self.resolve(run, worker, span)
            return self._trace(tf), tf.selection()
        files = [self.resolve(m) for m in members]
        key = tuple((tf.path, *stat_file(tf.path)) for tf in files)
        group = self._groups.get(key)
        if group is not None:
            # Built from these very file versions: its recordings stay with
            # it even when the store has evicted them for other runs.
            return PendingAll((), lambda _: group), trace_ref(run)
        names = [tf.run for tf in files]
        return (PendingAll(tuple(self._trace(tf) for tf in files),
                           lambda tps: self._groups.get_or_make(key, lambda: RecordingGroup(tps, names))),
                trace_ref(run))

    def pair(self, baseline: str, experimental: str, b_worker: str = "", b_span: str = "", e_worker: str = "",
             e_span: str = "") -> tuple[Any, Any, dict]:
        """Both sides, loaded, and the references a pair answer carries. Both
        are asked for before either answers 409."""
        b, b_ref = self.side(baseline, b_worker, b_span)
        e, e_ref = self.side(experimental, e_worker, e_span)
        return b.value(), e.value(), {"baseline": b_ref, "experimental": e_ref}

    def _members(self, run: str, members: list[str], ask: Callable[[str], T], what: str) -> tuple[T, ...]:
        """`ask` of every recording of group `run`, all before any answers; a
        recording without the data says so, naming the group."""
        try:
            return tuple(ask(m) for m in members)
        except NotFound as exc:
            raise NotFound(f"group {run!r} pools its recordings' {what}, and one has none: {exc}") from None

    def _pooling(self, pool: Callable, members: list[str]) -> Callable[[list], object]:
        """`pool(parts, members)`, computed once for the same loaded parts (the
        store's very objects: their identities are the key, and the entry holds
        them, so an identity is not reused while it is kept)."""
        def pooled(parts: list):
            key = (pool.__name__, tuple(members), tuple(map(id, parts)))
            return self._pooled.get_or_make(key, lambda: (parts, pool(parts, members)))[1]
        return pooled

    def diagnostic(self, run: str) -> Asked:
        """The run's diagnostic results; a group's, its recordings' pooled
        (analysis/diagnostic), each recording asked for before any answers."""
        members = self.recordings(run)
        if members:
            return PendingAll(self._members(run, members, self.diagnostic, "diagnostic results"),
                              self._pooling(pool_diagnostic, members))
        path = self._lookup(lambda runs: resolve_diagnostic(runs, run))
        # Stat'ed on every request: results being appended to are read again when they grow.
        return self._ask(self._traces, Source("diagnostic", path), stat_file(path),
                         f"the diagnostic results of run {run!r}", f"the diagnostic results of run {run!r} are gone",
                         plural=True)

    def snapshot(self, run: str):
        """The run's CUDA memory snapshot (sources/snapshots.py: `*.pickle` in its directory), read now."""
        info = self._lookup(lambda runs: run_info(runs, run))
        return run_snapshot(info.path)

    def statistics(self, run: str) -> Asked | None:
        """The run's recorded pipeline statistics, or None when it has none; a
        group's, its recordings' pooled, None unless every recording has them."""
        members = self.recordings(run)
        if members:
            parts = [self.statistics(m) for m in members]
            if any(p is None for p in parts):
                return None
            return PendingAll(tuple(parts), self._pooling(pool_statistics, members))
        info = self._lookup(lambda runs: run_info(runs, run))
        identity = info.statistics_identity() if info.pipeline_files else None
        if identity is None:
            return None
        return self._ask(self._statistics, Source("pipeline", info.path), identity,
                         f"the pipeline statistics of run {run!r}", "", plural=True)

    def pipeline(self, run: str) -> Asked:
        """The run's statistics; a run without any gets its split from its
        default trace's DataLoader annotations; a group, its recordings'
        (each as a run of its own) pooled."""
        members = self.recordings(run)
        if members:
            return PendingAll(self._members(run, members, self.pipeline, "pipeline statistics"),
                              self._pooling(pool_statistics, members))
        statistics = self.statistics(run)
        if statistics is not None:
            return statistics
        info = self._lookup(lambda runs: run_info(runs, run))
        if not info.traces:
            raise NotFound(f"run {run!r} has neither pipeline statistics nor a trace")
        return self._trace(self.resolve(run)).then(lambda tp: tp.memo("pipeline_tables", lambda: PipelineTables(
            source="trace", steps=steps_from_trace(tp.linked), warnings=list(tp.warnings))))

    def _learning(self, load: Callable[[Source], Any]) -> Callable[[Source], Any]:
        """`load`, whose rank records also go to the roll-up: kept there
        whatever the store evicts."""
        def load_rank(source: Source):
            record = load(source)
            self._rank_index.learn(source.path, record)
            return record
        return load_rank

    def ranks(self, run: str) -> RunRanks:
        """Every worker of a run (its last span) as a rank: the records the
        roll-up has, and a load asked for each one it lacks. Never waits
        (unless `blocking`) and never 409s: the route answers with the ranks
        ready and says how many are still loading."""
        try:
            runs = self._runs_for_ranks()
            first = resolve(runs, run)
        except NotFound:  # maybe written since: once more over a fresh scan
            runs = self.runs(FORCED_RESCAN_INTERVAL_S)
            first = resolve(runs, run)
        info = runs[first.run]
        done = self._ranks_read.get(first.run)
        if done is not None and done[0] is info.traces:
            return done[2]
        files = [next(reversed(spans.values())) for spans in info.traces.values()]
        # A rescan (every few seconds) makes new TraceFiles: the same files at
        # the same versions are the same ranks (a list compare, not 10,000 lookups).
        if done is not None and done[1] == files:
            self._ranks_read.put(first.run, (info.traces, files, done[2]))
            return done[2]
        kept = files[:self.max_ranks]
        out = RunRanks(first.run, [], len(files), 0, left_out=len(files) - len(kept), limit=self.max_ranks)
        records, directories = self._rank_index.lookup(kept)
        for tf, record in zip(kept, records):
            if record is None:
                source = Source("rank_summary", tf.path)
                state = (self._ranks.wait(source, tf.size, tf.mtime, BLOCKING_WAIT_S) if self._blocking
                         else self._ranks.request(source, tf.size, tf.mtime))
                if state.status == "failed":
                    out.failures.append((tf.worker, state.error or "unknown error"))
                    continue
                if state.status != "ready":
                    out.loading += 1
                    continue
                record = state.value
            out.ready.append((tf.worker, record))
        if out.loading == 0:  # all read: a good time to merge what the loads appended
            self._rank_index.compact_if_due(directories, info.trace_files())
            self._ranks_read.put(first.run, (info.traces, files, out))
        return out
