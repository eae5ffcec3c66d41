"""What each kind of time is called: the kinds, names and phases that the
pieces (analysis/pieces.py), the step ledger (analysis/ledger.py) and the
module diff share. One place, so that a piece and the ledger part it is
judged by cannot drift apart by a spelling.
"""
from __future__ import annotations

# Kinds of pieces and of ledger parts.
STEP = "step"
DATA_LOADING = "data_loading"
MODULE = "module"
BACKWARD = "backward"
OPTIMIZER = "optimizer"
COMMUNICATION = "communication"
ANNOTATION = "annotation"
UNKNOWN = "unknown"
HOST = "host"  # ledger only: the window's time no operator covers
DEVICE = "device"  # ledger only: GPU work outlasting the host step
# Device ledger only (analysis/device_time.py):
DEVICE_IDLE = "device_idle"  # the step's time the device ran none of the step's work
DEVICE_OVERLAP = "device_overlap"  # work of several streams at once, counted once (negative)
PRE_WINDOW = "pre_window"  # device work launched before the profiled window

# A module part's phase: its own operators, or the backward they created.
FORWARD = "forward"
BACKWARD_PHASE = "backward"

# Names (and keys) of the pieces and parts that are not one event's name.
UNKNOWN_NAME = "unknown (not in any module)"  # operators / time outside every module
BACKWARD_NAME = "backward"  # a run of backward work inside one piece
UNATTRIBUTED_BACKWARD_NAME = "backward (unattributed)"  # backward no module's forward created
DATA_LOADING_NAME = "data loading"
PRE_WINDOW_NAME = "work launched before the profiled window"
WHOLE_TRACE_STEP = "all"  # the one step of a trace without ProfilerStep annotations, or all steps merged
