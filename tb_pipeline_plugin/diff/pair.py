"""`Pair`: one comparison of two runs, the twin of `TraceProcessor` for two.

A pair is the two loaded runs (each a `TraceProcessor` or a
`RecordingGroup`), their recorded pipeline statistics, the work per step the
user gave for each, and the noise policy, as one value. Every view of the
comparison is memoised on it, keyed one way (`view`: a name and the typed
arguments), so the overview, the explanation, the tables and the reports
read the same step basis (diff/step_basis.py), units and comparability from
one place, and a warm answer costs a lookup.

`pair_of` hands out the one `Pair` per comparison: weak on the runs (a
pair's views go with either run), bounded per pair of runs; the statistics
count by identity, and the pair holds them, so an identity is not reused
while the pair is kept.

`StatisticsPair` is the same for a comparison that reads no trace: two
runs' recorded pipeline statistics, or their diagnostic results, and the
noise policy, memoised the same way (`statistics_pair_of`).
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Callable, Hashable, TypeVar

from ..analysis.run import Run
from ..analysis.run_facts import run_facts
from ..bounded_cache import BoundedCache
from .comparability import differences, host_time_void
from .significance.method import NoisePolicy
from .step_basis import StepBasis, step_basis
from .units import Given, pair_units, run_counts

V = TypeVar("V")

NO_STATISTICS = (None, None)
NOT_GIVEN = (Given(), Given())
# Views and answers a pair keeps: a page asks the same answer again (a
# reload, back to a tab, the overview and the explanation after a sort).
VIEWS_PER_PAIR = 64
# Pairs kept per pair of runs (other statistics, counts or noise policies).
PAIRS_PER_RUNS = 8
# Statistics pairs kept in all (a page compares one or two pairs at a time; a reloaded file is a new pair).
STATISTICS_PAIRS = 32


@dataclass(frozen=True, eq=False)
class Pair:
    b: Run
    e: Run
    # Each run's recorded pipeline statistics (PipelineTables) or None.
    statistics: tuple = NO_STATISTICS
    # Each run's samples / tokens per step given by the user (diff/units.py:Given).
    given: tuple = NOT_GIVEN
    noise: NoisePolicy = field(default_factory=NoisePolicy)
    _views: BoundedCache = field(default_factory=lambda: BoundedCache(VIEWS_PER_PAIR), repr=False)

    def view(self, key: Hashable, make: Callable[[], V]) -> V:
        """The pair's value `key` (a name and the typed arguments it was made
        from), made once."""
        return self._views.get_or_make(key, make)

    @property
    def runs(self) -> tuple[Run, Run]:
        return self.b, self.e

    @property
    def pipelines(self) -> tuple | None:
        """Both runs' statistics when both have them (they give the step verdict), else None."""
        b, e = self.statistics
        return self.statistics if b is not None and e is not None else None

    @property
    def device_present(self) -> bool:
        """Either run has device activity: device time is the primary measure."""
        return self.b.has_device or self.e.has_device

    @property
    def recordings(self) -> tuple:
        """Each run's recording of every profiled step (None for one recording)."""
        return self.b.recording_of_step, self.e.recording_of_step

    @property
    def context(self) -> dict:
        """What every answer about the pair needs to know before a verdict:
        the unit the runs are compared in (diff/units.py), every difference
        between them (diff/comparability.py), and why host-time deltas of
        the profiled steps get no verdict, if they do not (`void`)."""
        def make() -> dict:
            units = pair_units(run_counts(self.statistics[0], self.given[0]),
                               run_counts(self.statistics[1], self.given[1]))
            items = differences(run_facts(self.b, self.statistics[0]), run_facts(self.e, self.statistics[1]), units)
            return {"units": units, "comparability": items, "void": host_time_void(items)}
        return self.view("context", make)

    @property
    def units(self) -> dict:
        return self.context["units"]

    @property
    def basis(self) -> StepBasis:
        """Which steps and which clock every number of this comparison rests on (diff/step_basis.py)."""
        return self.view("basis", lambda: step_basis(self))

    @property
    def compiled(self) -> dict[str, str]:
        """Module path -> the run(s) that ran it compiled ("baseline", "experimental", "both")."""
        def make() -> dict[str, str]:
            bc, ec = self.b.compiled_modules(), self.e.compiled_modules()
            return {p: "both" if p in bc and p in ec else "baseline" if p in bc else "experimental"
                    for p in bc | ec}
        return self.view("compiled", make)


_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared(first, second, name: str, make: Callable[[], BoundedCache]) -> BoundedCache:
    """The diff layer's one keying of what it keeps per pair of objects
    (two runs, two piece indexes): the cache `name` of `first` against
    `second`, made on first use, weak on both (it goes with either)."""
    with _SHARED_LOCK:
        per_first = _SHARED.get(first)
        if per_first is None:
            per_first = _SHARED[first] = weakref.WeakKeyDictionary()
        caches = per_first.get(second)
        if caches is None:
            caches = per_first[second] = {}
        cache = caches.get(name)
        if cache is None:
            cache = caches[name] = make()
        return cache


def pair_of(b: Run, e: Run, statistics: tuple = NO_STATISTICS, given: tuple = NOT_GIVEN,
            noise: NoisePolicy | None = None) -> Pair:
    """The one `Pair` of these runs, statistics, counts and noise policy
    (None: `NoisePolicy.from_environment()`, the TensorBoard process's
    setting)."""
    noise = NoisePolicy.from_environment() if noise is None else noise
    pairs = shared(b, e, "pairs", lambda: BoundedCache(PAIRS_PER_RUNS))
    key = (tuple(map(id, statistics)), tuple(given), noise)
    return pairs.get_or_make(key, lambda: Pair(b, e, tuple(statistics), tuple(given), noise))


@dataclass(frozen=True, eq=False)
class StatisticsPair:
    """Two runs' pipeline statistics (PipelineTables) or diagnostic results
    (DiagnosticRun), compared without their traces, and the noise policy;
    its views memoised as a `Pair`'s (`view`)."""

    b: object
    e: object
    noise: NoisePolicy = field(default_factory=NoisePolicy)
    _views: BoundedCache = field(default_factory=lambda: BoundedCache(VIEWS_PER_PAIR), repr=False)

    def view(self, key: Hashable, make: Callable[[], V]) -> V:
        return self._views.get_or_make(key, make)


_STATISTICS_PAIRS: BoundedCache = BoundedCache(STATISTICS_PAIRS)


def statistics_pair_of(b, e, noise: NoisePolicy | None = None) -> StatisticsPair:
    """The one `StatisticsPair` of these statistics (or results) and noise
    policy (None: the TensorBoard process's). Keyed by identity, as
    `pair_of` keys statistics: a source hands out the same object until its
    files change, and the pair holds both, so an identity is not reused
    while it is kept."""
    noise = NoisePolicy.from_environment() if noise is None else noise
    return _STATISTICS_PAIRS.get_or_make((id(b), id(e), noise), lambda: StatisticsPair(b, e, noise))
