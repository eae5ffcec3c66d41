"""How many CPUs this process may use. A leaf: any layer may import it."""
from __future__ import annotations

import os


def usable_cores() -> int:
    """CPUs this process may run on (its affinity: `taskset`, a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
