"""The device's clock at step boundaries (issue 44): a CUDA event on the
current stream at every step's start and at the loop's end, no
synchronization inside the loop.

A loop that does not synchronize each step runs ahead of its device, and
with CUDA graphs a host step times only the launching: what the step cost
is the device's time for it. An event completes when the device has done
the work queued before it, so the elapsed time between a step's event and
the next boundary's is the device's time for that step's work (its waits
for the host included). Elapsed times are read once both events have
completed (polled with `query()` at later boundaries, never waited on);
at the loop's end the last event is waited on, so the drain of the queue
is measured and belongs to the steps, and the DataLoader's teardown, which
comes after, does not. Without CUDA in use (torch not imported, no device,
CUDA not initialised) nothing is recorded and nothing changes.
"""
from __future__ import annotations

import sys
from collections import deque

from ..formats.pipeline import DeviceStep


class DeviceClock:
    """Per loader, the open step's start event and the steps whose
    interval the device has not finished yet."""

    __slots__ = ("_cuda", "_open", "_pending")

    def __init__(self):
        self._cuda = None  # torch.cuda once it is in use
        self._open: dict[int, tuple[int, object]] = {}  # loader -> (step, its start event)
        self._pending: deque = deque()  # (step, loader, start event, end event), in order

    def _in_use(self):
        if self._cuda is None:
            torch = sys.modules.get("torch")
            cuda = getattr(torch, "cuda", None) if torch is not None else None
            try:
                # is_initialized() first: a flag, where is_available() asks the driver (each step, until in use).
                if cuda is not None and cuda.is_initialized() and cuda.is_available():
                    self._cuda = cuda
            except Exception:  # a broken CUDA install is no reason to stop the loop
                return None
        return self._cuda

    def step_started(self, step: int, loader: int) -> list[DeviceStep]:
        """A step opened: its event, the previous step's end; what completed."""
        cuda = self._in_use()
        if cuda is None:
            return []
        event = cuda.Event(enable_timing=True)
        event.record()
        previous = self._open.get(loader)
        if previous is not None:
            self._pending.append((previous[0], loader, previous[1], event))
        self._open[loader] = (step, event)
        return self._completed(wait=False)

    def loop_ended(self, loader: int) -> list[DeviceStep]:
        """The loader's loop ended: its last step ends here, waited for."""
        cuda = self._in_use()
        if cuda is None:
            return []
        opened = self._open.pop(loader, None)
        if opened is not None:
            event = cuda.Event(enable_timing=True)
            event.record()
            self._pending.append((opened[0], loader, opened[1], event))
        return self._completed(wait=True)

    def _completed(self, wait: bool) -> list[DeviceStep]:
        out = []
        while self._pending:
            step, loader, start, end = self._pending[0]
            if wait:
                end.synchronize()
            elif not end.query():
                break
            self._pending.popleft()
            out.append(DeviceStep(step=step, device_s=start.elapsed_time(end) / 1e3, loader=loader))
        return out
