"""Run the recorded command as a child and wait for it to end, however it is
asked to stop.

Ctrl-C in a terminal reaches the whole foreground process group, the child
included: we only note it and keep waiting, so the child can finish what it
writes (diagnostic mode's end record, the recorder's last statistics)
instead of being killed a quarter of a second later, as `subprocess.call`
would. SIGTERM reaches only the process it is sent to: we pass it on to the
child and wait likewise.
"""
from __future__ import annotations

import signal
import subprocess
import threading


def run_child(command: list[str], env: dict) -> tuple[int, str]:
    """(the child's exit status, "SIGINT" / "SIGTERM" when one asked us to
    stop meanwhile, else ""). Raises FileNotFoundError as Popen does."""
    proc = subprocess.Popen(command, env=env)
    received: list[str] = []

    def on_signal(signum, frame):
        received.append(signal.Signals(signum).name)
        if signum == signal.SIGTERM:
            proc.send_signal(signum)

    main = threading.current_thread() is threading.main_thread()  # handlers live in the main thread only
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        status = proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status, (received[0] if received else "")
