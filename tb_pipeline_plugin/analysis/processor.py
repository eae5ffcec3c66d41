"""One small facade over a loaded trace: decode once, link once, memoise views.

    tp = TraceProcessor.load("run/worker.123.pt.trace.json.gz")
    tp.overview(); tp.operators("name"); tp.kernels(); tp.modules(); tp.pieces()

Every per-run view the server, the diff engine, the CLI and notebooks use is
a method here, so a trace is never analysed twice and every caller sees the
same numbers.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ..trace import EventTable, load_trace
from ..trace.link import LinkedTrace, has_step_annotations, link
from .attribution import Attribution, attribute
from .backward_index import BackwardIndex, backward_index
from .compiled import compiled_modules
from .device_steps import device_steps
from .device_time import device_launches, device_ledger, launch_steps, launch_table, on_device_intervals
from .kernels import kernels
from .memory.peak import RunMemory, run_memory
from .launch import launch_health
from .per_step import kernel_steps, operator_steps
from .ledger import StepLedger, step_ledger
from .modules import module_tree
from .operators import operators, primary_column
from .overview import overview
from .pieces import PieceIndex, piece_index
from .timeline import TimelineIndex, timeline_index
from .views import Views, view


class TraceProcessor(Views):
    def __init__(self, table: EventTable, source: str = "", linked: LinkedTrace | None = None):
        """`linked`: the trace already linked (e.g. mapped back from a
        persisted parse); otherwise `table` is linked here."""
        self.source = source
        self.table = table
        self.linked: LinkedTrace = linked if linked is not None else link(table)
        super().__init__()

    @classmethod
    def load(cls, path: str, opener: Callable[[str], Any] | None = None) -> "TraceProcessor":
        """`opener(path)` returns a binary file object; the default opens
        local files (the server passes its filesystem layer for remote logdirs)."""
        return cls(load_trace(path, opener), source=path)

    @classmethod
    def from_linked(cls, linked: LinkedTrace, source: str = "") -> "TraceProcessor":
        return cls(linked.table, source=source, linked=linked)

    @property
    def warnings(self) -> list[str]:
        return self.table.warnings

    @property
    def has_device(self) -> bool:
        """The trace ran something on a device (kernel, memcpy, memset):
        the one definition every view and response uses."""
        return self.linked.has_device

    @property
    def has_steps(self) -> bool:
        """The trace has `ProfilerStep#N` annotations (else its one step is the whole trace)."""
        return has_step_annotations(self.linked.steps)

    @property
    def step_count(self) -> int:
        """Steps of the trace (one for a trace without ProfilerStep annotations)."""
        return len(self.linked.steps.name)

    # A single recording; analysis/group.py's RecordingGroup pools several.
    recordings = 1
    recording_of_step = None
    shown_recording = None

    @property
    def operator_primary(self) -> str:
        """The column operators are ranked by in this trace alone."""
        return primary_column(self.has_device)

    @view
    def overview(self, whole_window: bool = False) -> dict:
        """`whole_window=True`: every step taken as one window."""
        return overview(self.linked, whole_window)

    @view
    def operators(self, group_by: str = "name"):
        return operators(self.linked, group_by)

    @view
    def kernels(self):
        return kernels(self.linked)

    @view
    def modules(self) -> list[dict]:
        return module_tree(self.linked)

    @view
    def attribution(self) -> Attribution:
        """Each operator's step, part (module path, forward or backward) and
        the forward operator that created it, decided once: what the pieces,
        the ledger and the backward index read (analysis/attribution.py)."""
        return attribute(self.linked)

    @view
    def pieces(self) -> PieceIndex:
        """The run cut into comparable pieces (steps, data loading, modules,
        backward, optimizer, unknown): what the module diff aligns."""
        return piece_index(self.linked, self.attribution())

    @view
    def ledger(self) -> StepLedger:
        """Per step, where its time went (data loading, each module's forward
        and backward, optimizer, host time outside operators, ...): the
        samples behind the explanation and its significance."""
        return step_ledger(self.linked, self.attribution())

    @view
    def launch_health(self):
        """Per step: launch-to-kernel-start delays, device idle gaps, and the
        gaps the host caused (analysis/launch.py)."""
        return launch_health(self.linked)

    @view
    def operator_steps(self, group_by: str, column: str):
        """Per-step sums of one operator column (analysis/per_step.py)."""
        return operator_steps(self.linked, group_by, column)

    @view
    def kernel_steps(self):
        """Per-step kernel time by name (analysis/per_step.py)."""
        return kernel_steps(self.linked)

    @view
    def device_launches(self):
        """Every device activity with its step, part and launching operator (analysis/device_time.py)."""
        return device_launches(self.linked, self.attribution())

    @view
    def launch_table(self):
        """Device time by part, launching operator and kernel (analysis/device_time.py)."""
        return launch_table(self.linked, self.device_launches())

    @view
    def launch_steps(self):
        """Each step's device time by launching operator and part (analysis/device_time.py)."""
        return launch_steps(self.linked, self.device_launches())

    @view
    def compiled_modules(self) -> frozenset[str]:
        """Module paths inside which torch.compile's code ran (analysis/compiled.py)."""
        return compiled_modules(self.linked, self.attribution())

    @view
    def device_steps(self) -> pd.DataFrame:
        """Each profiled step on the device's clock: the interval of the work it launched (analysis/device_steps.py)."""
        return device_steps(self.linked)

    @view
    def device_ledger(self) -> StepLedger:
        """Per step, where its device time went: the device's counterpart of `ledger`."""
        return device_ledger(self.linked, self.device_launches())

    @view
    def device_interval_ledger(self) -> StepLedger:
        """`device_ledger` on the device's intervals: each step as long as the
        work it launched took the device (analysis/device_time.py:on_device_intervals)."""
        return on_device_intervals(self.device_ledger(), self.device_steps())

    @view
    def memory(self) -> RunMemory:
        """Each device's memory peak and what was alive at it (analysis/memory/peak.py)."""
        return run_memory(self.linked, self.attribution())

    @view
    def backward_index(self) -> BackwardIndex:
        """Backward operators by the start of the forward operator that
        created them: a module call's backward time (diff/modules)."""
        return backward_index(self.linked, self.attribution())

    @view
    def timeline_index(self) -> TimelineIndex:
        """Drawable events sorted for window queries (analysis/timeline.py)."""
        return timeline_index(self.linked)
